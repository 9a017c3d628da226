module @pipeline_lift_inlined_mesh {
  sdy.mesh @mesh = <["x"=4]>
  sdy.mesh @mesh_0 = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh_0, [{"a"}, {"b"}]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh_0, [{"a"}, {"b"}]>}) {
    %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh_0, [{"a"}, {"b"}]>]>} : tensor<8x8xf32>
    return %0 : tensor<8x8xf32>
  }
}
