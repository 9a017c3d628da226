// propagate: aggressive
// Aggressive resolves a conflict between factors of an elementwise op by the most sharded
// factor first: dim 0 carries {"b", "a"} (4-way) from %arg1, so dim 1 cannot also take "a"
// from %arg0. Sideways, %arg2 gets no more than the result has.
module @aggressive_most_sharded {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"a"}]>},
                  %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b", "a"}, {}]>},
                  %arg2: tensor<8x8xf32>) -> tensor<8x8xf32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<8x8xf32>
    %1 = stablehlo.multiply %0, %arg2 : tensor<8x8xf32>
    return %1 : tensor<8x8xf32>
  }
}
