module @module {
  sdy.mesh @mesh = <["m"=8, "n"=2]>
  func.func @main(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"m", ?}, {?}]>}, %arg1: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"m":(1)4, ?}, {"m":(4)2, ?}]>}) -> (tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"m":(1)4, ?}, {?}]>}) {
    %0 = stablehlo.add %arg0, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"m":(1)4, ?}, {?}]>]>} : tensor<16x8xf32>
    return %0 : tensor<16x8xf32>
  }
}
