// propagate: basic
// Explicit sdy.data_flow_edge ops on a manual computation's body argument and result hold
// the propagated shardings: in_shardings and out_shardings stay as written. The result
// edge's own sharding ({"y"} on dim 1, read from `sharding=<...>`) propagates too.
sdy.mesh @mesh = <["x"=2, "y"=2, "z"=2]>
func.func @main(%arg0: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x", ?}, {?}]>]
      out_shardings=[<@mesh, [{"x", ?}, {?}]>] manual_axes={"x"} (%arg1: tensor<8x16xf32>) {
    %2 = sdy.data_flow_edge %arg1 sharding=<@mesh, [{"z", ?}, {?}]> : tensor<8x16xf32>
    %3 = stablehlo.negate %2 : tensor<8x16xf32>
    sdy.return %3 : tensor<8x16xf32>
  } : (tensor<16x16xf32>) -> tensor<16x16xf32>
  %1 = sdy.data_flow_edge %0 sharding=<@mesh, [{?}, {"y", ?}]> : tensor<16x16xf32>
  return %1 : tensor<16x16xf32>
}
