// propagate: basic
// Batch norm (Shardy's batch_norm_inference factor rule; training and grad follow it): the
// operand's batch sharding ("a") reaches every operand-shaped result, the scale's feature
// sharding ("b") reaches the feature dim of every tensor, and the per-feature statistics of
// training take only the feature's axes.
module @batch_norm {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%x: tensor<8x4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {?}, {?}]>},
                  %scale: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b"}]>},
                  %offset: tensor<4xf32>)
      -> (tensor<8x4x2xf32>, tensor<4xf32>, tensor<8x4x2xf32>, tensor<4xf32>) {
    %0:3 = "stablehlo.batch_norm_training"(%x, %scale, %offset) {epsilon = 0.001 : f32, feature_index = 1 : i64} : (tensor<8x4x2xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<8x4x2xf32>, tensor<4xf32>, tensor<4xf32>)
    %1 = "stablehlo.batch_norm_inference"(%0#0, %scale, %offset, %0#1, %0#2) {epsilon = 0.001 : f32, feature_index = 1 : i64} : (tensor<8x4x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8x4x2xf32>
    %2:3 = "stablehlo.batch_norm_grad"(%x, %scale, %0#1, %0#2, %1) {epsilon = 0.001 : f32, feature_index = 1 : i64} : (tensor<8x4x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8x4x2xf32>) -> (tensor<8x4x2xf32>, tensor<4xf32>, tensor<4xf32>)
    return %0#0, %0#1, %2#0, %2#1 : tensor<8x4x2xf32>, tensor<4xf32>, tensor<8x4x2xf32>, tensor<4xf32>
  }
}
