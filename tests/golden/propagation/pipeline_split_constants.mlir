// propagate: pipeline
// Shardy's pipeline splits constant expressions per use (sdy.constant): the two operands of
// the dot each get their own copy, sharded as that operand wants; the copy returned stays
// unsharded; a scalar constant (the while's counter) is shared; a broadcast of a constant is
// a constant expression and is copied with it.
module @pipeline_split_constants {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>})
      -> (tensor<8x16xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
    %c = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %1 = stablehlo.dot_general %0, %0, contracting_dims = [1] x [1] : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x8xf32>
    %2 = stablehlo.add %1, %arg0 : tensor<8x8xf32>
    %i = stablehlo.constant dense<0> : tensor<i32>
    %3:2 = stablehlo.while(%iterArg = %2, %iterArg_0 = %i) : tensor<8x8xf32>, tensor<i32>
      cond {
      %n = stablehlo.constant dense<4> : tensor<i32>
      %5 = stablehlo.compare  LT, %iterArg_0, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %5 : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %5 = stablehlo.add %iterArg_0, %one : tensor<i32>
      %6 = stablehlo.multiply %iterArg, %iterArg : tensor<8x8xf32>
      stablehlo.return %6, %5 : tensor<8x8xf32>, tensor<i32>
    }
    return %0, %2, %3#0 : tensor<8x16xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  }
}
