// propagate: pipeline
// Shardy's insert-explicit-reshards as its pipeline runs it: an unreduced operand whose user
// keeps fewer unreduced axes gets an sdy.all_reduce of the rest before that user (the
// reshard keeps "c" unreduced, so only "b" is reduced there; "c" at the final reshard); a
// dot whose contracting factor is sharded on axes its result does not keep unreduced gets an
// sdy.all_reduce of them after it (@reduction_factor: "c").
module @pipeline_unreduced_all_reduce {
  sdy.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b", "c"}]>}, %arg1: tensor<8x16xf32>) -> (tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"b", "c"}]>}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}], unreduced={"b", "c"}>]>} : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %1 = sdy.reshard %0 <@mesh, [{"a"}, {}], unreduced={"c"}> : tensor<8x16xf32>
    %2 = stablehlo.add %1, %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}], unreduced={"c"}>]>} : tensor<8x16xf32>
    %3 = sdy.reshard %2 <@mesh, [{"a"}, {}]> : tensor<8x16xf32>
    return %3 : tensor<8x16xf32>
  }
  func.func public @reduction_factor(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b", "c"}]>}, %arg1: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b", "c"}, {}]>}) -> (tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}], unreduced={"b"}>}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {}], unreduced={"b"}>]>} : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    return %0 : tensor<8x16xf32>
  }
}
