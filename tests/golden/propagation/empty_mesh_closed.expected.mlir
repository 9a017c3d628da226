module @empty_mesh_closed {
  sdy.mesh @empty_mesh = <[]>
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}, {}]>}) -> tensor<8x8xf32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<8x8xf32>
    return %0 : tensor<8x8xf32>
  }
}
