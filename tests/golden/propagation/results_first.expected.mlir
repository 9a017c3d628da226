module @module {
  sdy.mesh @mesh = <["a"=6]>
  func.func @main(%arg0: tensor<6x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a":(1)3}, {}]>}) -> (tensor<6x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"a":(2)3}]>}) {
    %0 = stablehlo.cosine %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"a":(2)3, ?}]>]>} : tensor<6x6xf32>
    return %0 : tensor<6x6xf32>
  }
}
