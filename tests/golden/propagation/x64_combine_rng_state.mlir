// propagate: basic
// An X64Combine making a rng_bit_generator's state is replicated and blocks propagation
// (Shardy's rule depends on the user): "a" on its operands does not reach it nor the state.
// The one feeding an add is pointwise: "a" goes through it.
sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<2xui32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}]>},
                %arg1: tensor<2xui32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}]>})
    -> (tensor<4x1000xui32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}, tensor<2xui64>) {
  %0 = stablehlo.custom_call @X64Combine(%arg0, %arg1) : (tensor<2xui32>, tensor<2xui32>) -> tensor<2xui64>
  %output_state, %output = stablehlo.rng_bit_generator %0, algorithm =  DEFAULT : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4x1000xui32>)
  %1 = stablehlo.custom_call @X64Combine(%arg0, %arg1) : (tensor<2xui32>, tensor<2xui32>) -> tensor<2xui64>
  %2 = stablehlo.add %1, %1 : tensor<2xui64>
  return %output, %2 : tensor<4x1000xui32>, tensor<2xui64>
}
