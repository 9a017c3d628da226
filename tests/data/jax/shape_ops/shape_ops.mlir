module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x6xf32>, %arg1: tensor<6xf32>) -> (tensor<3x4x6xf32> {jax.result_info = "result[0]"}, tensor<6x5xf32> {jax.result_info = "result[1]"}, tensor<3x8xf32> {jax.result_info = "result[2]"}, tensor<6x3x4xf32> {jax.result_info = "result[3]"}, tensor<4x6xf32> {jax.result_info = "result[4]"}, tensor<4x6xf32> {jax.result_info = "result[5]"}, tensor<9x6xf32> {jax.result_info = "result[6]"}, tensor<2x2xf32> {jax.result_info = "result[7]"}, tensor<2x3xf32> {jax.result_info = "result[8]"}, tensor<1x6xf32> {jax.result_info = "result[9]"}) {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [2] : (tensor<6xf32>) -> tensor<3x4x6xf32>
    %1 = stablehlo.broadcast_in_dim %arg1, dims = [0] : (tensor<6xf32>) -> tensor<6x5xf32>
    %2 = stablehlo.reshape %arg0 : (tensor<4x6xf32>) -> tensor<2x12xf32>
    %3 = stablehlo.reshape %2 : (tensor<2x12xf32>) -> tensor<3x8xf32>
    %4 = stablehlo.transpose %0, dims = [2, 0, 1] : (tensor<3x4x6xf32>) -> tensor<6x3x4xf32>
    %5 = call @_flip(%arg0) : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %6 = call @_flip_0(%arg0) : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x6xf32>
    %8 = stablehlo.multiply %arg0, %7 : tensor<4x6xf32>
    %9 = stablehlo.slice %arg0 [0:1, 0:6] : (tensor<4x6xf32>) -> tensor<1x6xf32>
    %10 = stablehlo.concatenate %arg0, %8, %9, dim = 0 : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<1x6xf32>) -> tensor<9x6xf32>
    %11 = stablehlo.slice %arg0 [1:4:2, 0:6:3] : (tensor<4x6xf32>) -> tensor<2x2xf32>
    %12 = stablehlo.slice %arg0 [0:4:3, 1:6:2] : (tensor<4x6xf32>) -> tensor<2x3xf32>
    %13 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<6xf32>) -> tensor<1x6xf32>
    %14 = stablehlo.broadcast_in_dim %13, dims = [0, 2] : (tensor<1x6xf32>) -> tensor<1x1x6xf32>
    %15 = stablehlo.reshape %14 : (tensor<1x1x6xf32>) -> tensor<1x6xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<3x4x6xf32>
    %17 = stablehlo.add %0, %16 : tensor<3x4x6xf32>
    return %17, %1, %3, %4, %5, %6, %10, %11, %12, %15 : tensor<3x4x6xf32>, tensor<6x5xf32>, tensor<3x8xf32>, tensor<6x3x4xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<9x6xf32>, tensor<2x2xf32>, tensor<2x3xf32>, tensor<1x6xf32>
  }
  func.func private @_flip(%arg0: tensor<4x6xf32>) -> tensor<4x6xf32> {
    %0 = stablehlo.reverse %arg0, dims = [0, 1] : tensor<4x6xf32>
    return %0 : tensor<4x6xf32>
  }
  func.func private @_flip_0(%arg0: tensor<4x6xf32>) -> tensor<4x6xf32> {
    %0 = stablehlo.reverse %arg0, dims = [1] : tensor<4x6xf32>
    return %0 : tensor<4x6xf32>
  }
}
