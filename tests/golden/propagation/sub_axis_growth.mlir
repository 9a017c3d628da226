// propagate: basic
// A sub-axis grows toward the axis it is a major part of: %arg1's "m":(1)2 and %arg0's
// "m" are compatible on dim 0, and %arg1 can take "m" up to "m":(1)4 (its dim 1 holds
// "m":(4)2), so every tensor of the add gets "m":(1)4 there.
sdy.mesh @mesh = <["m"=8, "n"=2]>
func.func @main(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"m", ?}, {?}]>},
                %arg1: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"m":(1)2, ?}, {"m":(4)2, ?}]>})
    -> tensor<16x8xf32> {
  %0 = stablehlo.add %arg0, %arg1 : tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}
