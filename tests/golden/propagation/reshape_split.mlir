// A sharded dim split by a reshape: the major factor keeps the axis.
module @reshape_split {
  sdy.mesh @mesh = <["x"=4]>
  func.func public @main(%a: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>})
      -> tensor<4x4x8xf32> {
    %0 = stablehlo.reshape %a : (tensor<16x8xf32>) -> tensor<4x4x8xf32>
    %1 = stablehlo.negate %0 : tensor<4x4x8xf32>
    return %1 : tensor<4x4x8xf32>
  }
}
