// propagate: basic
// Group members x ({"x"} on dim 0) and y ({"y"} on dim 1) disagree: each gets an open
// constraint after it, which becomes the member; the multiply reads the constraints.
sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @main(%x: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>},
                %y: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>})
    -> tensor<8x16xf32> {
  %0 = stablehlo.multiply %x, %y : tensor<8x16xf32>
  sdy.sharding_group %x group_id = 3 : tensor<8x16xf32>
  sdy.sharding_group %y group_id = 3 : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
