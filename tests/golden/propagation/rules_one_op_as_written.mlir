// propagate: rules
// StableHLO ops that HLO writes as several ops (a broadcast_in_dim expanding a size-1 dim or
// with unsorted dims, an all_to_all whose concat dim is not its split dim, a variadic one)
// print back as written, with the one op's rule (Shardy's op_sharding_rule_registry).
module @rules_one_op_as_written {
  func.func @main(%arg0: tensor<2x3x5x1x7xf32>, %arg1: tensor<2x4xi64>, %arg2: tensor<2x4xi64>) -> (tensor<2x5x3x11x7x13xf32>, tensor<4x2xi64>, tensor<4x2xi64>) {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [0, 2, 1, 3, 4] : (tensor<2x3x5x1x7xf32>) -> tensor<2x5x3x11x7x13xf32>
    %1:2 = "stablehlo.all_to_all"(%arg1, %arg2) {split_dimension = 1 : i64, concat_dimension = 0 : i64, split_count = 2 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2x4xi64>, tensor<2x4xi64>) -> (tensor<4x2xi64>, tensor<4x2xi64>)
    return %0, %1#0, %1#1 : tensor<2x5x3x11x7x13xf32>, tensor<4x2xi64>, tensor<4x2xi64>
  }
}
