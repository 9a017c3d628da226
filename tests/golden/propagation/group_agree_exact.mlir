// propagate: basic
// Groups 5 and 7 share %y, so they are one group. Its only sharding, a closed one on %x,
// is given to every member as it is (closed), so the negate keeps dim 1 unsharded though
// %z wants "y" there; the all-open constraint on %c is no sharding to compare.
sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @main(%x: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>},
                %z: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>})
    -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %y = stablehlo.negate %z : tensor<8x16xf32>
  %c = sdy.sharding_constraint %z <@mesh, [{?}, {?}]> : tensor<8x16xf32>
  sdy.sharding_group %x group_id = 5 : tensor<8x16xf32>
  sdy.sharding_group %y group_id = 5 : tensor<8x16xf32>
  sdy.sharding_group %y group_id = 7 : tensor<8x16xf32>
  sdy.sharding_group %c group_id = 7 : tensor<8x16xf32>
  return %y, %c : tensor<8x16xf32>, tensor<8x16xf32>
}
