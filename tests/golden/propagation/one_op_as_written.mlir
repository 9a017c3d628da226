// propagate: basic
// A broadcast_in_dim expanding a size-1 dim and a variadic all_to_all (HLO writes each as
// several ops) propagate as those ops and print back as written, with their shardings: "a"
// on dim 0 crosses the broadcast; the all_to_all's operands share their factors as in
// Shardy's rule, so "b" on the concat dim of one reaches the other (not the results: the
// concat dim is a factor of its own there).
module @one_op_as_written {
  sdy.mesh @mesh = <["a"=2, "b"=2]>
  func.func @main(%arg0: tensor<2x1x13xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}, {}]>}, %arg1: tensor<2x4xi64> {sdy.sharding = #sdy.sharding<@mesh, [{"b"}, {}]>}, %arg2: tensor<2x4xi64>) -> (tensor<2x64x13xf32>, tensor<4x2xi64>, tensor<4x2xi64>) {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [0, 1, 2] : (tensor<2x1x13xf32>) -> tensor<2x64x13xf32>
    %1:2 = "stablehlo.all_to_all"(%arg1, %arg2) {split_dimension = 1 : i64, concat_dimension = 0 : i64, split_count = 2 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2x4xi64>, tensor<2x4xi64>) -> (tensor<4x2xi64>, tensor<4x2xi64>)
    return %0, %1#0, %1#1 : tensor<2x64x13xf32>, tensor<4x2xi64>, tensor<4x2xi64>
  }
}
