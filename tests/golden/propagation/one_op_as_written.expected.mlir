module @one_op_as_written {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<2x1x13xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}, {}]>}, %arg1: tensor<2x4xi64> {sdy.sharding = #sdy.sharding<@mesh, [{"b"}, {}]>}, %arg2: tensor<2x4xi64> {sdy.sharding = #sdy.sharding<@mesh, [{"b", ?}, {?}]>}) -> (tensor<2x64x13xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}, {?}, {?}]>}, tensor<4x2xi64>, tensor<4x2xi64>) {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a", ?}, {?}, {?}]>]>} : (tensor<2x1x13xf32>) -> tensor<2x64x13xf32>
    %1:2 = "stablehlo.all_to_all"(%arg1, %arg2) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, concat_dimension = 0 : i64, split_count = 2 : i64, split_dimension = 1 : i64}> : (tensor<2x4xi64>, tensor<2x4xi64>) -> (tensor<4x2xi64>, tensor<4x2xi64>)
    return %0, %1#0, %1#1 : tensor<2x64x13xf32>, tensor<4x2xi64>, tensor<4x2xi64>
  }
}
