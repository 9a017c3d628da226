// propagate: pipeline
// The full pipeline: user priorities (p0 before p1), then every sharding closed and the
// priorities dropped; a called function gets result shardings too; an uncalled function is
// kept and propagated on its own.
module @pipeline_closed {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}p1, {?}]>},
                  %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b"}p0, {?}]>}) -> tensor<8x8xf32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<8x8xf32>
    %1 = call @foo(%0) : (tensor<8x8xf32>) -> tensor<8x8xf32>
    return %1 : tensor<8x8xf32>
  }
  func.func private @foo(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
    %0 = stablehlo.negate %arg0 : tensor<8x8xf32>
    return %0 : tensor<8x8xf32>
  }
  func.func @unused(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}]>}) -> tensor<8xf32> {
    %0 = stablehlo.abs %arg0 : tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}
