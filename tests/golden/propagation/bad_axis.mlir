// Error: a sharding names an axis its mesh does not have.
module @bad_axis {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%a: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"z"}]>})
      -> tensor<8xf32> {
    %0 = stablehlo.abs %a : tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}
