// propagate: basic
// A scalar has no factors, so nothing propagates to it: one nobody sharded keeps no
// sdy.sharding (replicated), one a user sharded keeps the user's, and a function
// returning an unsharded scalar has no result sharding.
module @scalars_unsharded {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<f32>, %arg1: tensor<f32> {sdy.sharding = #sdy.sharding<@mesh, [], replicated={"a"}>},
                  %arg2: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b"}]>}) -> (tensor<f32>, tensor<8xf32>) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %2 = stablehlo.multiply %1, %arg2 : tensor<8xf32>
    return %0, %2 : tensor<f32>, tensor<8xf32>
  }
}
