module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=8]> {stablehlo.mesh = {axes = [{name = "x", size = 8 : i64}]}}
  func.func public @main(%arg0: tensor<64x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<72x16xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = call @_pad(%arg0, %c) : (tensor<64x16xf32>, tensor<i32>) -> tensor<72x16xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<72x16xf32>
    %2 = stablehlo.multiply %0, %1 : tensor<72x16xf32>
    return %2 : tensor<72x16xf32>
  }
  func.func private @_pad(%arg0: tensor<64x16xf32>, %arg1: tensor<i32>) -> tensor<72x16xf32> {
    %0 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %1 = stablehlo.pad %arg0, %0, low = [3, 0], high = [5, 0], interior = [0, 0] : (tensor<64x16xf32>, tensor<f32>) -> tensor<72x16xf32>
    return %1 : tensor<72x16xf32>
  }
}
