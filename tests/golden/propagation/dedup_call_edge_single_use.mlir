// propagate: pipeline-dedup
// A shared function's argument is one sdy.func_data_flow_edge in Shardy, whose operand only
// it uses: op-priority propagation counts it single-use even where the call operand %0 has
// other uses. So at the first (pass-through, single use) level foo's "b" (its constraint,
// through abs and the edge) reaches %0 before the add, multi-use through %arg0, gives it
// %arg0's "a" at a later level: %0 and both calls are "b".
module @dedup_call_edge_single_use {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<8x2xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}) -> (tensor<8x2xi32>, tensor<8x2xi32>) {
    %0 = stablehlo.add %arg0, %arg0 : tensor<8x2xi32>
    %1 = call @foo(%0) : (tensor<8x2xi32>) -> tensor<8x2xi32>
    %2 = stablehlo.abs %0 : tensor<8x2xi32>
    return %1, %2 : tensor<8x2xi32>, tensor<8x2xi32>
  }
  func.func private @foo(%arg0: tensor<8x2xi32>) -> tensor<8x2xi32> {
    %0 = stablehlo.abs %arg0 : tensor<8x2xi32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{"b"}, {}]> : tensor<8x2xi32>
    %2 = stablehlo.abs %1 : tensor<8x2xi32>
    return %2 : tensor<8x2xi32>
  }
}
