module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x4xf64>, %arg1: tensor<3x4xi64>, %arg2: tensor<3x4xui64>, %arg3: tensor<3x4xf32>) -> (tensor<3x4xf64> {jax.result_info = "result[0]"}, tensor<3x4xf32> {jax.result_info = "result[1]"}, tensor<3x4xf64> {jax.result_info = "result[2]"}, tensor<3x4xi64> {jax.result_info = "result[3]"}, tensor<3x4xf64> {jax.result_info = "result[4]"}, tensor<3x4xi64> {jax.result_info = "result[5]"}, tensor<3x4xi64> {jax.result_info = "result[6]"}, tensor<3x4xui64> {jax.result_info = "result[7]"}, tensor<3x4xui64> {jax.result_info = "result[8]"}, tensor<3x4xi64> {jax.result_info = "result[9]"}, tensor<3x4xui64> {jax.result_info = "result[10]"}, tensor<4xf64> {jax.result_info = "result[11]"}, tensor<3x3xf64> {jax.result_info = "result[12]"}, tensor<3x4xi64> {jax.result_info = "result[13]"}, tensor<3x4xi32> {jax.result_info = "result[14]"}, tensor<3x4xf64> {jax.result_info = "result[15]"}, tensor<3x4xf16> {jax.result_info = "result[16]"}, tensor<5xi64> {jax.result_info = "result[17]"}) {
    %0 = stablehlo.exponential %arg0 : tensor<3x4xf64>
    %1 = stablehlo.convert %arg0 : (tensor<3x4xf64>) -> tensor<3x4xf32>
    %2 = stablehlo.convert %arg3 : (tensor<3x4xf32>) -> tensor<3x4xf64>
    %3 = stablehlo.convert %arg0 : (tensor<3x4xf64>) -> tensor<3x4xi64>
    %4 = stablehlo.convert %arg1 : (tensor<3x4xi64>) -> tensor<3x4xf64>
    %c = stablehlo.constant dense<3> : tensor<i64>
    %5 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i64>) -> tensor<3x4xi64>
    %6 = stablehlo.multiply %arg1, %5 : tensor<3x4xi64>
    %c_0 = stablehlo.constant dense<7> : tensor<i64>
    %7 = call @floor_divide(%arg1, %c_0) : (tensor<3x4xi64>, tensor<i64>) -> tensor<3x4xi64>
    %8 = stablehlo.add %6, %7 : tensor<3x4xi64>
    %c_1 = stablehlo.constant dense<-5> : tensor<i64>
    %9 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i64>) -> tensor<3x4xi64>
    %10 = stablehlo.remainder %arg1, %9 : tensor<3x4xi64>
    %c_2 = stablehlo.constant dense<3> : tensor<ui64>
    %11 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<ui64>) -> tensor<3x4xui64>
    %12 = stablehlo.shift_right_logical %arg2, %11 : tensor<3x4xui64>
    %c_3 = stablehlo.constant dense<60> : tensor<ui64>
    %13 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<ui64>) -> tensor<3x4xui64>
    %14 = stablehlo.shift_right_logical %arg2, %13 : tensor<3x4xui64>
    %15 = stablehlo.popcnt %arg1 : tensor<3x4xi64>
    %16 = stablehlo.count_leading_zeros %arg2 : tensor<3x4xui64>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f64>
    %17 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<3x4xf64>, tensor<f64>) -> tensor<4xf64>
    %18 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<3x4xf64>) -> tensor<4x3xf64>
    %19 = stablehlo.dot_general %arg0, %18, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<3x4xf64>, tensor<4x3xf64>) -> tensor<3x3xf64>
    %20 = stablehlo.bitcast_convert %arg0 : (tensor<3x4xf64>) -> tensor<3x4xi64>
    %21 = stablehlo.convert %arg1 : (tensor<3x4xi64>) -> tensor<3x4xi32>
    %22 = stablehlo.convert %arg2 : (tensor<3x4xui64>) -> tensor<3x4xf64>
    %23 = stablehlo.convert %arg0 : (tensor<3x4xf64>) -> tensor<3x4xf16>
    %24 = stablehlo.iota dim = 0 : tensor<5xi64>
    return %0, %1, %2, %3, %4, %8, %10, %12, %14, %15, %16, %17, %19, %20, %21, %22, %23, %24 : tensor<3x4xf64>, tensor<3x4xf32>, tensor<3x4xf64>, tensor<3x4xi64>, tensor<3x4xf64>, tensor<3x4xi64>, tensor<3x4xi64>, tensor<3x4xui64>, tensor<3x4xui64>, tensor<3x4xi64>, tensor<3x4xui64>, tensor<4xf64>, tensor<3x3xf64>, tensor<3x4xi64>, tensor<3x4xi32>, tensor<3x4xf64>, tensor<3x4xf16>, tensor<5xi64>
  }
  func.func private @floor_divide(%arg0: tensor<3x4xi64>, %arg1: tensor<i64>) -> tensor<3x4xi64> {
    %0 = stablehlo.convert %arg1 : tensor<i64>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<i64>) -> tensor<3x4xi64>
    %2 = stablehlo.divide %arg0, %1 : tensor<3x4xi64>
    %3 = stablehlo.sign %arg0 : tensor<3x4xi64>
    %4 = stablehlo.sign %0 : tensor<i64>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<i64>) -> tensor<3x4xi64>
    %6 = stablehlo.compare NE, %3, %5, SIGNED : (tensor<3x4xi64>, tensor<3x4xi64>) -> tensor<3x4xi1>
    %7 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<i64>) -> tensor<3x4xi64>
    %8 = stablehlo.remainder %arg0, %7 : tensor<3x4xi64>
    %c = stablehlo.constant dense<0> : tensor<i64>
    %9 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i64>) -> tensor<3x4xi64>
    %10 = stablehlo.compare NE, %8, %9, SIGNED : (tensor<3x4xi64>, tensor<3x4xi64>) -> tensor<3x4xi1>
    %11 = stablehlo.and %6, %10 : tensor<3x4xi1>
    %c_0 = stablehlo.constant dense<1> : tensor<i64>
    %12 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i64>) -> tensor<3x4xi64>
    %13 = stablehlo.subtract %2, %12 : tensor<3x4xi64>
    %14 = call @_where(%11, %13, %2) : (tensor<3x4xi1>, tensor<3x4xi64>, tensor<3x4xi64>) -> tensor<3x4xi64>
    return %14 : tensor<3x4xi64>
  }
  func.func private @_where(%arg0: tensor<3x4xi1>, %arg1: tensor<3x4xi64>, %arg2: tensor<3x4xi64>) -> tensor<3x4xi64> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<3x4xi1>, tensor<3x4xi64>
    return %0 : tensor<3x4xi64>
  }
}
