module @rules_one_op_as_written {
  func.func @main(%arg0: tensor<2x3x5x1x7xf32>, %arg1: tensor<2x4xi64>, %arg2: tensor<2x4xi64>) -> (tensor<2x5x3x11x7x13xf32>, tensor<4x2xi64>, tensor<4x2xi64>) {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [0, 2, 1, 3, 4] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k, j, l, n])->([i, j, k, m, n, o]) {i=2, j=5, k=3, l=1, m=11, n=7, o=13}>} : (tensor<2x3x5x1x7xf32>) -> tensor<2x5x3x11x7x13xf32>
    %1:2 = "stablehlo.all_to_all"(%arg1, %arg2) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, concat_dimension = 0 : i64, split_count = 2 : i64, split_dimension = 1 : i64}> {sdy.sharding_rule = #sdy.op_sharding_rule<([k, i], [k, i])->([l, j], [l, j]) {i=4, j=2, k=2, l=4} need_replication={i, j, k, l}>} : (tensor<2x4xi64>, tensor<2x4xi64>) -> (tensor<4x2xi64>, tensor<4x2xi64>)
    return %0, %1#0, %1#1 : tensor<2x5x3x11x7x13xf32>, tensor<4x2xi64>, tensor<4x2xi64>
  }
}
