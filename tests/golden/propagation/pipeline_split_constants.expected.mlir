module @pipeline_split_constants {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}) -> (tensor<8x16xf32>, tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}, tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}) {
    %0 = sdy.constant dense<1.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {}]>]>} : (tensor<f32>) -> tensor<8x16xf32>
    %2 = stablehlo.broadcast_in_dim %0, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"b"}, {}]>]>} : (tensor<f32>) -> tensor<8x16xf32>
    %3 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %4 = stablehlo.dot_general %1, %2, contracting_dims = [1] x [1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {"b"}]>]>} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x8xf32>
    %5 = stablehlo.add %4, %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {"b"}]>]>} : tensor<8x8xf32>
    %6 = sdy.constant dense<0> : tensor<i32>
    %7:2 = stablehlo.while(%iterArg = %5, %iterArg_0 = %6) : tensor<8x8xf32>, tensor<i32> attributes {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {"b"}]>, <@mesh, []>]>}
    cond {
      %8 = sdy.constant dense<4> : tensor<i32>
      %9 = stablehlo.compare  LT, %iterArg_0, %8 : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %9 : tensor<i1>
    } do {
      %10 = sdy.constant dense<1> : tensor<i32>
      %11 = stablehlo.add %iterArg_0, %10 : tensor<i32>
      %12 = stablehlo.multiply %iterArg, %iterArg {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {"b"}]>]>} : tensor<8x8xf32>
      stablehlo.return %12, %11 : tensor<8x8xf32>, tensor<i32>
    }
    return %3, %5, %7#0 : tensor<8x16xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  }
}
