module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}, %arg1: tensor<64x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) -> (tensor<32x64xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) {
    %0 = stablehlo.tanh %arg0 : tensor<32x64xf32>
    %1 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<64x32xf32>) -> tensor<32x64xf32>
    %2 = stablehlo.multiply %0, %1 : tensor<32x64xf32>
    %3 = stablehlo.add %2, %arg0 : tensor<32x64xf32>
    return %3 : tensor<32x64xf32>
  }
}
