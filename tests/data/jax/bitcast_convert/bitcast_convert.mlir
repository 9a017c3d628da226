module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x4xf32>, %arg1: tensor<3x4x2xui16>, %arg2: tensor<3x4xi32>, %arg3: tensor<3x4xbf16>) -> (tensor<3x4xi32> {jax.result_info = "result[0]"}, tensor<3x4x2xui16> {jax.result_info = "result[1]"}, tensor<3x4xf32> {jax.result_info = "result[2]"}, tensor<3x4xf32> {jax.result_info = "result[3]"}, tensor<3x4xi16> {jax.result_info = "result[4]"}) {
    %0 = stablehlo.bitcast_convert %arg0 : (tensor<3x4xf32>) -> tensor<3x4xi32>
    %1 = stablehlo.bitcast_convert %arg0 : (tensor<3x4xf32>) -> tensor<3x4x2xui16>
    %2 = stablehlo.bitcast_convert %arg1 : (tensor<3x4x2xui16>) -> tensor<3x4xf32>
    %3 = stablehlo.bitcast_convert %arg2 : (tensor<3x4xi32>) -> tensor<3x4xf32>
    %4 = stablehlo.bitcast_convert %arg3 : (tensor<3x4xbf16>) -> tensor<3x4xi16>
    return %0, %1, %2, %3, %4 : tensor<3x4xi32>, tensor<3x4x2xui16>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xi16>
  }
}
