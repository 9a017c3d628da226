module @jit_body attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x16xf32> {mhlo.sharding = "{devices=[2,4]<=[8]}"}, %arg1: tensor<16x8xf32> {mhlo.sharding = "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"}) -> (tensor<8x16xf32> {jax.result_info = "result[0]"}, tensor<8x16xf32> {jax.result_info = "result[1]"}, tensor<8x16xf32> {jax.result_info = "result[2]"}, tensor<4x16xf32> {jax.result_info = "result[3]"}, tensor<8x16xf32> {jax.result_info = "result[4]"}, tensor<2x64xf32> {jax.result_info = "result[5]"}, tensor<8x8xf32> {jax.result_info = "result[6]"}, tensor<2x4xi32> {jax.result_info = "result[7]"}, tensor<8x8xf32> {jax.result_info = "result[8]"}) {
    %0 = stablehlo.custom_call @Sharding(%arg0) {backend_config = "", mhlo.sharding = "{devices=[2,4]<=[8]}"} : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<8x16xf32>) -> tensor<4x4xf32>
    %2 = stablehlo.custom_call @Sharding(%arg1) {backend_config = "", mhlo.sharding = "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"} : (tensor<16x8xf32>) -> tensor<16x8xf32>
    %3 = stablehlo.custom_call @SPMDFullToShardShape(%2) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<16x8xf32>) -> tensor<4x8xf32>
    %4:9 = call @shmap_body(%1, %3) : (tensor<4x4xf32>, tensor<4x8xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x16xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<1x16xf32>, tensor<4x2xf32>, tensor<1x1xi32>, tensor<4x8xf32>)
    %5 = stablehlo.custom_call @Sharding(%4#0) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %6 = stablehlo.custom_call @SPMDShardToFullShape(%5) {backend_config = "", mhlo.sharding = "{devices=[2,4]<=[8]}"} : (tensor<4x4xf32>) -> tensor<8x16xf32>
    %7 = stablehlo.custom_call @Sharding(%4#1) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %8 = stablehlo.custom_call @SPMDShardToFullShape(%7) {backend_config = "", mhlo.sharding = "{devices=[2,4]<=[8]}"} : (tensor<4x4xf32>) -> tensor<8x16xf32>
    %9 = stablehlo.custom_call @Sharding(%4#2) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %10 = stablehlo.custom_call @SPMDShardToFullShape(%9) {backend_config = "", mhlo.sharding = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"} : (tensor<4x16xf32>) -> tensor<8x16xf32>
    %11 = stablehlo.custom_call @Sharding(%4#3) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %12 = stablehlo.custom_call @SPMDShardToFullShape(%11) {backend_config = "", mhlo.sharding = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"} : (tensor<4x4xf32>) -> tensor<4x16xf32>
    %13 = stablehlo.custom_call @Sharding(%4#4) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %14 = stablehlo.custom_call @SPMDShardToFullShape(%13) {backend_config = "", mhlo.sharding = "{devices=[2,4]<=[8]}"} : (tensor<4x4xf32>) -> tensor<8x16xf32>
    %15 = stablehlo.custom_call @Sharding(%4#5) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<1x16xf32>) -> tensor<1x16xf32>
    %16 = stablehlo.custom_call @SPMDShardToFullShape(%15) {backend_config = "", mhlo.sharding = "{devices=[2,4]<=[8]}"} : (tensor<1x16xf32>) -> tensor<2x64xf32>
    %17 = stablehlo.custom_call @Sharding(%4#6) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<4x2xf32>) -> tensor<4x2xf32>
    %18 = stablehlo.custom_call @SPMDShardToFullShape(%17) {backend_config = "", mhlo.sharding = "{devices=[2,4]<=[8]}"} : (tensor<4x2xf32>) -> tensor<8x8xf32>
    %19 = stablehlo.custom_call @Sharding(%4#7) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<1x1xi32>) -> tensor<1x1xi32>
    %20 = stablehlo.custom_call @SPMDShardToFullShape(%19) {backend_config = "", mhlo.sharding = "{devices=[2,4]<=[8]}"} : (tensor<1x1xi32>) -> tensor<2x4xi32>
    %21 = stablehlo.custom_call @Sharding(%4#8) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %22 = stablehlo.custom_call @SPMDShardToFullShape(%21) {backend_config = "", mhlo.sharding = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"} : (tensor<4x8xf32>) -> tensor<8x8xf32>
    return %6, %8, %10, %12, %14, %16, %18, %20, %22 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>, tensor<8x16xf32>, tensor<2x64xf32>, tensor<8x8xf32>, tensor<2x4xi32>, tensor<8x8xf32>
  }
  func.func private @shmap_body(%arg0: tensor<4x4xf32>, %arg1: tensor<4x8xf32>) -> (tensor<4x4xf32> {jax.result_info = "[('x',), ('y',)]"}, tensor<4x4xf32> {jax.result_info = "[('x',), ('y',)]"}, tensor<4x16xf32> {jax.result_info = "[('x',), None]"}, tensor<4x4xf32> {jax.result_info = "[None, ('y',)]"}, tensor<4x4xf32> {jax.result_info = "[('x',), ('y',)]"}, tensor<1x16xf32> {jax.result_info = "[('x',), ('y',)]"}, tensor<4x2xf32> {jax.result_info = "[('x',), ('y',)]"}, tensor<1x1xi32> {jax.result_info = "[('x',), ('y',)]"}, tensor<4x8xf32> {jax.result_info = "[('x',), None]"}) {
    %0 = "stablehlo.all_reduce"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %22 = stablehlo.add %arg2, %arg3 : tensor<f32>
      stablehlo.return %22 : tensor<f32>
    }) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = "stablehlo.all_reduce"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, use_global_device_ids}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %22 = stablehlo.maximum %arg2, %arg3 : tensor<f32>
      stablehlo.return %22 : tensor<f32>
    }) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = "stablehlo.all_gather"(%arg0) <{all_gather_dim = 1 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> : (tensor<4x4xf32>) -> tensor<4x16xf32>
    %3 = stablehlo.broadcast_in_dim %arg0, dims = [1, 2] : (tensor<4x4xf32>) -> tensor<1x4x4xf32>
    %4 = "stablehlo.all_gather"(%3) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 4], [1, 5], [2, 6], [3, 7]]> : tensor<4x2xi64>, use_global_device_ids}> : (tensor<1x4x4xf32>) -> tensor<2x4x4xf32>
    %5 = "stablehlo.collective_permute"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0], [4, 5], [5, 6], [6, 7], [7, 4]]> : tensor<8x2xi64>}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %6 = "stablehlo.all_to_all"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, concat_dimension = 1 : i64, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, split_count = 4 : i64, split_dimension = 0 : i64}> : (tensor<4x4xf32>) -> tensor<1x16xf32>
    %7 = "stablehlo.reduce_scatter"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, scatter_dimension = 1 : i64, use_global_device_ids}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %22 = stablehlo.add %arg2, %arg3 : tensor<f32>
      stablehlo.return %22 : tensor<f32>
    }) : (tensor<4x8xf32>) -> tensor<4x2xf32>
    %c = stablehlo.constant dense<1> : tensor<ui32>
    %c_0 = stablehlo.constant dense<4> : tensor<ui32>
    %8 = stablehlo.partition_id : tensor<ui32>
    %9 = stablehlo.divide %8, %c : tensor<ui32>
    %10 = stablehlo.remainder %9, %c_0 : tensor<ui32>
    %11 = stablehlo.convert %10 : (tensor<ui32>) -> tensor<i32>
    %c_1 = stablehlo.constant dense<4> : tensor<ui32>
    %c_2 = stablehlo.constant dense<2> : tensor<ui32>
    %12 = stablehlo.partition_id : tensor<ui32>
    %13 = stablehlo.divide %12, %c_1 : tensor<ui32>
    %14 = stablehlo.remainder %13, %c_2 : tensor<ui32>
    %15 = stablehlo.convert %14 : (tensor<ui32>) -> tensor<i32>
    %c_3 = stablehlo.constant dense<10> : tensor<i32>
    %16 = stablehlo.multiply %c_3, %15 : tensor<i32>
    %17 = stablehlo.add %11, %16 : tensor<i32>
    %18 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %19 = "stablehlo.all_reduce"(%18) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %22 = stablehlo.add %arg2, %arg3 : tensor<f32>
      stablehlo.return %22 : tensor<f32>
    }) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %20 = stablehlo.reduce(%4 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    %21 = stablehlo.reshape %17 : (tensor<i32>) -> tensor<1x1xi32>
    return %0, %1, %2, %20, %5, %6, %7, %21, %19 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x16xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<1x16xf32>, tensor<4x2xf32>, tensor<1x1xi32>, tensor<4x8xf32>
  }
}
