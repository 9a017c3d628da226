// propagate: basic
// A need-replication factor propagates like any other (Shardy's factor propagation skips
// only blocked factors): "b" crosses factor j; i and k are blocked, so "a" and "c" stay.
module @need_replication_factor {
  sdy.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
  func.func @main(%arg0: tensor<4x8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}, {"c"}]>}) -> tensor<4x8x16xf32> {
    %0 = stablehlo.custom_call @foo(%arg0) {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j, k])->([i, j, k]) {i=4, j=8, k=16} need_replication={j, k} blocked_propagation={i, k}, custom>} : (tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    %1 = stablehlo.negate %0 : tensor<4x8x16xf32>
    return %1 : tensor<4x8x16xf32>
  }
}
