// propagate: basic
// A reduce with two results and a sharding on it (one per result) imports and propagates
// back to both operands (it used to stop with a KeyError).
module @multi_result_reduce {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<4x64x8xf32>, %arg1: tensor<4x64x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    %0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1:2 = stablehlo.reduce(%arg0 init: %0), (%arg1 init: %0) across dimensions = [1]
      {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"b", ?}]>, <@mesh, [{"a", ?}, {?}]>]>} :
      (tensor<4x64x8xf32>, tensor<4x64x8xf32>, tensor<f32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
      reducer(%a: tensor<f32>, %c: tensor<f32>) (%b: tensor<f32>, %d: tensor<f32>)  {
        %2 = stablehlo.add %a, %c : tensor<f32>
        %3 = stablehlo.add %b, %d : tensor<f32>
        stablehlo.return %2, %3 : tensor<f32>, tensor<f32>
      }
    return %1#0, %1#1 : tensor<4x8xf32>, tensor<4x8xf32>
  }
}
