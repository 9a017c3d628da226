module @manual_free_axes {
  sdy.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
  func.func @main(%arg0: tensor<32x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b", "a", ?}, {"c", ?}]>}) -> (tensor<32x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b", "a", ?}, {"c", ?}]>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"b", "a", ?}, {"c", ?}]>] out_shardings=[<@mesh, [{"b", "a", ?}, {"c", ?}]>] manual_axes={"b"} (%arg1: tensor<16x32xf32>) {
      %1 = stablehlo.add %arg1, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a", ?}, {"c", ?}]>]>} : tensor<16x32xf32>
      %2 = stablehlo.negate %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a", ?}, {"c", ?}]>]>} : tensor<16x32xf32>
      sdy.return %2 : tensor<16x32xf32>
    } : (tensor<32x32xf32>) -> tensor<32x32xf32>
    return %0 : tensor<32x32xf32>
  }
}
