module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x5xf32>) -> (tensor<10x15xf32> {jax.result_info = "result[0]"}, tensor<2x9xf32> {jax.result_info = "result[1]"}, tensor<6x7xf32> {jax.result_info = "result[2]"}, tensor<7x8xf32> {jax.result_info = "result[3]"}, tensor<10xi32> {jax.result_info = "result[4]"}, tensor<12xf32> {jax.result_info = "result[5]"}, tensor<3x4xi32> {jax.result_info = "result[6]"}, tensor<3x4xf32> {jax.result_info = "result[7]"}) {
    %cst = stablehlo.constant dense<-9.000000e+00> : tensor<f32>
    %0 = stablehlo.pad %arg0, %cst, low = [1, -1], high = [2, 3], interior = [1, 2] : (tensor<4x5xf32>, tensor<f32>) -> tensor<10x15xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.pad %arg0, %cst_0, low = [-1, 2], high = [-1, -2], interior = [0, 1] : (tensor<4x5xf32>, tensor<f32>) -> tensor<2x9xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %2 = call @_pad(%arg0, %c) : (tensor<4x5xf32>, tensor<i32>) -> tensor<6x7xf32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %3 = call @_pad_0(%arg0, %c_1) : (tensor<4x5xf32>, tensor<i32>) -> tensor<7x8xf32>
    %4 = stablehlo.iota dim = 0 : tensor<10xi32>
    %5 = stablehlo.iota dim = 0 : tensor<12xf32>
    %cst_2 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<12xf32>
    %7 = stablehlo.multiply %6, %5 : tensor<12xf32>
    %cst_3 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<12xf32>
    %9 = stablehlo.add %8, %7 : tensor<12xf32>
    %10 = stablehlo.iota dim = 1 : tensor<3x4xi32>
    %11 = stablehlo.iota dim = 0 : tensor<3x4xf32>
    return %0, %1, %2, %3, %4, %9, %10, %11 : tensor<10x15xf32>, tensor<2x9xf32>, tensor<6x7xf32>, tensor<7x8xf32>, tensor<10xi32>, tensor<12xf32>, tensor<3x4xi32>, tensor<3x4xf32>
  }
  func.func private @_pad(%arg0: tensor<4x5xf32>, %arg1: tensor<i32>) -> tensor<6x7xf32> {
    %0 = stablehlo.slice %arg0 [0:1, 0:5] : (tensor<4x5xf32>) -> tensor<1x5xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0, 2] : (tensor<1x5xf32>) -> tensor<1x1x5xf32>
    %2 = stablehlo.reshape %1 : (tensor<1x1x5xf32>) -> tensor<1x5xf32>
    %3 = stablehlo.slice %arg0 [3:4, 0:5] : (tensor<4x5xf32>) -> tensor<1x5xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 2] : (tensor<1x5xf32>) -> tensor<1x1x5xf32>
    %5 = stablehlo.reshape %4 : (tensor<1x1x5xf32>) -> tensor<1x5xf32>
    %6 = stablehlo.concatenate %2, %arg0, %5, dim = 0 : (tensor<1x5xf32>, tensor<4x5xf32>, tensor<1x5xf32>) -> tensor<6x5xf32>
    %7 = stablehlo.slice %6 [0:6, 0:1] : (tensor<6x5xf32>) -> tensor<6x1xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<6x1xf32>) -> tensor<6x1x2xf32>
    %9 = stablehlo.reshape %8 : (tensor<6x1x2xf32>) -> tensor<6x2xf32>
    %10 = stablehlo.slice %6 [0:6, 4:5] : (tensor<6x5xf32>) -> tensor<6x1xf32>
    %11 = stablehlo.broadcast_in_dim %10, dims = [0, 1] : (tensor<6x1xf32>) -> tensor<6x1x0xf32>
    %12 = stablehlo.reshape %11 : (tensor<6x1x0xf32>) -> tensor<6x0xf32>
    %13 = stablehlo.concatenate %9, %6, %12, dim = 1 : (tensor<6x2xf32>, tensor<6x5xf32>, tensor<6x0xf32>) -> tensor<6x7xf32>
    return %13 : tensor<6x7xf32>
  }
  func.func private @_pad_0(%arg0: tensor<4x5xf32>, %arg1: tensor<i32>) -> tensor<7x8xf32> {
    %0 = stablehlo.slice %arg0 [0:1, 0:5] : (tensor<4x5xf32>) -> tensor<1x5xf32>
    %1 = stablehlo.slice %arg0 [1:3, 0:5] : (tensor<4x5xf32>) -> tensor<2x5xf32>
    %2 = call @_flip(%1) : (tensor<2x5xf32>) -> tensor<2x5xf32>
    %3 = stablehlo.concatenate %2, %arg0, dim = 0 : (tensor<2x5xf32>, tensor<4x5xf32>) -> tensor<6x5xf32>
    %4 = stablehlo.slice %3 [5:6, 0:5] : (tensor<6x5xf32>) -> tensor<1x5xf32>
    %5 = stablehlo.slice %3 [4:5, 0:5] : (tensor<6x5xf32>) -> tensor<1x5xf32>
    %6 = call @_flip_1(%5) : (tensor<1x5xf32>) -> tensor<1x5xf32>
    %7 = stablehlo.concatenate %3, %6, dim = 0 : (tensor<6x5xf32>, tensor<1x5xf32>) -> tensor<7x5xf32>
    %8 = stablehlo.slice %7 [0:7, 0:1] : (tensor<7x5xf32>) -> tensor<7x1xf32>
    %9 = stablehlo.slice %7 [0:7, 1:2] : (tensor<7x5xf32>) -> tensor<7x1xf32>
    %10 = call @_flip_2(%9) : (tensor<7x1xf32>) -> tensor<7x1xf32>
    %11 = stablehlo.concatenate %10, %7, dim = 1 : (tensor<7x1xf32>, tensor<7x5xf32>) -> tensor<7x6xf32>
    %12 = stablehlo.slice %11 [0:7, 5:6] : (tensor<7x6xf32>) -> tensor<7x1xf32>
    %13 = stablehlo.slice %11 [0:7, 3:5] : (tensor<7x6xf32>) -> tensor<7x2xf32>
    %14 = call @_flip_3(%13) : (tensor<7x2xf32>) -> tensor<7x2xf32>
    %15 = stablehlo.concatenate %11, %14, dim = 1 : (tensor<7x6xf32>, tensor<7x2xf32>) -> tensor<7x8xf32>
    return %15 : tensor<7x8xf32>
  }
  func.func private @_flip(%arg0: tensor<2x5xf32>) -> tensor<2x5xf32> {
    %0 = stablehlo.reverse %arg0, dims = [0] : tensor<2x5xf32>
    return %0 : tensor<2x5xf32>
  }
  func.func private @_flip_1(%arg0: tensor<1x5xf32>) -> tensor<1x5xf32> {
    %0 = stablehlo.reverse %arg0, dims = [0] : tensor<1x5xf32>
    return %0 : tensor<1x5xf32>
  }
  func.func private @_flip_2(%arg0: tensor<7x1xf32>) -> tensor<7x1xf32> {
    %0 = stablehlo.reverse %arg0, dims = [1] : tensor<7x1xf32>
    return %0 : tensor<7x1xf32>
  }
  func.func private @_flip_3(%arg0: tensor<7x2xf32>) -> tensor<7x2xf32> {
    %0 = stablehlo.reverse %arg0, dims = [1] : tensor<7x2xf32>
    return %0 : tensor<7x2xf32>
  }
}
