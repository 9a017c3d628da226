module @module {
  sdy.mesh @mesh = <["x"=2, "y"=2, "z"=2]>
  func.func @main(%arg0: tensor<16x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "z", ?}, {"y", ?}]>}) -> (tensor<16x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "z", ?}, {"y", ?}]>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x", ?}, {?}]>] out_shardings=[<@mesh, [{"x", ?}, {?}]>] manual_axes={"x"} (%arg1: tensor<8x16xf32>) {
      %1 = sdy.data_flow_edge %arg1 sharding=<@mesh, [{"z", ?}, {"y", ?}]> : tensor<8x16xf32>
      %2 = stablehlo.negate %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"z", ?}, {"y", ?}]>]>} : tensor<8x16xf32>
      sdy.return %2 : tensor<8x16xf32>
    } : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %3 = sdy.data_flow_edge %0 sharding=<@mesh, [{"x", "z", ?}, {"y", ?}]> : tensor<16x16xf32>
    return %3 : tensor<16x16xf32>
  }
}
