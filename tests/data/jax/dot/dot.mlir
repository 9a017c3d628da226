module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x16xf32>, %arg1: tensor<16x4xf32>, %arg2: tensor<16xf32>, %arg3: tensor<3x5x6xf32>, %arg4: tensor<3x6x4xf32>, %arg5: tensor<4x3x5xf32>, %arg6: tensor<3x5x6xf32>, %arg7: tensor<4x6xi32>, %arg8: tensor<6x3xi32>, %arg9: tensor<8x16xbf16>, %arg10: tensor<16x4xbf16>) -> (tensor<8x4xf32> {jax.result_info = "result[0]"}, tensor<8xf32> {jax.result_info = "result[1]"}, tensor<f32> {jax.result_info = "result[2]"}, tensor<3x5x4xf32> {jax.result_info = "result[3]"}, tensor<4x6xf32> {jax.result_info = "result[4]"}, tensor<3x5x4xf32> {jax.result_info = "result[5]"}, tensor<3x4x6xf32> {jax.result_info = "result[6]"}, tensor<4x3xi32> {jax.result_info = "result[7]"}, tensor<8x4xf32> {jax.result_info = "result[8]"}, tensor<8x4xbf16> {jax.result_info = "result[9]"}, tensor<4x5xf32> {jax.result_info = "result[10]"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    %1 = stablehlo.dot_general %arg0, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8xf32>
    %2 = stablehlo.dot_general %arg2, %arg2, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16xf32>, tensor<16xf32>) -> tensor<f32>
    %3 = stablehlo.dot_general %arg3, %arg4, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<3x5x6xf32>, tensor<3x6x4xf32>) -> tensor<3x5x4xf32>
    %4 = stablehlo.dot_general %arg5, %arg6, contracting_dims = [1, 2] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<4x3x5xf32>, tensor<3x5x6xf32>) -> tensor<4x6xf32>
    %5 = stablehlo.dot_general %arg4, %arg3, batching_dims = [0] x [0], contracting_dims = [1] x [2], precision = [DEFAULT, DEFAULT] : (tensor<3x6x4xf32>, tensor<3x5x6xf32>) -> tensor<3x4x5xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %6 = stablehlo.dot_general %5, %cst, contracting_dims = [] x [], precision = [DEFAULT, DEFAULT] : (tensor<3x4x5xf32>, tensor<f32>) -> tensor<3x4x5xf32>
    %7 = stablehlo.transpose %6, dims = [0, 2, 1] : (tensor<3x4x5xf32>) -> tensor<3x5x4xf32>
    %8 = stablehlo.dot_general %arg5, %arg6, batching_dims = [1] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x3x5xf32>, tensor<3x5x6xf32>) -> tensor<3x4x6xf32>
    %9 = stablehlo.dot_general %arg7, %arg8, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x6xi32>, tensor<6x3xi32>) -> tensor<4x3xi32>
    %10 = stablehlo.dot_general %arg9, %arg10, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x16xbf16>, tensor<16x4xbf16>) -> tensor<8x4xf32>
    %11 = stablehlo.dot_general %arg9, %arg10, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x16xbf16>, tensor<16x4xbf16>) -> tensor<8x4xbf16>
    %12 = stablehlo.slice %arg2 [0:4] : (tensor<16xf32>) -> tensor<4xf32>
    %13 = stablehlo.slice %arg2 [0:5] : (tensor<16xf32>) -> tensor<5xf32>
    %14 = stablehlo.broadcast_in_dim %12, dims = [0] : (tensor<4xf32>) -> tensor<4x1xf32>
    %15 = stablehlo.broadcast_in_dim %13, dims = [1] : (tensor<5xf32>) -> tensor<1x5xf32>
    %16 = stablehlo.broadcast_in_dim %14, dims = [0, 1] : (tensor<4x1xf32>) -> tensor<4x5xf32>
    %17 = stablehlo.broadcast_in_dim %15, dims = [0, 1] : (tensor<1x5xf32>) -> tensor<4x5xf32>
    %18 = stablehlo.multiply %16, %17 : tensor<4x5xf32>
    return %0, %1, %2, %3, %4, %7, %8, %9, %10, %11, %18 : tensor<8x4xf32>, tensor<8xf32>, tensor<f32>, tensor<3x5x4xf32>, tensor<4x6xf32>, tensor<3x5x4xf32>, tensor<3x4x6xf32>, tensor<4x3xi32>, tensor<8x4xf32>, tensor<8x4xbf16>, tensor<4x5xf32>
  }
}
