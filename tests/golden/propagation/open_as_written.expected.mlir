module @module {
  sdy.mesh @empty_mesh = <[]>
  sdy.mesh @mesh_a = <["a"=2]>
  sdy.mesh @mesh_b = <["a"=4]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh_a, [{"a", ?}, {?}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh_b, [{?}, {?}]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh_a, [{"a", ?}, {?}]>}, tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh_b, [{?}, {?}]>}) {
    %0 = stablehlo.add %arg0, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@empty_mesh, [{?}, {?}]>]>} : tensor<8x8xf32>
    %1 = stablehlo.tanh %arg1 : tensor<8x8xf32>
    %2 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh_a, [{"a", ?}, {?}]>]>} : tensor<8x8xf32>
    %3 = stablehlo.add %2, %2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh_a, [{"a", ?}, {?}]>]>} : tensor<8x8xf32>
    return %3, %1 : tensor<8x8xf32>, tensor<8x8xf32>
  }
}
