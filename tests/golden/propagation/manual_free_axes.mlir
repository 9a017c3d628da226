// propagate: basic
// A manual computation's in/out shardings are updated through its free (non-manual) axes,
// both ways: "a" flows out of the body (appended after the manual "b") to the operand and
// the result; "c" on the result flows back into the body's second dim.
module @manual_free_axes {
  sdy.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
  func.func @main(%arg0: tensor<32x32xf32>) -> (tensor<32x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b", ?}, {"c", ?}]>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"b", ?}, {?}]>] out_shardings=[<@mesh, [{"b", ?}, {?}]>] manual_axes={"b"} (%arg1: tensor<16x32xf32>) {
      %1 = stablehlo.add %arg1, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a", ?}, {?}]>]>} : tensor<16x32xf32>
      %2 = stablehlo.negate %1 : tensor<16x32xf32>
      sdy.return %2 : tensor<16x32xf32>
    } : (tensor<32x32xf32>) -> tensor<32x32xf32>
    return %0 : tensor<32x32xf32>
  }
}
