module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=8]> {stablehlo.mesh = {axes = [{name = "x", size = 8 : i64}]}}
  func.func public @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, %arg1: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg2: tensor<4x16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}, {}]>}) -> (tensor<8x8xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, tensor<16x8xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4x16x8xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<4x16x8xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<4x16x8xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %4:8 = stablehlo.while(%iterArg = %arg2, %iterArg_9 = %arg0, %iterArg_10 = %c, %iterArg_11 = %arg1, %iterArg_12 = %0, %iterArg_13 = %1, %iterArg_14 = %2, %iterArg_15 = %3) : tensor<4x16x8xf32>, tensor<8x8xf32>, tensor<i32>, tensor<16x8xf32>, tensor<4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>
    cond {
      %c_16 = stablehlo.constant dense<4> : tensor<i32>
      %12 = stablehlo.compare LT, %iterArg_10, %c_16, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %12 : tensor<i1>
    } do {
      %12 = func.call @dynamic_index_in_dim(%iterArg, %iterArg_10) : (tensor<4x16x8xf32>, tensor<i32>) -> tensor<16x8xf32>
      %13:5 = func.call @closed_call(%iterArg_9, %iterArg_11, %12) : (tensor<8x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> (tensor<16x8xf32>, tensor<f32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>)
      %14 = func.call @dynamic_update_index_in_dim(%iterArg_12, %13#1, %iterArg_10) : (tensor<4xf32>, tensor<f32>, tensor<i32>) -> tensor<4xf32>
      %15 = func.call @dynamic_update_index_in_dim_0(%iterArg_13, %13#2, %iterArg_10) : (tensor<4x16x8xf32>, tensor<16x8xf32>, tensor<i32>) -> tensor<4x16x8xf32>
      %16 = func.call @dynamic_update_index_in_dim_0(%iterArg_14, %13#3, %iterArg_10) : (tensor<4x16x8xf32>, tensor<16x8xf32>, tensor<i32>) -> tensor<4x16x8xf32>
      %17 = func.call @dynamic_update_index_in_dim_0(%iterArg_15, %13#4, %iterArg_10) : (tensor<4x16x8xf32>, tensor<16x8xf32>, tensor<i32>) -> tensor<4x16x8xf32>
      %c_16 = stablehlo.constant dense<1> : tensor<i32>
      %18 = stablehlo.add %iterArg_10, %c_16 : tensor<i32>
      stablehlo.return %iterArg, %iterArg_9, %18, %13#0, %14, %15, %16, %17 : tensor<4x16x8xf32>, tensor<8x8xf32>, tensor<i32>, tensor<16x8xf32>, tensor<4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>
    }
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.reduce(%4#4 init: %cst_3) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %6 = stablehlo.reduce(%4#3 init: %cst_4) applies stablehlo.add across dimensions = [0, 1] : (tensor<16x8xf32>, tensor<f32>) -> tensor<f32>
    %7 = stablehlo.add %5, %6 : tensor<f32>
    %cst_5 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<16x8xf32>
    %cst_6 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %10 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %c_8 = stablehlo.constant dense<0> : tensor<i32>
    %11:8 = stablehlo.while(%iterArg = %9, %iterArg_9 = %4#5, %iterArg_10 = %4#6, %iterArg_11 = %4#7, %iterArg_12 = %arg0, %iterArg_13 = %c_8, %iterArg_14 = %10, %iterArg_15 = %8) : tensor<4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<8x8xf32>, tensor<i32>, tensor<8x8xf32>, tensor<16x8xf32>
    cond {
      %c_16 = stablehlo.constant dense<4> : tensor<i32>
      %12 = stablehlo.compare LT, %iterArg_13, %c_16, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %12 : tensor<i1>
    } do {
      %c_16 = stablehlo.constant dense<4> : tensor<i32>
      %12 = stablehlo.subtract %c_16, %iterArg_13 : tensor<i32>
      %c_17 = stablehlo.constant dense<1> : tensor<i32>
      %13 = stablehlo.subtract %12, %c_17 : tensor<i32>
      %14 = func.call @dynamic_index_in_dim_1(%iterArg, %13) : (tensor<4xf32>, tensor<i32>) -> tensor<f32>
      %15 = func.call @dynamic_index_in_dim(%iterArg_9, %13) : (tensor<4x16x8xf32>, tensor<i32>) -> tensor<16x8xf32>
      %16 = func.call @dynamic_index_in_dim(%iterArg_10, %13) : (tensor<4x16x8xf32>, tensor<i32>) -> tensor<16x8xf32>
      %17 = func.call @dynamic_index_in_dim(%iterArg_11, %13) : (tensor<4x16x8xf32>, tensor<i32>) -> tensor<16x8xf32>
      %18:2 = func.call @closed_call_2(%iterArg_12, %iterArg_14, %iterArg_15, %14, %15, %16, %17) : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<16x8xf32>, tensor<f32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> (tensor<8x8xf32>, tensor<16x8xf32>)
      %c_18 = stablehlo.constant dense<1> : tensor<i32>
      %19 = stablehlo.add %iterArg_13, %c_18 : tensor<i32>
      stablehlo.return %iterArg, %iterArg_9, %iterArg_10, %iterArg_11, %iterArg_12, %19, %18#0, %18#1 : tensor<4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<8x8xf32>, tensor<i32>, tensor<8x8xf32>, tensor<16x8xf32>
    }
    return %11#6, %11#7 : tensor<8x8xf32>, tensor<16x8xf32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<4x16x8xf32>, %arg1: tensor<i32>) -> tensor<16x8xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c_0, sizes = [1, 16, 8] : (tensor<4x16x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x16x8xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x16x8xf32>) -> tensor<16x8xf32>
    return %1 : tensor<16x8xf32>
  }
  func.func private @closed_call(%arg0: tensor<8x8xf32>, %arg1: tensor<16x8xf32>, %arg2: tensor<16x8xf32>) -> (tensor<16x8xf32>, tensor<f32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) {
    %0 = stablehlo.dot_general %arg1, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
    %1 = stablehlo.add %0, %arg2 : tensor<16x8xf32>
    %2 = stablehlo.tanh %1 : tensor<16x8xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<16x8xf32>
    %4 = stablehlo.subtract %3, %2 : tensor<16x8xf32>
    %5 = stablehlo.multiply %2, %2 : tensor<16x8xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %6 = stablehlo.reduce(%5 init: %cst_0) applies stablehlo.add across dimensions = [0, 1] : (tensor<16x8xf32>, tensor<f32>) -> tensor<f32>
    return %2, %6, %arg1, %2, %4 : tensor<16x8xf32>, tensor<f32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<4xf32>, %arg1: tensor<f32>, %arg2: tensor<i32>) -> tensor<4xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2 : (tensor<4xf32>, tensor<1xf32>, tensor<i32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @dynamic_update_index_in_dim_0(%arg0: tensor<4x16x8xf32>, %arg1: tensor<16x8xf32>, %arg2: tensor<i32>) -> tensor<4x16x8xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<16x8xf32>) -> tensor<1x16x8xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c_0 : (tensor<4x16x8xf32>, tensor<1x16x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<4x16x8xf32>
    return %1 : tensor<4x16x8xf32>
  }
  func.func private @dynamic_index_in_dim_1(%arg0: tensor<4xf32>, %arg1: tensor<i32>) -> tensor<f32> {
    %0 = stablehlo.dynamic_slice %arg0, %arg1, sizes = [1] : (tensor<4xf32>, tensor<i32>) -> tensor<1xf32>
    %1 = stablehlo.reshape %0 : (tensor<1xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
  func.func private @closed_call_2(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<16x8xf32>, %arg3: tensor<f32>, %arg4: tensor<16x8xf32>, %arg5: tensor<16x8xf32>, %arg6: tensor<16x8xf32>) -> (tensor<8x8xf32>, tensor<16x8xf32>) {
    %0 = stablehlo.broadcast_in_dim %arg3, dims = [] : (tensor<f32>) -> tensor<16x8xf32>
    %1 = stablehlo.multiply %arg5, %0 : tensor<16x8xf32>
    %2 = stablehlo.add %arg2, %1 : tensor<16x8xf32>
    %3 = stablehlo.multiply %0, %arg5 : tensor<16x8xf32>
    %4 = stablehlo.add %2, %3 : tensor<16x8xf32>
    %5 = stablehlo.multiply %4, %arg6 : tensor<16x8xf32>
    %6 = stablehlo.multiply %5, %arg5 : tensor<16x8xf32>
    %7 = stablehlo.add %5, %6 : tensor<16x8xf32>
    %8 = stablehlo.dot_general %7, %arg4, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
    %9 = stablehlo.transpose %8, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %10 = stablehlo.add %arg1, %9 : tensor<8x8xf32>
    %11 = stablehlo.dot_general %7, %arg0, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
    return %10, %11 : tensor<8x8xf32>, tensor<16x8xf32>
  }
}
