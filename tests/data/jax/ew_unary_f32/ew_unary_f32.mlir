module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xf32>) -> (tensor<4x8xf32> {jax.result_info = "result[0]"}, tensor<4x8xf32> {jax.result_info = "result[1]"}, tensor<4x8xf32> {jax.result_info = "result[2]"}, tensor<4x8xf32> {jax.result_info = "result[3]"}, tensor<4x8xf32> {jax.result_info = "result[4]"}, tensor<4x8xf32> {jax.result_info = "result[5]"}, tensor<4x8xf32> {jax.result_info = "result[6]"}, tensor<4x8xf32> {jax.result_info = "result[7]"}, tensor<4x8xf32> {jax.result_info = "result[8]"}, tensor<4x8xf32> {jax.result_info = "result[9]"}, tensor<4x8xf32> {jax.result_info = "result[10]"}, tensor<4x8xf32> {jax.result_info = "result[11]"}, tensor<4x8xf32> {jax.result_info = "result[12]"}, tensor<4x8xf32> {jax.result_info = "result[13]"}, tensor<4x8xf32> {jax.result_info = "result[14]"}, tensor<4x8xf32> {jax.result_info = "result[15]"}, tensor<4x8xf32> {jax.result_info = "result[16]"}, tensor<4x8xf32> {jax.result_info = "result[17]"}, tensor<4x8xf32> {jax.result_info = "result[18]"}, tensor<4x8xf32> {jax.result_info = "result[19]"}) {
    %0 = stablehlo.exponential %arg0 : tensor<4x8xf32>
    %1 = stablehlo.exponential_minus_one %arg0 : tensor<4x8xf32>
    %2 = stablehlo.log %arg1 : tensor<4x8xf32>
    %3 = stablehlo.log_plus_one %arg1 : tensor<4x8xf32>
    %4 = stablehlo.tanh %arg0 : tensor<4x8xf32>
    %5 = stablehlo.negate %arg0 : tensor<4x8xf32>
    %6 = stablehlo.exponential %5 : tensor<4x8xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %8 = stablehlo.add %7, %6 : tensor<4x8xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %10 = stablehlo.divide %9, %8 : tensor<4x8xf32>
    %11 = stablehlo.sqrt %arg1 : tensor<4x8xf32>
    %12 = stablehlo.rsqrt %arg1 : tensor<4x8xf32>
    %13 = stablehlo.cbrt %arg0 : tensor<4x8xf32>
    %14 = chlo.erf %arg0 : tensor<4x8xf32> -> tensor<4x8xf32>
    %15 = stablehlo.sine %arg0 : tensor<4x8xf32>
    %16 = stablehlo.cosine %arg0 : tensor<4x8xf32>
    %17 = stablehlo.tan %arg0 : tensor<4x8xf32>
    %18 = stablehlo.floor %arg0 : tensor<4x8xf32>
    %19 = stablehlo.ceil %arg0 : tensor<4x8xf32>
    %20 = call @round(%arg0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %21 = stablehlo.round_nearest_afz %arg0 : tensor<4x8xf32>
    %22 = stablehlo.sign %arg0 : tensor<4x8xf32>
    %23 = stablehlo.abs %arg0 : tensor<4x8xf32>
    %24 = stablehlo.negate %arg0 : tensor<4x8xf32>
    return %0, %1, %2, %3, %4, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  }
  func.func private @round(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %0 = stablehlo.round_nearest_even %arg0 : tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}
