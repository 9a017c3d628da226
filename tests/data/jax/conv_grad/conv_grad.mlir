module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x7x7x4xf32>, %arg1: tensor<3x3x4x6xf32>, %arg2: tensor<3x3x2x4xf32>) -> (tensor<2x7x7x4xf32> {jax.result_info = "result[0]"}, tensor<3x3x4x6xf32> {jax.result_info = "result[1]"}, tensor<3x3x2x4xf32> {jax.result_info = "result[2]"}) {
    %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x7x7x4xf32>, tensor<3x3x4x6xf32>) -> tensor<2x4x4x6xf32>
    %1 = stablehlo.convolution(%arg0, %arg2) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x7x7x4xf32>, tensor<3x3x2x4xf32>) -> tensor<2x7x7x4xf32>
    %2 = stablehlo.tanh %0 : tensor<2x4x4x6xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x4x4x6xf32>
    %4 = stablehlo.subtract %3, %2 : tensor<2x4x4x6xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.reduce(%2 init: %cst_0) applies stablehlo.add across dimensions = [0, 1, 2, 3] : (tensor<2x4x4x6xf32>, tensor<f32>) -> tensor<f32>
    %6 = stablehlo.multiply %1, %1 : tensor<2x7x7x4xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_1) applies stablehlo.add across dimensions = [0, 1, 2, 3] : (tensor<2x7x7x4xf32>, tensor<f32>) -> tensor<f32>
    %8 = stablehlo.add %5, %7 : tensor<f32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<2x7x7x4xf32>
    %10 = stablehlo.multiply %1, %9 : tensor<2x7x7x4xf32>
    %11 = stablehlo.multiply %9, %1 : tensor<2x7x7x4xf32>
    %12 = stablehlo.add %10, %11 : tensor<2x7x7x4xf32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<2x4x4x6xf32>
    %14 = stablehlo.multiply %13, %4 : tensor<2x4x4x6xf32>
    %15 = stablehlo.multiply %14, %2 : tensor<2x4x4x6xf32>
    %16 = stablehlo.add %14, %15 : tensor<2x4x4x6xf32>
    %17 = stablehlo.convolution(%arg0, %12) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 2 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x7x7x4xf32>, tensor<2x7x7x4xf32>) -> tensor<3x3x2x4xf32>
    %18 = stablehlo.reshape %arg2 : (tensor<3x3x2x4xf32>) -> tensor<3x3x2x2x2xf32>
    %19 = stablehlo.transpose %18, dims = [0, 1, 3, 2, 4] : (tensor<3x3x2x2x2xf32>) -> tensor<3x3x2x2x2xf32>
    %20 = stablehlo.reshape %19 : (tensor<3x3x2x2x2xf32>) -> tensor<3x3x4x2xf32>
    %21 = stablehlo.reverse %20, dims = [0, 1] : tensor<3x3x4x2xf32>
    %22 = stablehlo.convolution(%12, %21) dim_numbers = [b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x7x7x4xf32>, tensor<3x3x4x2xf32>) -> tensor<2x7x7x4xf32>
    %23 = stablehlo.convolution(%arg0, %16) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [2, 2], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x7x7x4xf32>, tensor<2x4x4x6xf32>) -> tensor<3x3x4x6xf32>
    %24 = stablehlo.reverse %arg1, dims = [0, 1] : tensor<3x3x4x6xf32>
    %25 = stablehlo.convolution(%16, %24) dim_numbers = [b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [2, 2], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x4x4x6xf32>, tensor<3x3x4x6xf32>) -> tensor<2x7x7x4xf32>
    %26 = stablehlo.add %22, %25 : tensor<2x7x7x4xf32>
    return %26, %23, %17 : tensor<2x7x7x4xf32>, tensor<3x3x4x6xf32>, tensor<3x3x2x4xf32>
  }
}
