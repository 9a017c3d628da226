// A sharded input flows through a dot and an elementwise op to the result.
module @matmul_chain {
  sdy.mesh @mesh = <["x"=2, "y"=4]>
  func.func public @main(%a: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>},
                         %b: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>})
      -> tensor<8x32xf32> {
    %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    %1 = stablehlo.tanh %0 : tensor<8x32xf32>
    return %1 : tensor<8x32xf32>
  }
}
