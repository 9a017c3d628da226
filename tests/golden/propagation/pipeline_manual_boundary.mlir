// propagate: pipeline
// A manual axis ("x") reaches the manual computation's result from its user, but enters no
// boundary sharding (a manual axis there is a dim's leading axis, as written); the
// pipeline closes the in/out shardings as it closes every other sharding.
sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}) -> tensor<8x4xf32> {
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{?}, {?}]>]
      out_shardings=[<@mesh, [{?}, {?}]>] manual_axes={"x"} (%arg1: tensor<8x4xf32>) {
    %2 = stablehlo.negate %arg1 : tensor<8x4xf32>
    sdy.return %2 : tensor<8x4xf32>
  } : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %1 = stablehlo.abs %0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"y", "x"}, {}]>]>} : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}
