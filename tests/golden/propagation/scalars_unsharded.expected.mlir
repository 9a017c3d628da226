module @scalars_unsharded {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<f32>, %arg1: tensor<f32> {sdy.sharding = #sdy.sharding<@mesh, [], replicated={"a"}>}, %arg2: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b"}]>}) -> (tensor<f32>, tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b", ?}]>}) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"b", ?}]>]>} : (tensor<f32>) -> tensor<8xf32>
    %2 = stablehlo.multiply %1, %arg2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"b", ?}]>]>} : tensor<8xf32>
    return %0, %2 : tensor<f32>, tensor<8xf32>
  }
}
