module @module {
  sdy.mesh @mesh = <["x"=2, "y"=4]>
  func.func @main(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}) -> (tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}, {"y", ?}]>}) {
    %0 = sdy.sharding_constraint %arg1 <@mesh, [{"x", ?}, {"y", ?}]> : tensor<8x16xf32>
    %1 = sdy.sharding_constraint %arg0 <@mesh, [{"x", ?}, {"y", ?}]> : tensor<8x16xf32>
    %2 = stablehlo.multiply %1, %0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x", ?}, {"y", ?}]>]>} : tensor<8x16xf32>
    sdy.sharding_group %1 group_id=3 : tensor<8x16xf32>
    sdy.sharding_group %0 group_id=3 : tensor<8x16xf32>
    return %2 : tensor<8x16xf32>
  }
}
