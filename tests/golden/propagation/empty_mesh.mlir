// propagate: basic
// A sharding on the empty mesh (<[]>) has no axes on any mesh: its open dims take axes of
// the module's mesh, its closed dims stay unsharded, and it is written on that mesh.
module @empty_mesh {
  sdy.mesh @empty = <[]>
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>},
                  %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@empty, [{?}, {}]>}) -> tensor<8x8xf32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<8x8xf32>
    return %0 : tensor<8x8xf32>
  }
}
