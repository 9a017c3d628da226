// propagate: basic
// All-open shardings a user wrote print back as written (Shardy keeps them), on their own
// mesh: %arg1's on @mesh_b (a different mesh: nothing propagates between the meshes), the
// add's on the empty mesh, the result's on @mesh_b. The tanh gets no sharding (all-open,
// not written: none printed), while the negate's open dims take "a" from %arg0.
sdy.mesh @empty_mesh = <[]>
sdy.mesh @mesh_a = <["a"=2]>
sdy.mesh @mesh_b = <["a"=4]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh_a, [{"a", ?}, {?}]>},
                %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh_b, [{?}, {?}]>})
    -> (tensor<8x8xf32>, tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh_b, [{?}, {?}]>}) {
  %0 = stablehlo.add %arg0, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@empty_mesh, [{?}, {?}]>]>} : tensor<8x8xf32>
  %1 = stablehlo.tanh %arg1 : tensor<8x8xf32>
  %2 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh_a, [{?}, {?}]>]>} : tensor<8x8xf32>
  %3 = stablehlo.add %2, %2 : tensor<8x8xf32>
  return %3, %1 : tensor<8x8xf32>, tensor<8x8xf32>
}
