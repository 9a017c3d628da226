module @reshape_split {
  sdy.mesh @mesh = <["x"=4]>
  func.func @main(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<4x4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}, {?}, {?}]>}) {
    %0 = stablehlo.reshape %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x", ?}, {?}, {?}]>]>} : (tensor<16x8xf32>) -> tensor<4x4x8xf32>
    %1 = stablehlo.negate %0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x", ?}, {?}, {?}]>]>} : tensor<4x4x8xf32>
    return %1 : tensor<4x4x8xf32>
  }
}
