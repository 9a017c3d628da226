// interpreter.run_parallel with a different program per device (rows are replicas, columns
// partitions; operands and results in row-major order) and interpreter.probe with
// check.expect_serialized_eq.

func.func @sum(%x : tensor<2xi64>) -> tensor<2xi64> {
  %0 = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %s = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %s : tensor<i64>
  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xi64>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}
func.func @scaled_sum(%x : tensor<2xi64>) -> tensor<2xi64> {
  %ten = stablehlo.constant dense<10> : tensor<2xi64>
  %y = stablehlo.multiply %x, %ten : tensor<2xi64>
  %0 = "stablehlo.all_reduce"(%y) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %s = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %s : tensor<i64>
  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xi64>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}
func.func @main() {
  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %b = stablehlo.constant dense<[3, 4]> : tensor<2xi64>
  %c = stablehlo.constant dense<[5, 6]> : tensor<2xi64>
  %d = stablehlo.constant dense<[7, 8]> : tensor<2xi64>
  %r:4 = "interpreter.run_parallel"(%a, %b, %c, %d) {
    programs = [[@sum, @scaled_sum], [@scaled_sum, @sum]]
  } : (tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> (tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>)
  check.expect_eq_const %r#0, dense<[51, 62]> : tensor<2xi64>
  check.expect_eq_const %r#1, dense<[37, 48]> : tensor<2xi64>
  check.expect_eq_const %r#2, dense<[51, 62]> : tensor<2xi64>
  check.expect_eq_const %r#3, dense<[37, 48]> : tensor<2xi64>
  func.return
}

// -----

func.func @sender(%x : tensor<2xf32>) -> tensor<2xf32> {
  %0 = "stablehlo.collective_permute"(%x) {source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func @receiver() -> (tensor<2xf32>, tensor<ui32>) {
  %z = stablehlo.constant dense<0.0> : tensor<2xf32>
  %0 = "stablehlo.collective_permute"(%z) {source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<2xf32>) -> tensor<2xf32>
  %id = stablehlo.partition_id : tensor<ui32>
  return %0, %id : tensor<2xf32>, tensor<ui32>
}
func.func @main() {
  %x = stablehlo.constant dense<[1.5, -2.0]> : tensor<2xf32>
  %r:3 = "interpreter.run_parallel"(%x) {programs = [[@sender, @receiver]]} : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<ui32>)
  check.expect_eq_const %r#0, dense<0.0> : tensor<2xf32>
  check.expect_eq_const %r#1, dense<[1.5, -2.0]> : tensor<2xf32>
  check.expect_eq_const %r#2, dense<1> : tensor<ui32>
  check.expect_eq %r#1, %x : tensor<2xf32>
  func.return
}

// -----

func.func @probes() {
  %0 = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi64>
  %1 = interpreter.probe %0, probe_id = "doubled" : tensor<3xi64>
  %2 = stablehlo.add %1, %1 : tensor<3xi64>
  %3 = interpreter.probe %2, probe_id = "doubled" : tensor<3xi64>
  check.expect_serialized_eq %0, probe_id = "doubled" : tensor<3xi64>
  check.expect_serialized_eq %2, probe_id = "doubled", iter = 1 : tensor<3xi64>
  check.expect_eq_const %3, dense<[2, 4, 6]> : tensor<3xi64>
  func.return
}
