module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4xf32>, %arg1: tensor<i32>) -> (tensor<4x4xf32> {jax.result_info = "result[0]"}, tensor<4x4xf32> {jax.result_info = "result[1]"}, tensor<i32> {jax.result_info = "result[2]"}, tensor<f32> {jax.result_info = "result[3]"}) {
    %0 = stablehlo.iota dim = 0 : tensor<4x4xi32>
    %1 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %3 = stablehlo.add %0, %2 : tensor<4x4xi32>
    %4 = stablehlo.compare EQ, %3, %1, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %5 = stablehlo.convert %4 : (tensor<4x4xi1>) -> tensor<4x4xf32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %6:4 = stablehlo.while(%iterArg = %arg0, %iterArg_4 = %c_1, %iterArg_5 = %c_0, %iterArg_6 = %5) : tensor<4x4xf32>, tensor<i32>, tensor<i32>, tensor<4x4xf32>
    cond {
      %c_7 = stablehlo.constant dense<7> : tensor<i32>
      %9 = stablehlo.compare LT, %iterArg_4, %c_7, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %9 : tensor<i1>
    } do {
      %9:2 = func.call @closed_call(%iterArg, %iterArg_5, %iterArg_6) : (tensor<4x4xf32>, tensor<i32>, tensor<4x4xf32>) -> (tensor<i32>, tensor<4x4xf32>)
      %c_7 = stablehlo.constant dense<1> : tensor<i32>
      %10 = stablehlo.add %iterArg_4, %c_7 : tensor<i32>
      stablehlo.return %iterArg, %10, %9#0, %9#1 : tensor<4x4xf32>, tensor<i32>, tensor<i32>, tensor<4x4xf32>
    }
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %7:3 = stablehlo.while(%iterArg = %c_2, %iterArg_4 = %arg1, %iterArg_5 = %arg0) : tensor<i32>, tensor<i32>, tensor<4x4xf32>
    cond {
      %9 = stablehlo.compare LT, %iterArg, %iterArg_4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %9 : tensor<i1>
    } do {
      %c_6 = stablehlo.constant dense<1> : tensor<i32>
      %9 = stablehlo.add %iterArg, %c_6 : tensor<i32>
      %10 = stablehlo.sine %iterArg_5 : tensor<4x4xf32>
      %11 = stablehlo.convert %iterArg : (tensor<i32>) -> tensor<f32>
      %12 = stablehlo.broadcast_in_dim %11, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
      %13 = stablehlo.multiply %10, %12 : tensor<4x4xf32>
      %14 = stablehlo.add %iterArg_5, %13 : tensor<4x4xf32>
      stablehlo.return %9, %iterArg_4, %14 : tensor<i32>, tensor<i32>, tensor<4x4xf32>
    }
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %8:2 = stablehlo.while(%iterArg = %c_3, %iterArg_4 = %cst) : tensor<i32>, tensor<f32>
    cond {
      %cst_5 = stablehlo.constant dense<1.000000e+02> : tensor<f32>
      %9 = stablehlo.compare LT, %iterArg_4, %cst_5, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %9 : tensor<i1>
    } do {
      %c_5 = stablehlo.constant dense<1> : tensor<i32>
      %9 = stablehlo.add %iterArg, %c_5 : tensor<i32>
      %cst_6 = stablehlo.constant dense<1.700000e+00> : tensor<f32>
      %10 = stablehlo.multiply %iterArg_4, %cst_6 : tensor<f32>
      %cst_7 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %11 = stablehlo.add %10, %cst_7 : tensor<f32>
      stablehlo.return %9, %11 : tensor<i32>, tensor<f32>
    }
    return %6#3, %7#2, %8#0, %8#1 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<i32>, tensor<f32>
  }
  func.func private @closed_call(%arg0: tensor<4x4xf32>, %arg1: tensor<i32>, %arg2: tensor<4x4xf32>) -> (tensor<i32>, tensor<4x4xf32>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg1, %c : tensor<i32>
    %1 = stablehlo.dot_general %arg2, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %3 = stablehlo.multiply %1, %2 : tensor<4x4xf32>
    %4 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %6 = stablehlo.add %3, %5 : tensor<4x4xf32>
    return %0, %6 : tensor<i32>, tensor<4x4xf32>
  }
}
