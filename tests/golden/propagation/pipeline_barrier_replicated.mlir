// propagate: pipeline
// The pipeline's closing drops replicated axes (Shardy's getClosedLike); an optimization
// barrier prints its attributes before its operands (MLIR's form).
module @pipeline_barrier_replicated {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}], replicated={"b"}>},
                  %arg1: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
    %0:2 = stablehlo.optimization_barrier %arg0, %arg1 : tensor<8x8xf32>, tensor<8x8xf32>
    return %0#0, %0#1 : tensor<8x8xf32>, tensor<8x8xf32>
  }
}
