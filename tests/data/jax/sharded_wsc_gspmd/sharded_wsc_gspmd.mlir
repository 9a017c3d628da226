module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16x8xf32> {mhlo.sharding = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"}, %arg1: tensor<8x12xf32> {mhlo.sharding = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"}) -> (tensor<12xf32> {jax.result_info = "result[0]", mhlo.sharding = "{devices=[4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"}, tensor<16x8xf32> {jax.result_info = "result[1]", mhlo.sharding = "{replicated}"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x8xf32>, tensor<8x12xf32>) -> tensor<16x12xf32>
    %1 = stablehlo.tanh %0 : tensor<16x12xf32>
    %2 = stablehlo.custom_call @Sharding(%1) {backend_config = "", mhlo.sharding = "{devices=[2,4]<=[8]}"} : (tensor<16x12xf32>) -> tensor<16x12xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<16x12xf32>
    %4 = stablehlo.multiply %2, %3 : tensor<16x12xf32>
    %5 = stablehlo.custom_call @Sharding(%4) {backend_config = "", mhlo.sharding = "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"} : (tensor<16x12xf32>) -> tensor<16x12xf32>
    %6 = stablehlo.transpose %5, dims = [1, 0] : (tensor<16x12xf32>) -> tensor<12x16xf32>
    %7 = stablehlo.custom_call @Sharding(%6) {backend_config = "", mhlo.sharding = "{devices=[1,8]<=[8]}"} : (tensor<12x16xf32>) -> tensor<12x16xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %8 = stablehlo.reduce(%7 init: %cst_0) applies stablehlo.add across dimensions = [1] : (tensor<12x16xf32>, tensor<f32>) -> tensor<12xf32>
    %9 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<8x12xf32>) -> tensor<12x8xf32>
    %10 = stablehlo.dot_general %5, %9, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x12xf32>, tensor<12x8xf32>) -> tensor<16x8xf32>
    return %8, %10 : tensor<12xf32>, tensor<16x8xf32>
  }
}
