module @data_flow_edges {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<i32>, %arg1: tensor<4xi64> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}]>}, %arg2: tensor<4xi64> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}]>}) -> (tensor<4xi64> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}]>}) {
    %0:2 = "stablehlo.case"(%arg0) ({
      stablehlo.return %arg1, %arg1 : tensor<4xi64>, tensor<4xi64>
    }, {
      stablehlo.return %arg2, %arg2 : tensor<4xi64>, tensor<4xi64>
    }) : (tensor<i32>) -> (tensor<4xi64>, tensor<4xi64>)
    %1 = sdy.data_flow_edge %0#0 sharding=<@mesh, [{"a", ?}]> : tensor<4xi64>
    %2 = sdy.data_flow_edge %0#1 sharding=<@mesh, [{"a", ?}]> : tensor<4xi64>
    return %1 : tensor<4xi64>
  }
}
