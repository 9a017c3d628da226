// Shape and data movement: broadcast_in_dim (incl. size-1 expansion and unsorted dims),
// reshape, transpose, slice, dynamic_slice, dynamic_update_slice, concatenate, pad, iota.

func.func @broadcasts() {
  %x = stablehlo.constant dense<[[1], [2]]> : tensor<2x1xi32>
  %0 = stablehlo.broadcast_in_dim %x, dims = [0, 1] : (tensor<2x1xi32>) -> tensor<2x3xi32>
  %y = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %1 = stablehlo.broadcast_in_dim %y, dims = [2, 0] : (tensor<2x3xi32>) -> tensor<3x1x2xi32>
  %s = stablehlo.constant dense<7> : tensor<i32>
  %2 = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<i32>) -> tensor<2xi32>
  check.expect_eq_const %0, dense<[[1, 1, 1], [2, 2, 2]]> : tensor<2x3xi32>
  check.expect_eq_const %1, dense<[[[1, 4]], [[2, 5]], [[3, 6]]]> : tensor<3x1x2xi32>
  check.expect_eq_const %2, dense<7> : tensor<2xi32>
  func.return
}

// -----

func.func @reshape_transpose_slice() {
  %x = stablehlo.iota dim = 0 : tensor<6xi32>
  %0 = stablehlo.reshape %x : (tensor<6xi32>) -> tensor<2x3xi32>
  %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<2x3xi32>) -> tensor<3x2xi32>
  %2 = stablehlo.slice %x [1:6:2] : (tensor<6xi32>) -> tensor<3xi32>
  %3 = "stablehlo.slice"(%0) {start_indices = array<i64: 0, 1>, limit_indices = array<i64: 2, 3>, strides = array<i64: 1, 1>} : (tensor<2x3xi32>) -> tensor<2x2xi32>
  %4 = stablehlo.iota dim = 1 : tensor<2x3xf32>
  check.expect_eq_const %1, dense<[[0, 3], [1, 4], [2, 5]]> : tensor<3x2xi32>
  check.expect_eq_const %2, dense<[1, 3, 5]> : tensor<3xi32>
  check.expect_eq_const %3, dense<[[1, 2], [4, 5]]> : tensor<2x2xi32>
  check.expect_eq_const %4, dense<[[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]> : tensor<2x3xf32>
  func.return
}

// -----

func.func @dynamic_slices() {
  %x = stablehlo.constant dense<[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]> : tensor<3x4xi32>
  %i = stablehlo.constant dense<2> : tensor<i64>
  %j = stablehlo.constant dense<-1> : tensor<i64>
  %0 = stablehlo.dynamic_slice %x, %i, %j, sizes = [2, 2] : (tensor<3x4xi32>, tensor<i64>, tensor<i64>) -> tensor<2x2xi32>
  %u = stablehlo.constant dense<[[-1, -2]]> : tensor<1x2xi32>
  %1 = stablehlo.dynamic_update_slice %x, %u, %i, %i : (tensor<3x4xi32>, tensor<1x2xi32>, tensor<i64>, tensor<i64>) -> tensor<3x4xi32>
  check.expect_eq_const %0, dense<[[4, 5], [8, 9]]> : tensor<2x2xi32>
  check.expect_eq_const %1, dense<[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, -1, -2]]> : tensor<3x4xi32>
  func.return
}

// -----

func.func @concatenate_pad() {
  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %b = stablehlo.constant dense<[3]> : tensor<1xi32>
  %0 = stablehlo.concatenate %a, %b, dim = 0 : (tensor<2xi32>, tensor<1xi32>) -> tensor<3xi32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %1 = stablehlo.pad %0, %z, low = [1], high = [-1], interior = [1] : (tensor<3xi32>, tensor<i32>) -> tensor<5xi32>
  check.expect_eq_const %0, dense<[1, 2, 3]> : tensor<3xi32>
  check.expect_eq_const %1, dense<[0, 1, 0, 2, 0]> : tensor<5xi32>
  func.return
}
