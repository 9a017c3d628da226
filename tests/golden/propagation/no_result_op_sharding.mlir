// propagate: pipeline
// An op with no results keeps the sharding it was given (where it runs: a maximal mesh's
// device, or replicated); nothing propagates through it.
module @no_result_op_sharding {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  sdy.mesh @maximal_mesh = <[], device_ids=[0]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}) -> tensor<8x8xf32> {
    stablehlo.custom_call @sdy_testonly(%arg0) {has_side_effect = true, sdy.sharding = #sdy.sharding_per_value<[<@mesh, []>]>} : (tensor<8x8xf32>) -> ()
    stablehlo.custom_call @xla_python_cpu_callback(%arg0) {has_side_effect = true, sdy.sharding = #sdy.sharding_per_value<[<@maximal_mesh, []>]>} : (tensor<8x8xf32>) -> ()
    return %arg0 : tensor<8x8xf32>
  }
}
