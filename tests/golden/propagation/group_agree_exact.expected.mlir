module @module {
  sdy.mesh @mesh = <["x"=2, "y"=4]>
  func.func @main(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}) -> (tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}, {?}]>}, tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}, {?}]>}) {
    %0 = stablehlo.negate %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>} : tensor<8x16xf32>
    %1 = sdy.sharding_constraint %arg1 <@mesh, [{"x"}, {}]> : tensor<8x16xf32>
    sdy.sharding_group %arg0 group_id=5 : tensor<8x16xf32>
    sdy.sharding_group %0 group_id=5 : tensor<8x16xf32>
    sdy.sharding_group %0 group_id=7 : tensor<8x16xf32>
    sdy.sharding_group %1 group_id=7 : tensor<8x16xf32>
    return %0, %1 : tensor<8x16xf32>, tensor<8x16xf32>
  }
}
