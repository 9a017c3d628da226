module @jit_body attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}, %arg1: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}) -> (tensor<8x16xf32> {jax.result_info = "result[0]"}, tensor<8x16xf32> {jax.result_info = "result[1]"}, tensor<8x16xf32> {jax.result_info = "result[2]"}, tensor<4x16xf32> {jax.result_info = "result[3]"}, tensor<8x16xf32> {jax.result_info = "result[4]"}, tensor<2x64xf32> {jax.result_info = "result[5]"}, tensor<8x8xf32> {jax.result_info = "result[6]"}, tensor<2x4xi32> {jax.result_info = "result[7]"}, tensor<8x8xf32> {jax.result_info = "result[8]"}) {
    %0:9 = sdy.manual_computation(%arg0, %arg1) in_shardings=[<@mesh, [{"x"}, {"y"}]>, <@mesh, [{"y"}, {}]>] out_shardings=[<@mesh, [{"x"}, {"y"}]>, <@mesh, [{"x"}, {"y"}]>, <@mesh, [{"x"}, {}]>, <@mesh, [{}, {"y"}]>, <@mesh, [{"x"}, {"y"}]>, <@mesh, [{"x"}, {"y"}]>, <@mesh, [{"x"}, {"y"}]>, <@mesh, [{"x"}, {"y"}]>, <@mesh, [{"x"}, {}]>] manual_axes={"x", "y"} (%arg2: tensor<4x4xf32>, %arg3: tensor<4x8xf32>) {
      %1 = "stablehlo.all_reduce"(%arg2) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> ({
      ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
        %23 = stablehlo.add %arg4, %arg5 : tensor<f32>
        stablehlo.return %23 : tensor<f32>
      }) : (tensor<4x4xf32>) -> tensor<4x4xf32>
      %2 = "stablehlo.all_reduce"(%arg2) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, use_global_device_ids}> ({
      ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
        %23 = stablehlo.maximum %arg4, %arg5 : tensor<f32>
        stablehlo.return %23 : tensor<f32>
      }) : (tensor<4x4xf32>) -> tensor<4x4xf32>
      %3 = "stablehlo.all_gather"(%arg2) <{all_gather_dim = 1 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> : (tensor<4x4xf32>) -> tensor<4x16xf32>
      %4 = stablehlo.broadcast_in_dim %arg2, dims = [1, 2] : (tensor<4x4xf32>) -> tensor<1x4x4xf32>
      %5 = "stablehlo.all_gather"(%4) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 4], [1, 5], [2, 6], [3, 7]]> : tensor<4x2xi64>, use_global_device_ids}> : (tensor<1x4x4xf32>) -> tensor<2x4x4xf32>
      %6 = "stablehlo.collective_permute"(%arg2) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0], [4, 5], [5, 6], [6, 7], [7, 4]]> : tensor<8x2xi64>}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
      %7 = "stablehlo.all_to_all"(%arg2) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, concat_dimension = 1 : i64, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, split_count = 4 : i64, split_dimension = 0 : i64}> : (tensor<4x4xf32>) -> tensor<1x16xf32>
      %8 = "stablehlo.reduce_scatter"(%arg3) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, scatter_dimension = 1 : i64, use_global_device_ids}> ({
      ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
        %23 = stablehlo.add %arg4, %arg5 : tensor<f32>
        stablehlo.return %23 : tensor<f32>
      }) : (tensor<4x8xf32>) -> tensor<4x2xf32>
      %c = stablehlo.constant dense<1> : tensor<ui32>
      %c_0 = stablehlo.constant dense<4> : tensor<ui32>
      %9 = stablehlo.partition_id : tensor<ui32>
      %10 = stablehlo.divide %9, %c : tensor<ui32>
      %11 = stablehlo.remainder %10, %c_0 : tensor<ui32>
      %12 = stablehlo.convert %11 : (tensor<ui32>) -> tensor<i32>
      %c_1 = stablehlo.constant dense<4> : tensor<ui32>
      %c_2 = stablehlo.constant dense<2> : tensor<ui32>
      %13 = stablehlo.partition_id : tensor<ui32>
      %14 = stablehlo.divide %13, %c_1 : tensor<ui32>
      %15 = stablehlo.remainder %14, %c_2 : tensor<ui32>
      %16 = stablehlo.convert %15 : (tensor<ui32>) -> tensor<i32>
      %c_3 = stablehlo.constant dense<10> : tensor<i32>
      %17 = stablehlo.multiply %c_3, %16 : tensor<i32>
      %18 = stablehlo.add %12, %17 : tensor<i32>
      %19 = stablehlo.dot_general %arg2, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
      %20 = "stablehlo.all_reduce"(%19) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> ({
      ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
        %23 = stablehlo.add %arg4, %arg5 : tensor<f32>
        stablehlo.return %23 : tensor<f32>
      }) : (tensor<4x8xf32>) -> tensor<4x8xf32>
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %21 = stablehlo.reduce(%5 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
      %22 = stablehlo.reshape %18 : (tensor<i32>) -> tensor<1x1xi32>
      sdy.return %1, %2, %3, %21, %6, %7, %8, %22, %20 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x16xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<1x16xf32>, tensor<4x2xf32>, tensor<1x1xi32>, tensor<4x8xf32>
    } : (tensor<8x16xf32>, tensor<16x8xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>, tensor<8x16xf32>, tensor<2x64xf32>, tensor<8x8xf32>, tensor<2x4xi32>, tensor<8x8xf32>)
    return %0#0, %0#1, %0#2, %0#3, %0#4, %0#5, %0#6, %0#7, %0#8 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>, tensor<8x16xf32>, tensor<2x64xf32>, tensor<8x8xf32>, tensor<2x4xi32>, tensor<8x8xf32>
  }
}
