// propagate: pipeline
// Shardy's pipeline declares inline meshes: the inline mesh becomes @mesh_0 (@mesh is
// taken by another mesh), and every sharding on it refers to it by name.
module @pipeline_lift_inlined_mesh {
  sdy.mesh @mesh = <["x"=4]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<mesh<["a"=2, "b"=2]>, [{"a"}, {"b"}]>})
      -> tensor<8x8xf32> {
    %0 = stablehlo.negate %arg0 : tensor<8x8xf32>
    return %0 : tensor<8x8xf32>
  }
}
