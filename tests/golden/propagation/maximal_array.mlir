// propagate: basic
// A maximal sharding (the array lives on one device) is kept, whatever the array's rank,
// and nothing propagates through an op that touches it.
module @maximal_array {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  sdy.mesh @maximal_mesh = <[], device_ids=[0]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>},
                  %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@maximal_mesh, []>}) -> tensor<8x8xf32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<8x8xf32>
    return %0 : tensor<8x8xf32>
  }
}
