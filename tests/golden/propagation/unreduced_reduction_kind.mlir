// An unreduced sharding says how its partial values combine (unreduced=max{...}); it is read,
// kept through propagation and printed back. The entry's result takes the returned value's
// sharding through an identity rule: its dims, not its unreduced axes (as Shardy's
// propagateFuncResults).
module @unreduced_reduction_kind {
  sdy.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}p1, {?}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}p0, {"b", ?}p0]>}) -> tensor<8x8xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<8x8xf32>
    %1 = stablehlo.dot_general %0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}p0, {?}], unreduced=min{"c"}>]>} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    return %1 : tensor<8x8xf32>
  }
}
