// propagate: pipeline
// The entry returns a value with unreduced axes: its result sharding gets the value's dims
// but not its unreduced axes, so the value is all-reduced before it is returned (Shardy's
// propagateFuncResults, then insert-explicit-reshards at the return); an unreduced axis
// combined by max stays max.
module @pipeline_unreduced_return {
  sdy.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}, %arg1: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}], unreduced={"b"}>]>} : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %1 = stablehlo.maximum %0, %0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}], unreduced=max{"c"}>]>} : tensor<8x16xf32>
    return %0, %1 : tensor<8x16xf32>, tensor<8x16xf32>
  }
}
