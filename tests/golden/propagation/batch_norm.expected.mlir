module @batch_norm {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<8x4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b", ?}, {?}]>}, %arg1: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b"}]>}, %arg2: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b", ?}]>}) -> (tensor<8x4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}, {"b", ?}, {?}]>}, tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b", ?}]>}, tensor<8x4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}, {"b", ?}, {?}]>}, tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b", ?}]>}) {
    %0:3 = "stablehlo.batch_norm_training"(%arg0, %arg1, %arg2) <{epsilon = 1.000000e-03 : f32, feature_index = 1 : i64}> {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a", ?}, {"b", ?}, {?}]>, <@mesh, [{"b", ?}]>, <@mesh, [{"b", ?}]>]>} : (tensor<8x4x2xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<8x4x2xf32>, tensor<4xf32>, tensor<4xf32>)
    %1 = "stablehlo.batch_norm_inference"(%0#0, %arg1, %arg2, %0#1, %0#2) <{epsilon = 1.000000e-03 : f32, feature_index = 1 : i64}> {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a", ?}, {"b", ?}, {?}]>]>} : (tensor<8x4x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8x4x2xf32>
    %2:3 = "stablehlo.batch_norm_grad"(%arg0, %arg1, %0#1, %0#2, %1) <{epsilon = 1.000000e-03 : f32, feature_index = 1 : i64}> {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a", ?}, {"b", ?}, {?}]>, <@mesh, [{"b", ?}]>, <@mesh, [{"b", ?}]>]>} : (tensor<8x4x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8x4x2xf32>) -> (tensor<8x4x2xf32>, tensor<4xf32>, tensor<4xf32>)
    return %0#0, %0#1, %2#0, %2#1 : tensor<8x4x2xf32>, tensor<4xf32>, tensor<8x4x2xf32>, tensor<4xf32>
  }
}
