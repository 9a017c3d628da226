module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x4xf32>, %arg1: tensor<i1>, %arg2: tensor<i32>, %arg3: tensor<i32>, %arg4: tensor<i32>) -> (tensor<3x4xf32> {jax.result_info = "result[0]"}, tensor<3x4xf32> {jax.result_info = "result[1]"}, tensor<3x4xf32> {jax.result_info = "result[2]"}, tensor<3x4xf32> {jax.result_info = "result[3]"}, tensor<3x4xf32> {jax.result_info = "result[4]"}) {
    %0 = stablehlo.convert %arg1 : (tensor<i1>) -> tensor<i32>
    %1 = "stablehlo.case"(%0) ({
      %13 = stablehlo.exponential %arg0 : tensor<3x4xf32>
      stablehlo.return %13 : tensor<3x4xf32>
    }, {
      %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %13 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
      %14 = stablehlo.add %arg0, %13 : tensor<3x4xf32>
      stablehlo.return %14 : tensor<3x4xf32>
    }) : (tensor<i32>) -> tensor<3x4xf32>
    %2 = stablehlo.not %arg1 : tensor<i1>
    %3 = stablehlo.slice %arg0 [0:1, 0:4] : (tensor<3x4xf32>) -> tensor<1x4xf32>
    %4 = stablehlo.reshape %3 : (tensor<1x4xf32>) -> tensor<4xf32>
    %5 = stablehlo.convert %2 : (tensor<i1>) -> tensor<i32>
    %6 = "stablehlo.case"(%5) ({
      %13 = stablehlo.broadcast_in_dim %4, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
      %14 = stablehlo.broadcast_in_dim %13, dims = [0, 1] : (tensor<1x4xf32>) -> tensor<3x4xf32>
      %15 = stablehlo.subtract %arg0, %14 : tensor<3x4xf32>
      stablehlo.return %15 : tensor<3x4xf32>
    }, {
      %13 = stablehlo.broadcast_in_dim %4, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
      %14 = stablehlo.broadcast_in_dim %13, dims = [0, 1] : (tensor<1x4xf32>) -> tensor<3x4xf32>
      %15 = stablehlo.multiply %arg0, %14 : tensor<3x4xf32>
      stablehlo.return %15 : tensor<3x4xf32>
    }) : (tensor<i32>) -> tensor<3x4xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<2> : tensor<i32>
    %7 = stablehlo.clamp %c, %arg2, %c_0 : tensor<i32>
    %8 = "stablehlo.case"(%7) ({
      %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %13 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
      %14 = stablehlo.multiply %arg0, %13 : tensor<3x4xf32>
      stablehlo.return %14 : tensor<3x4xf32>
    }, {
      %13 = stablehlo.sine %arg0 : tensor<3x4xf32>
      stablehlo.return %13 : tensor<3x4xf32>
    }, {
      %cst = stablehlo.constant dense<1.000000e+01> : tensor<f32>
      %13 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
      %14 = stablehlo.subtract %arg0, %13 : tensor<3x4xf32>
      stablehlo.return %14 : tensor<3x4xf32>
    }) : (tensor<i32>) -> tensor<3x4xf32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %c_2 = stablehlo.constant dense<2> : tensor<i32>
    %9 = stablehlo.clamp %c_1, %arg3, %c_2 : tensor<i32>
    %10 = "stablehlo.case"(%9) ({
      %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %13 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
      %14 = stablehlo.multiply %arg0, %13 : tensor<3x4xf32>
      stablehlo.return %14 : tensor<3x4xf32>
    }, {
      %13 = stablehlo.sine %arg0 : tensor<3x4xf32>
      stablehlo.return %13 : tensor<3x4xf32>
    }, {
      %cst = stablehlo.constant dense<1.000000e+01> : tensor<f32>
      %13 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
      %14 = stablehlo.subtract %arg0, %13 : tensor<3x4xf32>
      stablehlo.return %14 : tensor<3x4xf32>
    }) : (tensor<i32>) -> tensor<3x4xf32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %c_4 = stablehlo.constant dense<2> : tensor<i32>
    %11 = stablehlo.clamp %c_3, %arg4, %c_4 : tensor<i32>
    %12 = "stablehlo.case"(%11) ({
      %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %13 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
      %14 = stablehlo.multiply %arg0, %13 : tensor<3x4xf32>
      stablehlo.return %14 : tensor<3x4xf32>
    }, {
      %13 = stablehlo.sine %arg0 : tensor<3x4xf32>
      stablehlo.return %13 : tensor<3x4xf32>
    }, {
      %cst = stablehlo.constant dense<1.000000e+01> : tensor<f32>
      %13 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
      %14 = stablehlo.subtract %arg0, %13 : tensor<3x4xf32>
      stablehlo.return %14 : tensor<3x4xf32>
    }) : (tensor<i32>) -> tensor<3x4xf32>
    return %1, %6, %8, %10, %12 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
  }
}
