// propagate: pipeline
// The pipeline: groups synced as basic propagation does, then removed (Shardy exports
// no sharding_group); the open constraints left are reshards.
sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @main(%x: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>},
                %y: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>})
    -> tensor<8x16xf32> {
  %0 = stablehlo.multiply %x, %y : tensor<8x16xf32>
  sdy.sharding_group %x group_id = 3 : tensor<8x16xf32>
  sdy.sharding_group %y group_id = 3 : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
