// propagate: basic
// sdy.propagation_barrier lets shardings through only the allowed way: FORWARD (operand to
// result) carries %arg0's sharding to %0 but not %arg1's back from the sharded %3; BACKWARD
// carries %3's back to %arg1; NONE stops both.
module @barrier_directions {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>},
                  %arg1: tensor<8x8xf32>, %arg2: tensor<8x8xf32>)
      -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
    %0 = sdy.propagation_barrier %arg0 allowed_direction=FORWARD : tensor<8x8xf32>
    %1 = sdy.propagation_barrier %arg1 allowed_direction=BACKWARD : tensor<8x8xf32>
    %2 = sdy.propagation_barrier %arg2 allowed_direction=NONE : tensor<8x8xf32>
    %3 = sdy.sharding_constraint %1 <@mesh, [{}, {"b"}]> : tensor<8x8xf32>
    %4 = sdy.sharding_constraint %2 <@mesh, [{}, {"b"}]> : tensor<8x8xf32>
    return %0, %3, %4 : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  }
}
