module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x5xf32>, %arg1: tensor<5x3xf32>) -> (tensor<4x3xf32> {jax.result_info = "result[0]"}, tensor<4x5xf32> {jax.result_info = "result[1]"}) {
    %0 = call @inner(%arg0, %arg1) : (tensor<4x5xf32>, tensor<5x3xf32>) -> tensor<4x3xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %2 = stablehlo.multiply %arg0, %1 : tensor<4x5xf32>
    %3 = call @inner(%2, %arg1) : (tensor<4x5xf32>, tensor<5x3xf32>) -> tensor<4x3xf32>
    %4 = stablehlo.add %0, %3 : tensor<4x3xf32>
    %5 = stablehlo.sine %arg0 : tensor<4x5xf32>
    %6 = stablehlo.multiply %5, %arg0 : tensor<4x5xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_0) applies stablehlo.add across dimensions = [0, 1] : (tensor<4x5xf32>, tensor<f32>) -> tensor<f32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %9:2 = stablehlo.optimization_barrier %arg0, %8 : tensor<4x5xf32>, tensor<4x5xf32>
    %10 = stablehlo.sine %9#0 : tensor<4x5xf32>
    %11 = stablehlo.cosine %9#0 : tensor<4x5xf32>
    %12 = stablehlo.multiply %10, %9#1 : tensor<4x5xf32>
    %13 = stablehlo.multiply %9#1, %9#0 : tensor<4x5xf32>
    %14 = stablehlo.multiply %13, %11 : tensor<4x5xf32>
    %15 = stablehlo.add %12, %14 : tensor<4x5xf32>
    return %4, %15 : tensor<4x3xf32>, tensor<4x5xf32>
  }
  func.func private @inner(%arg0: tensor<4x5xf32>, %arg1: tensor<5x3xf32>) -> tensor<4x3xf32> {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x5xf32>, tensor<5x3xf32>) -> tensor<4x3xf32>
    %1 = stablehlo.tanh %0 : tensor<4x3xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %3 = stablehlo.add %1, %2 : tensor<4x3xf32>
    return %3 : tensor<4x3xf32>
  }
}
