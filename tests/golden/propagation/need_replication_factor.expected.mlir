module @need_replication_factor {
  sdy.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
  func.func @main(%arg0: tensor<4x8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}, {"c"}]>}) -> (tensor<4x8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"b", ?}, {?}]>}) {
    %0 = stablehlo.custom_call @foo(%arg0) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"b", ?}, {?}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j, k])->([i, j, k]) {i=4, j=8, k=16} need_replication={j, k} blocked_propagation={i, k}, custom>} : (tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    %1 = stablehlo.negate %0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"b", ?}, {?}]>]>} : tensor<4x8x16xf32>
    return %1 : tensor<4x8x16xf32>
  }
}
