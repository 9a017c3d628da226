// propagate: basic
// sdy.data_flow_edge holds the sharding of the case result it follows: the op prints none,
// the edge prints it; an unused edge stays.
module @data_flow_edges {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<i32>, %arg1: tensor<4xi64> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}]>},
                  %arg2: tensor<4xi64>) -> tensor<4xi64> {
    %0:2 = "stablehlo.case"(%arg0) ({
      stablehlo.return %arg1, %arg1 : tensor<4xi64>, tensor<4xi64>
    }, {
      stablehlo.return %arg2, %arg2 : tensor<4xi64>, tensor<4xi64>
    }) : (tensor<i32>) -> (tensor<4xi64>, tensor<4xi64>)
    %1 = sdy.data_flow_edge %0#0 : tensor<4xi64>
    %2 = sdy.data_flow_edge %0#1 : tensor<4xi64>
    return %1 : tensor<4xi64>
  }
}
