// Dynamic-shape ops with constant shape operands, and map (our own cases, after the spec).

func.func @dynamic_iota_rows() {
  %shape = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
  %0 = stablehlo.dynamic_iota %shape, dim = 1 : (tensor<2xi64>) -> tensor<2x3xi32>
  check.expect_eq_const %0, dense<[[0, 1, 2], [0, 1, 2]]> : tensor<2x3xi32>
  func.return
}

// -----

func.func @dynamic_reshape_to_columns() {
  %x = stablehlo.constant dense<[10, 20, 30, 40, 50, 60]> : tensor<6xf32>
  %shape = stablehlo.constant dense<[3, 2]> : tensor<2xi32>
  %0 = stablehlo.dynamic_reshape %x, %shape : (tensor<6xf32>, tensor<2xi32>) -> tensor<3x2xf32>
  check.expect_eq_const %0, dense<[[10.0, 20.0], [30.0, 40.0], [50.0, 60.0]]> : tensor<3x2xf32>
  func.return
}

// -----

func.func @dynamic_broadcast_a_row() {
  %x = stablehlo.constant dense<[[7, -7]]> : tensor<1x2xi8>
  %dims = stablehlo.constant dense<[2, 3, 2]> : tensor<3xi64>
  %0 = "stablehlo.dynamic_broadcast_in_dim"(%x, %dims) {
    broadcast_dimensions = array<i64: 1, 2>
  } : (tensor<1x2xi8>, tensor<3xi64>) -> tensor<2x3x2xi8>
  check.expect_eq_const %0, dense<[[[7, -7], [7, -7], [7, -7]], [[7, -7], [7, -7], [7, -7]]]> : tensor<2x3x2xi8>
  func.return
}

// -----

func.func @dynamic_pad_interior_and_negative_edges() {
  %x = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi32>
  %value = stablehlo.constant dense<9> : tensor<i32>
  %low = stablehlo.constant dense<[-1]> : tensor<1xi64>
  %high = stablehlo.constant dense<[2]> : tensor<1xi64>
  %interior = stablehlo.constant dense<[1]> : tensor<1xi64>
  %0 = stablehlo.dynamic_pad %x, %value, %low, %high, %interior
    : (tensor<3xi32>, tensor<i32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<6xi32>
  check.expect_eq_const %0, dense<[9, 2, 9, 3, 9, 9]> : tensor<6xi32>
  func.return
}

// -----

func.func @dynamic_gather_pairs() {
  %x = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6], [7, 8, 9]]> : tensor<3x3xi32>
  %starts = stablehlo.constant dense<[[0, 1], [1, 0]]> : tensor<2x2xi32>
  %sizes = stablehlo.constant dense<[2, 2]> : tensor<2xi32>
  %0 = "stablehlo.dynamic_gather"(%x, %starts, %sizes) {
    dimension_numbers = #stablehlo.gather<
      offset_dims = [1, 2],
      start_index_map = [0, 1],
      index_vector_dim = 1>
  } : (tensor<3x3xi32>, tensor<2x2xi32>, tensor<2xi32>) -> tensor<2x2x2xi32>
  check.expect_eq_const %0, dense<[[[2, 3], [5, 6]], [[4, 5], [7, 8]]]> : tensor<2x2x2xi32>
  func.return
}

// -----

func.func @dynamic_conv_padded_sum() {
  %lhs = stablehlo.constant dense<[[[1.0], [2.0], [3.0]]]> : tensor<1x3x1xf32>
  %rhs = stablehlo.constant dense<1.0> : tensor<3x1x1xf32>
  %padding = stablehlo.constant dense<[[1, 1]]> : tensor<1x2xi64>
  %0 = "stablehlo.dynamic_conv"(%lhs, %rhs, %padding) {
    dimension_numbers = #stablehlo.conv<[b, 0, f]x[0, i, o]->[b, 0, f]>,
    batch_group_count = 1 : i64,
    feature_group_count = 1 : i64
  } : (tensor<1x3x1xf32>, tensor<3x1x1xf32>, tensor<1x2xi64>) -> tensor<1x3x1xf32>
  check.expect_eq_const %0, dense<[[[3.0], [6.0], [5.0]]]> : tensor<1x3x1xf32>
  func.return
}

// -----

func.func @map_a_two_operand_region() {
  %a = stablehlo.constant dense<[[1.0, -2.0], [3.5, 0.0]]> : tensor<2x2xf32>
  %b = stablehlo.constant dense<[[4.0, 4.0], [-1.0, 2.0]]> : tensor<2x2xf32>
  %0 = "stablehlo.map"(%a, %b) ({
    ^bb0(%x: tensor<f32>, %y: tensor<f32>):
      %m = stablehlo.maximum %x, %y : tensor<f32>
      %s = stablehlo.subtract %m, %x : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {
    dimensions = array<i64: 0, 1>
  } : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  check.expect_eq_const %0, dense<[[3.0, 6.0], [0.0, 2.0]]> : tensor<2x2xf32>
  func.return
}
