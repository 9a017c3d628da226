module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x8xf32>) -> (tensor<2x8xi32> {jax.result_info = "result[0]"}, tensor<2x8xui8> {jax.result_info = "result[1]"}, tensor<2x8xi8> {jax.result_info = "result[2]"}, tensor<2x8xui32> {jax.result_info = "result[3]"}, tensor<2x8xi16> {jax.result_info = "result[4]"}, tensor<2x8xui16> {jax.result_info = "result[5]"}) {
    %0 = stablehlo.convert %arg0 : (tensor<2x8xf32>) -> tensor<2x8xi32>
    %1 = stablehlo.convert %arg0 : (tensor<2x8xf32>) -> tensor<2x8xui8>
    %2 = stablehlo.convert %arg0 : (tensor<2x8xf32>) -> tensor<2x8xi8>
    %3 = stablehlo.convert %arg0 : (tensor<2x8xf32>) -> tensor<2x8xui32>
    %4 = stablehlo.convert %arg0 : (tensor<2x8xf32>) -> tensor<2x8xi16>
    %5 = stablehlo.convert %arg0 : (tensor<2x8xf32>) -> tensor<2x8xui16>
    return %0, %1, %2, %3, %4, %5 : tensor<2x8xi32>, tensor<2x8xui8>, tensor<2x8xi8>, tensor<2x8xui32>, tensor<2x8xi16>, tensor<2x8xui16>
  }
}
