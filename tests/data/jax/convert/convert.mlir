module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xf32>, %arg2: tensor<4x8xi32>, %arg3: tensor<4x8xui8>, %arg4: tensor<4x8xbf16>) -> (tensor<4x8xi32> {jax.result_info = "result[0]"}, tensor<4x8xui8> {jax.result_info = "result[1]"}, tensor<4x8xbf16> {jax.result_info = "result[2]"}, tensor<4x8xf16> {jax.result_info = "result[3]"}, tensor<4x8xf32> {jax.result_info = "result[4]"}, tensor<4x8xf32> {jax.result_info = "result[5]"}, tensor<4x8xi1> {jax.result_info = "result[6]"}, tensor<4x8xf32> {jax.result_info = "result[7]"}, tensor<4x8xf32> {jax.result_info = "result[8]"}, tensor<4x8xi32> {jax.result_info = "result[9]"}, tensor<4x8xui8> {jax.result_info = "result[10]"}, tensor<4x8xi8> {jax.result_info = "result[11]"}, tensor<4x8xi32> {jax.result_info = "result[12]"}, tensor<4x8xf32> {jax.result_info = "result[13]"}, tensor<4x8xf32> {jax.result_info = "result[14]"}, tensor<4x8xbf16> {jax.result_info = "result[15]"}, tensor<4x8xf16> {jax.result_info = "result[16]"}, tensor<4x8xbf16> {jax.result_info = "result[17]"}) {
    %0 = stablehlo.convert %arg0 : (tensor<4x8xf32>) -> tensor<4x8xi32>
    %1 = stablehlo.abs %arg0 : tensor<4x8xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<255> : tensor<i32>
    %2 = call @clip(%1, %c, %c_0) : (tensor<4x8xf32>, tensor<i32>, tensor<i32>) -> tensor<4x8xf32>
    %3 = stablehlo.convert %2 : (tensor<4x8xf32>) -> tensor<4x8xui8>
    %4 = stablehlo.convert %arg1 : (tensor<4x8xf32>) -> tensor<4x8xbf16>
    %5 = stablehlo.convert %arg1 : (tensor<4x8xf32>) -> tensor<4x8xf16>
    %6 = stablehlo.convert %arg1 : (tensor<4x8xf32>) -> tensor<4x8xf16>
    %7 = stablehlo.convert %6 : (tensor<4x8xf16>) -> tensor<4x8xf32>
    %8 = stablehlo.convert %arg1 : (tensor<4x8xf32>) -> tensor<4x8xbf16>
    %9 = stablehlo.convert %8 : (tensor<4x8xbf16>) -> tensor<4x8xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %10 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %11 = stablehlo.compare NE, %arg0, %10, FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
    %12 = stablehlo.convert %11 : tensor<4x8xi1>
    %13 = stablehlo.convert %arg2 : (tensor<4x8xi32>) -> tensor<4x8xf32>
    %14 = stablehlo.convert %arg3 : (tensor<4x8xui8>) -> tensor<4x8xf32>
    %15 = stablehlo.convert %arg3 : (tensor<4x8xui8>) -> tensor<4x8xi32>
    %16 = stablehlo.convert %arg2 : (tensor<4x8xi32>) -> tensor<4x8xui8>
    %17 = stablehlo.convert %arg2 : (tensor<4x8xi32>) -> tensor<4x8xi8>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %18 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<4x8xi32>
    %19 = stablehlo.compare GT, %arg2, %18, SIGNED : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi1>
    %20 = stablehlo.convert %19 : (tensor<4x8xi1>) -> tensor<4x8xi32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %21 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<4x8xi32>
    %22 = stablehlo.compare GT, %arg2, %21, SIGNED : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi1>
    %23 = stablehlo.convert %22 : (tensor<4x8xi1>) -> tensor<4x8xf32>
    %24 = stablehlo.convert %arg4 : (tensor<4x8xbf16>) -> tensor<4x8xf32>
    %25 = stablehlo.multiply %arg4, %arg4 : tensor<4x8xbf16>
    %26 = stablehlo.convert %arg4 : (tensor<4x8xbf16>) -> tensor<4x8xf16>
    %27 = stablehlo.convert %arg2 : (tensor<4x8xi32>) -> tensor<4x8xbf16>
    return %0, %3, %4, %5, %7, %9, %12, %13, %14, %15, %16, %17, %20, %23, %24, %25, %26, %27 : tensor<4x8xi32>, tensor<4x8xui8>, tensor<4x8xbf16>, tensor<4x8xf16>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xi32>, tensor<4x8xui8>, tensor<4x8xi8>, tensor<4x8xi32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8xf16>, tensor<4x8xbf16>
  }
  func.func private @clip(%arg0: tensor<4x8xf32>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<4x8xf32> {
    %0 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %2 = stablehlo.maximum %1, %arg0 : tensor<4x8xf32>
    %3 = stablehlo.convert %arg2 : (tensor<i32>) -> tensor<f32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %5 = stablehlo.minimum %4, %2 : tensor<4x8xf32>
    return %5 : tensor<4x8xf32>
  }
}
