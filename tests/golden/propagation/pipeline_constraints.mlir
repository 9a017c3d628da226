// propagate: pipeline
// Shardy's pipeline: a closed constraint on an unsharded value gives the value its sharding
// (the add is computed replicated, as the constraint asks, not sharded as its operand);
// an open constraint does not; two constraints wanting different shardings of one value
// apply neither; every constraint left is a reshard, but one nothing uses is gone.
module @pipeline_constraints {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>})
      -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
    %0 = stablehlo.add %arg0, %arg0 : tensor<8x8xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{}, {}]> : tensor<8x8xf32>
    %2 = stablehlo.multiply %arg0, %arg0 : tensor<8x8xf32>
    %3 = sdy.sharding_constraint %2 <@mesh, [{?}, {"b", ?}]> : tensor<8x8xf32>
    %4 = stablehlo.subtract %arg0, %arg0 : tensor<8x8xf32>
    %5 = sdy.sharding_constraint %4 <@mesh, [{}, {"b"}]> : tensor<8x8xf32>
    %6 = sdy.sharding_constraint %4 <@mesh, [{"b"}, {}]> : tensor<8x8xf32>
    %7 = sdy.sharding_constraint %arg0 <@mesh, [{"a"}, {"b"}]> : tensor<8x8xf32>
    return %1, %3, %5, %6 : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  }
}
