// Reductions, windows, sort, gather, scatter, dot_general, convolution.

func.func @reduces() {
  %x = stablehlo.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
  %m = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %1 = "stablehlo.reduce"(%x, %m) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %r = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %r : tensor<f32>
  }) {dimensions = array<i64: 0>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<3xf32>
  %2 = "stablehlo.reduce_window"(%x, %z) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %r = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %r : tensor<f32>
  }) {window_dimensions = array<i64: 1, 2>, padding = dense<[[0, 0], [1, 0]]> : tensor<2x2xi64>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  check.expect_eq_const %0, dense<[6.0, 15.0]> : tensor<2xf32>
  check.expect_eq_const %1, dense<[4.0, 5.0, 6.0]> : tensor<3xf32>
  check.expect_eq_const %2, dense<[[1.0, 3.0, 5.0], [4.0, 9.0, 11.0]]> : tensor<2x3xf32>
  func.return
}

// -----

func.func @argmax_sort() {
  %x = stablehlo.constant dense<[3.0, 1.0, 2.0]> : tensor<3xf32>
  %i = stablehlo.iota dim = 0 : tensor<3xi32>
  %s:2 = "stablehlo.sort"(%x, %i) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>):
    %lt = stablehlo.compare  LT, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<3xf32>, tensor<3xi32>) -> (tensor<3xf32>, tensor<3xi32>)
  %v, %k = chlo.top_k(%x, k = 2) : tensor<3xf32> -> (tensor<2xf32>, tensor<2xi32>)
  check.expect_eq_const %s#0, dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  check.expect_eq_const %s#1, dense<[1, 2, 0]> : tensor<3xi32>
  check.expect_eq_const %v, dense<[3.0, 2.0]> : tensor<2xf32>
  check.expect_eq_const %k, dense<[0, 2]> : tensor<2xi32>
  func.return
}

// -----

func.func @gather_scatter() {
  %x = stablehlo.constant dense<[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]> : tensor<3x2xf32>
  %idx = stablehlo.constant dense<[[2], [0]]> : tensor<2x1xi32>
  %0 = "stablehlo.gather"(%x, %idx) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 2>}> : (tensor<3x2xf32>, tensor<2x1xi32>) -> tensor<2x2xf32>
  %upd = stablehlo.constant dense<[[10.0, 10.0], [20.0, 20.0]]> : tensor<2x2xf32>
  %1 = "stablehlo.scatter"(%x, %idx, %upd) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %r = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %r : tensor<f32>
  }) : (tensor<3x2xf32>, tensor<2x1xi32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  check.expect_eq_const %0, dense<[[4.0, 5.0], [0.0, 1.0]]> : tensor<2x2xf32>
  check.expect_eq_const %1, dense<[[20.0, 21.0], [2.0, 3.0], [14.0, 15.0]]> : tensor<3x2xf32>
  func.return
}

// -----

func.func @dot_and_conv() {
  %a = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = stablehlo.constant dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %1 = "stablehlo.dot_general"(%a, %b) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2xf32>
  %img = stablehlo.constant dense<[[[[1.0], [2.0], [3.0]]]]> : tensor<1x1x3x1xf32>
  %k = stablehlo.constant dense<[[[[1.0]], [[1.0]]]]> : tensor<1x2x1x1xf32>
  %2 = stablehlo.convolution(%img, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x1x3x1xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x2x1xf32>
  check.expect_eq_const %0, dense<[[19.0, 22.0], [43.0, 50.0]]> : tensor<2x2xf32>
  check.expect_eq_const %1, dense<[17.0, 53.0]> : tensor<2xf32>
  check.expect_eq_const %2, dense<[[[[3.0], [5.0]]]]> : tensor<1x1x2x1xf32>
  func.return
}
