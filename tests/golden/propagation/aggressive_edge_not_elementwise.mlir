// propagate: aggressive
// A case's result edge is not an elementwise op: its factors go by source (same sizes:
// the lower branch first), not by the most sharded factor. Branch 0's dim-1 "y" is taken
// first, so dim 0 gets only "x" of branch 1's {"x", "y"}.
sdy.mesh @mesh = <["x"=2, "y"=2, "z"=2]>
func.func @main(%arg0: tensor<i32>,
                %arg1: tensor<4x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"y", ?}]>},
                %arg2: tensor<4x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "y", ?}, {?}]>})
    -> tensor<4x16xf32> {
  %0 = "stablehlo.case"(%arg0) ({
    stablehlo.return %arg1 : tensor<4x16xf32>
  }, {
    stablehlo.return %arg2 : tensor<4x16xf32>
  }) : (tensor<i32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
