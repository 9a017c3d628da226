// propagate: pipeline
// Shardy's pipeline gives each call site its own function (flattening), propagates, then
// merges copies whose argument and result shardings agree: @twice is called with "a" and
// with "b", so it stays as @twice and a copy @twice_0; @same's two calls agree, so they
// call one function again; the private @unused is dropped.
module @pipeline_flatten_calls {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>},
                  %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b"}, {}]>})
      -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
    %0 = call @twice(%arg0) : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %1 = call @twice(%arg1) : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %2 = call @same(%arg0) : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %3 = call @same(%arg0) : (tensor<8x8xf32>) -> tensor<8x8xf32>
    return %0, %1, %2, %3 : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  }
  func.func private @twice(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<8x8xf32>
    return %0 : tensor<8x8xf32>
  }
  func.func private @same(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
    %0 = stablehlo.negate %arg0 : tensor<8x8xf32>
    return %0 : tensor<8x8xf32>
  }
  func.func private @unused(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
    return %arg0 : tensor<8x8xf32>
  }
}
