// Collectives under interpreter.run_parallel (rows are replicas, columns partitions).

func.func @all_reduce(%operand : tensor<2xi64>) -> tensor<2xi64> {
  %result = "stablehlo.all_reduce"(%operand) ({
    ^bb0(%arg0: tensor<i64>, %arg1: tensor<i64>):
      %0 = stablehlo.add %arg0, %arg1 : tensor<i64>
      stablehlo.return %0 : tensor<i64>
  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xi64>) -> tensor<2xi64>
  return %result : tensor<2xi64>
}
func.func @main() {
  %inputs0 = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %inputs1 = stablehlo.constant dense<[3, 4]> : tensor<2xi64>
  %results:2 = "interpreter.run_parallel"(%inputs0, %inputs1) {
    programs=[[@all_reduce], [@all_reduce]]
  } : (tensor<2xi64>, tensor<2xi64>) -> (tensor<2xi64>, tensor<2xi64>)
  check.expect_eq_const %results#0, dense<[4, 6]> : tensor<2xi64>
  check.expect_eq_const %results#1, dense<[4, 6]> : tensor<2xi64>
  func.return
}

// -----

func.func @gather_permute(%x : tensor<1x2xi64>) -> (tensor<2x2xi64>, tensor<1x2xi64>, tensor<ui32>) {
  %g = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, use_global_device_ids} : (tensor<1x2xi64>) -> tensor<2x2xi64>
  %p = "stablehlo.collective_permute"(%x) {source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>} : (tensor<1x2xi64>) -> tensor<1x2xi64>
  %id = stablehlo.partition_id : tensor<ui32>
  return %g, %p, %id : tensor<2x2xi64>, tensor<1x2xi64>, tensor<ui32>
}
func.func @main() {
  %a = stablehlo.constant dense<[[1, 2]]> : tensor<1x2xi64>
  %b = stablehlo.constant dense<[[3, 4]]> : tensor<1x2xi64>
  %r:6 = "interpreter.run_parallel"(%a, %b) {programs = [[@gather_permute, @gather_permute]]} : (tensor<1x2xi64>, tensor<1x2xi64>) -> (tensor<2x2xi64>, tensor<1x2xi64>, tensor<ui32>, tensor<2x2xi64>, tensor<1x2xi64>, tensor<ui32>)
  check.expect_eq_const %r#0, dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  check.expect_eq_const %r#1, dense<[[3, 4]]> : tensor<1x2xi64>
  check.expect_eq_const %r#2, dense<0> : tensor<ui32>
  check.expect_eq_const %r#4, dense<[[1, 2]]> : tensor<1x2xi64>
  check.expect_eq_const %r#5, dense<1> : tensor<ui32>
  func.return
}

// -----

func.func @all_to_all(%x : tensor<2x2xi64>) -> tensor<1x4xi64> {
  %0 = "stablehlo.all_to_all"(%x) {split_dimension = 0 : i64, concat_dimension = 1 : i64, split_count = 2 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<2x2xi64>) -> tensor<1x4xi64>
  return %0 : tensor<1x4xi64>
}
func.func @main() {
  %a = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %b = stablehlo.constant dense<[[5, 6], [7, 8]]> : tensor<2x2xi64>
  %r:2 = "interpreter.run_parallel"(%a, %b) {programs = [[@all_to_all, @all_to_all]]} : (tensor<2x2xi64>, tensor<2x2xi64>) -> (tensor<1x4xi64>, tensor<1x4xi64>)
  check.expect_eq_const %r#0, dense<[[1, 2, 5, 6]]> : tensor<1x4xi64>
  check.expect_eq_const %r#1, dense<[[3, 4, 7, 8]]> : tensor<1x4xi64>
  func.return
}

// -----

// A variadic all_to_all splits, scatters and concatenates every operand alike.
func.func @two_all_to_all(%x : tensor<2x2xi64>, %y : tensor<2xi64>) -> (tensor<1x4xi64>, tensor<2xi64>) {
  %0:2 = "stablehlo.all_to_all"(%x, %y) {split_dimension = 0 : i64, concat_dimension = 0 : i64, split_count = 2 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<2x2xi64>, tensor<2xi64>) -> (tensor<2x2xi64>, tensor<2xi64>)
  %1 = stablehlo.reshape %0#0 : (tensor<2x2xi64>) -> tensor<1x4xi64>
  return %1, %0#1 : tensor<1x4xi64>, tensor<2xi64>
}
func.func @main() {
  %a = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %b = stablehlo.constant dense<[[5, 6], [7, 8]]> : tensor<2x2xi64>
  %c = stablehlo.constant dense<[10, 20]> : tensor<2xi64>
  %d = stablehlo.constant dense<[30, 40]> : tensor<2xi64>
  %r:4 = "interpreter.run_parallel"(%a, %c, %b, %d) {programs = [[@two_all_to_all, @two_all_to_all]]} : (tensor<2x2xi64>, tensor<2xi64>, tensor<2x2xi64>, tensor<2xi64>) -> (tensor<1x4xi64>, tensor<2xi64>, tensor<1x4xi64>, tensor<2xi64>)
  check.expect_eq_const %r#0, dense<[[1, 2, 5, 6]]> : tensor<1x4xi64>
  check.expect_eq_const %r#1, dense<[10, 30]> : tensor<2xi64>
  check.expect_eq_const %r#2, dense<[[3, 4, 7, 8]]> : tensor<1x4xi64>
  check.expect_eq_const %r#3, dense<[20, 40]> : tensor<2xi64>
  func.return
}
