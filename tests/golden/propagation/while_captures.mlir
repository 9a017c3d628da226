// propagate: basic
// A while whose regions capture outer values (%c32, %c1) keeps its two operands: the
// captures are written back as captures, not as extra loop values.
module @while_captures {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<32x96xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}) -> tensor<32x96xf32> {
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %c1 = stablehlo.constant dense<1> : tensor<i32>
    %c32 = stablehlo.constant dense<32> : tensor<i32>
    %0:2 = stablehlo.while(%iterArg = %arg0, %iterArg_0 = %c0) : tensor<32x96xf32>, tensor<i32>
      cond {
      %1 = stablehlo.compare  LT, %iterArg_0, %c32 : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1 = stablehlo.add %iterArg_0, %c1 : tensor<i32>
      %2 = stablehlo.add %iterArg, %iterArg : tensor<32x96xf32>
      stablehlo.return %2, %1 : tensor<32x96xf32>, tensor<i32>
    }
    return %0#0 : tensor<32x96xf32>
  }
}
