module @pipeline_unreduced_return {
  sdy.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}, %arg1: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b"}, {}]>}) -> (tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}, tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {}], unreduced={"b"}>]>} : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %1 = sdy.all_reduce {"b"} %0 out_sharding=<@mesh, [{"a"}, {}]> : tensor<8x16xf32>
    %2 = sdy.all_reduce {"b"} %0 out_sharding=<@mesh, [{"a"}, {}]> : tensor<8x16xf32>
    %3 = stablehlo.maximum %1, %2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {}], unreduced=max{"c"}>]>} : tensor<8x16xf32>
    %4 = sdy.all_reduce {"b"} %0 out_sharding=<@mesh, [{"a"}, {}]> : tensor<8x16xf32>
    %5 = sdy.all_reduce max {"c"} %3 out_sharding=<@mesh, [{"a"}, {}]> : tensor<8x16xf32>
    return %4, %5 : tensor<8x16xf32>, tensor<8x16xf32>
  }
}
