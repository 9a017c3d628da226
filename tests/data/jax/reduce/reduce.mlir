module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x6x5xf32>, %arg1: tensor<4x6xi32>, %arg2: tensor<4x6xi1>) -> (tensor<4x5xf32> {jax.result_info = "result[0]"}, tensor<6xf32> {jax.result_info = "result[1]"}, tensor<4x6xf32> {jax.result_info = "result[2]"}, tensor<4x6xf32> {jax.result_info = "result[3]"}, tensor<f32> {jax.result_info = "result[4]"}, tensor<6xi32> {jax.result_info = "result[5]"}, tensor<4xi32> {jax.result_info = "result[6]"}, tensor<4xi1> {jax.result_info = "result[7]"}, tensor<6xi1> {jax.result_info = "result[8]"}, tensor<4xf32> {jax.result_info = "result[9]"}, tensor<4x5xi32> {jax.result_info = "result[10]"}, tensor<4x6xi32> {jax.result_info = "result[11]"}, tensor<i32> {jax.result_info = "result[12]"}, tensor<4x6xf32> {jax.result_info = "result[13]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<4x6x5xf32>, tensor<f32>) -> tensor<4x5xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.reduce(%arg0 init: %cst_0) applies stablehlo.maximum across dimensions = [0, 2] : (tensor<4x6x5xf32>, tensor<f32>) -> tensor<6xf32>
    %cst_1 = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %2 = stablehlo.reduce(%arg0 init: %cst_1) applies stablehlo.minimum across dimensions = [2] : (tensor<4x6x5xf32>, tensor<f32>) -> tensor<4x6xf32>
    %3 = stablehlo.slice %arg0 [0:4, 0:6, 0:2] : (tensor<4x6x5xf32>) -> tensor<4x6x2xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %4 = stablehlo.reduce(%3 init: %cst_2) applies stablehlo.multiply across dimensions = [2] : (tensor<4x6x2xf32>, tensor<f32>) -> tensor<4x6xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.reduce(%arg0 init: %cst_3) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<4x6x5xf32>, tensor<f32>) -> tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %6 = stablehlo.reduce(%arg1 init: %c) applies stablehlo.add across dimensions = [0] : (tensor<4x6xi32>, tensor<i32>) -> tensor<6xi32>
    %c_4 = stablehlo.constant dense<-2147483648> : tensor<i32>
    %7 = stablehlo.reduce(%arg1 init: %c_4) applies stablehlo.maximum across dimensions = [1] : (tensor<4x6xi32>, tensor<i32>) -> tensor<4xi32>
    %c_5 = stablehlo.constant dense<false> : tensor<i1>
    %8 = stablehlo.reduce(%arg2 init: %c_5) applies stablehlo.or across dimensions = [1] : (tensor<4x6xi1>, tensor<i1>) -> tensor<4xi1>
    %c_6 = stablehlo.constant dense<true> : tensor<i1>
    %9 = stablehlo.reduce(%arg2 init: %c_6) applies stablehlo.and across dimensions = [0] : (tensor<4x6xi1>, tensor<i1>) -> tensor<6xi1>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %10 = stablehlo.reduce(%arg0 init: %cst_7) applies stablehlo.add across dimensions = [1, 2] : (tensor<4x6x5xf32>, tensor<f32>) -> tensor<4xf32>
    %cst_8 = stablehlo.constant dense<3.000000e+01> : tensor<f32>
    %11 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %12 = stablehlo.divide %10, %11 : tensor<4xf32>
    %13 = call @argmax(%arg0) : (tensor<4x6x5xf32>) -> tensor<4x5xi32>
    %14 = call @argmin(%arg0) : (tensor<4x6x5xf32>) -> tensor<4x6xi32>
    %15 = stablehlo.reshape %arg1 : (tensor<4x6xi32>) -> tensor<24xi32>
    %16 = call @argmax_0(%15) : (tensor<24xi32>) -> tensor<i32>
    %cst_9 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %17 = stablehlo.reduce(%arg0 init: %cst_9) applies stablehlo.maximum across dimensions = [2] : (tensor<4x6x5xf32>, tensor<f32>) -> tensor<4x6xf32>
    %cst_10 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %18 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<4x6xf32>
    %19 = stablehlo.maximum %18, %17 : tensor<4x6xf32>
    %20 = stablehlo.is_finite %19 : (tensor<4x6xf32>) -> tensor<4x6xi1>
    %cst_11 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %21 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<4x6xf32>
    %22 = stablehlo.select %20, %19, %21 : tensor<4x6xi1>, tensor<4x6xf32>
    %23 = stablehlo.broadcast_in_dim %22, dims = [0, 1] : (tensor<4x6xf32>) -> tensor<4x6x1xf32>
    %24 = stablehlo.broadcast_in_dim %23, dims = [0, 1, 2] : (tensor<4x6x1xf32>) -> tensor<4x6x5xf32>
    %25 = stablehlo.subtract %arg0, %24 : tensor<4x6x5xf32>
    %26 = stablehlo.exponential %25 : tensor<4x6x5xf32>
    %cst_12 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %27 = stablehlo.reduce(%26 init: %cst_12) applies stablehlo.add across dimensions = [2] : (tensor<4x6x5xf32>, tensor<f32>) -> tensor<4x6xf32>
    %28 = stablehlo.sign %27 : tensor<4x6xf32>
    %29 = stablehlo.abs %27 : tensor<4x6xf32>
    %30 = stablehlo.log %29 : tensor<4x6xf32>
    %31 = stablehlo.add %30, %22 : tensor<4x6xf32>
    return %0, %1, %2, %4, %5, %6, %7, %8, %9, %12, %13, %14, %16, %31 : tensor<4x5xf32>, tensor<6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<f32>, tensor<6xi32>, tensor<4xi32>, tensor<4xi1>, tensor<6xi1>, tensor<4xf32>, tensor<4x5xi32>, tensor<4x6xi32>, tensor<i32>, tensor<4x6xf32>
  }
  func.func private @argmax(%arg0: tensor<4x6x5xf32>) -> tensor<4x5xi32> {
    %0 = stablehlo.iota dim = 1 : tensor<4x6x5xi32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c) across dimensions = [1] : (tensor<4x6x5xf32>, tensor<4x6x5xi32>, tensor<f32>, tensor<i32>) -> (tensor<4x5xf32>, tensor<4x5xi32>)
     reducer(%arg1: tensor<f32>, %arg3: tensor<f32>) (%arg2: tensor<i32>, %arg4: tensor<i32>)  {
      %2 = stablehlo.compare GT, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %3 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %4 = stablehlo.or %2, %3 : tensor<i1>
      %5 = stablehlo.compare EQ, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %6 = stablehlo.compare LT, %arg2, %arg4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %7 = stablehlo.and %5, %6 : tensor<i1>
      %8 = stablehlo.or %4, %7 : tensor<i1>
      %9 = stablehlo.select %4, %arg1, %arg3 : tensor<i1>, tensor<f32>
      %10 = stablehlo.select %8, %arg2, %arg4 : tensor<i1>, tensor<i32>
      stablehlo.return %9, %10 : tensor<f32>, tensor<i32>
    }
    return %1#1 : tensor<4x5xi32>
  }
  func.func private @argmin(%arg0: tensor<4x6x5xf32>) -> tensor<4x6xi32> {
    %0 = stablehlo.iota dim = 2 : tensor<4x6x5xi32>
    %cst = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c) across dimensions = [2] : (tensor<4x6x5xf32>, tensor<4x6x5xi32>, tensor<f32>, tensor<i32>) -> (tensor<4x6xf32>, tensor<4x6xi32>)
     reducer(%arg1: tensor<f32>, %arg3: tensor<f32>) (%arg2: tensor<i32>, %arg4: tensor<i32>)  {
      %2 = stablehlo.compare LT, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %3 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %4 = stablehlo.or %2, %3 : tensor<i1>
      %5 = stablehlo.compare EQ, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %6 = stablehlo.compare LT, %arg2, %arg4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %7 = stablehlo.and %5, %6 : tensor<i1>
      %8 = stablehlo.or %4, %7 : tensor<i1>
      %9 = stablehlo.select %4, %arg1, %arg3 : tensor<i1>, tensor<f32>
      %10 = stablehlo.select %8, %arg2, %arg4 : tensor<i1>, tensor<i32>
      stablehlo.return %9, %10 : tensor<f32>, tensor<i32>
    }
    return %1#1 : tensor<4x6xi32>
  }
  func.func private @argmax_0(%arg0: tensor<24xi32>) -> tensor<i32> {
    %0 = stablehlo.iota dim = 0 : tensor<24xi32>
    %c = stablehlo.constant dense<-2147483648> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.reduce(%arg0 init: %c), (%0 init: %c_0) across dimensions = [0] : (tensor<24xi32>, tensor<24xi32>, tensor<i32>, tensor<i32>) -> (tensor<i32>, tensor<i32>)
     reducer(%arg1: tensor<i32>, %arg3: tensor<i32>) (%arg2: tensor<i32>, %arg4: tensor<i32>)  {
      %2 = stablehlo.compare GT, %arg1, %arg3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %3 = stablehlo.compare NE, %arg1, %arg1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %4 = stablehlo.or %2, %3 : tensor<i1>
      %5 = stablehlo.compare EQ, %arg1, %arg3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %6 = stablehlo.compare LT, %arg2, %arg4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %7 = stablehlo.and %5, %6 : tensor<i1>
      %8 = stablehlo.or %4, %7 : tensor<i1>
      %9 = stablehlo.select %4, %arg1, %arg3 : tensor<i1>, tensor<i32>
      %10 = stablehlo.select %8, %arg2, %arg4 : tensor<i1>, tensor<i32>
      stablehlo.return %9, %10 : tensor<i32>, tensor<i32>
    }
    return %1#1 : tensor<i32>
  }
}
