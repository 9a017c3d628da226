module @module {
  sdy.mesh @mesh = <["x"=2, "y"=2, "z"=2]>
  func.func @main(%arg0: tensor<i32>, %arg1: tensor<4x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}, {"y", ?}]>}, %arg2: tensor<4x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "y", ?}, {?}]>}) -> (tensor<4x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}, {"y", ?}]>}) {
    %0 = "stablehlo.case"(%arg0) ({
      stablehlo.return %arg1 : tensor<4x16xf32>
    }, {
      stablehlo.return %arg2 : tensor<4x16xf32>
    }) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x", ?}, {"y", ?}]>]>} : (tensor<i32>) -> (tensor<4x16xf32>)
    return %0 : tensor<4x16xf32>
  }
}
