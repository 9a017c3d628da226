// propagate: basic
// The entry's result shardings reach the returned values before any op propagates (as
// Shardy's basic propagation does): the result's "a":(2)3 on dim 1 is there first, and
// the argument's "a":(1)3 on dim 0 cannot join it (sub-axes of "a"=6 that overlap).
sdy.mesh @mesh = <["a"=6]>
func.func @main(%arg0: tensor<6x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a":(1)3}, {}]>})
    -> (tensor<6x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"a":(2)3}]>}) {
  %0 = stablehlo.cosine %arg0 : tensor<6x6xf32>
  return %0 : tensor<6x6xf32>
}
