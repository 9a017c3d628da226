module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xf32>, %arg2: tensor<4x8xf32>, %arg3: tensor<f32>, %arg4: tensor<f32>) -> (tensor<4x8xf32> {jax.result_info = "result[0]"}, tensor<4x8xf32> {jax.result_info = "result[1]"}, tensor<4x8xf32> {jax.result_info = "result[2]"}, tensor<4x8xf32> {jax.result_info = "result[3]"}, tensor<4x8xf32> {jax.result_info = "result[4]"}, tensor<4x8xf32> {jax.result_info = "result[5]"}, tensor<4x8xf32> {jax.result_info = "result[6]"}, tensor<4x8xf32> {jax.result_info = "result[7]"}, tensor<4x8xf32> {jax.result_info = "result[8]"}, tensor<4x8xf32> {jax.result_info = "result[9]"}, tensor<4x8xf32> {jax.result_info = "result[10]"}, tensor<4x8xf32> {jax.result_info = "result[11]"}, tensor<4x8xf32> {jax.result_info = "result[12]"}, tensor<4x8xi1> {jax.result_info = "result[13]"}, tensor<4x8xi1> {jax.result_info = "result[14]"}, tensor<4x8xi1> {jax.result_info = "result[15]"}, tensor<4x8xi1> {jax.result_info = "result[16]"}, tensor<4x8xi1> {jax.result_info = "result[17]"}, tensor<4x8xi1> {jax.result_info = "result[18]"}) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<4x8xf32>
    %1 = stablehlo.subtract %arg0, %arg1 : tensor<4x8xf32>
    %2 = stablehlo.multiply %arg0, %arg1 : tensor<4x8xf32>
    %3 = stablehlo.divide %arg0, %arg1 : tensor<4x8xf32>
    %4 = stablehlo.atan2 %arg0, %arg1 : tensor<4x8xf32>
    %5 = stablehlo.power %arg2, %arg1 : tensor<4x8xf32>
    %6 = stablehlo.remainder %arg0, %arg1 : tensor<4x8xf32>
    %7 = stablehlo.broadcast_in_dim %arg3, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %8 = stablehlo.broadcast_in_dim %arg4, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %9 = stablehlo.clamp %7, %arg0, %8 : tensor<4x8xf32>
    %10 = stablehlo.compare GT, %arg0, %arg1, FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
    %11 = call @_where(%10, %arg0, %arg1) : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %12 = stablehlo.maximum %arg0, %arg1 : tensor<4x8xf32>
    %13 = stablehlo.minimum %arg0, %arg1 : tensor<4x8xf32>
    %14 = stablehlo.maximum %arg0, %arg1 : tensor<4x8xf32>
    %15 = stablehlo.minimum %arg0, %arg1 : tensor<4x8xf32>
    %16 = stablehlo.compare EQ, %arg0, %arg1, FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
    %17 = stablehlo.compare NE, %arg0, %arg1, FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
    %18 = stablehlo.compare LT, %arg0, %arg1, FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
    %19 = stablehlo.compare LE, %arg0, %arg1, FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
    %20 = stablehlo.compare GT, %arg0, %arg1, FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
    %21 = stablehlo.compare GE, %arg0, %arg1, FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
    return %0, %1, %2, %3, %4, %5, %6, %9, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>
  }
  func.func private @_where(%arg0: tensor<4x8xi1>, %arg1: tensor<4x8xf32>, %arg2: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<4x8xi1>, tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}
