module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x8xi32>, %arg1: tensor<2x8xi32>, %arg2: tensor<2x8xi32>, %arg3: tensor<2x8xui32>) -> (tensor<2x8xi32> {jax.result_info = "result[0]"}, tensor<2x8xi32> {jax.result_info = "result[1]"}, tensor<2x8xi32> {jax.result_info = "result[2]"}, tensor<2x8xi32> {jax.result_info = "result[3]"}, tensor<2x8xi32> {jax.result_info = "result[4]"}, tensor<2x8xi32> {jax.result_info = "result[5]"}, tensor<2x8xi32> {jax.result_info = "result[6]"}, tensor<2x8xi32> {jax.result_info = "result[7]"}, tensor<2x8xi32> {jax.result_info = "result[8]"}, tensor<2x8xi32> {jax.result_info = "result[9]"}, tensor<2x8xi32> {jax.result_info = "result[10]"}, tensor<2x8xi32> {jax.result_info = "result[11]"}, tensor<2x8xi32> {jax.result_info = "result[12]"}, tensor<2x8xi32> {jax.result_info = "result[13]"}, tensor<2x8xi32> {jax.result_info = "result[14]"}, tensor<2x8xi32> {jax.result_info = "result[15]"}, tensor<2x8xi32> {jax.result_info = "result[16]"}, tensor<2x8xi1> {jax.result_info = "result[17]"}, tensor<2x8xi1> {jax.result_info = "result[18]"}, tensor<2x8xui32> {jax.result_info = "result[19]"}, tensor<2x8xui32> {jax.result_info = "result[20]"}, tensor<2x8xui32> {jax.result_info = "result[21]"}, tensor<2x8xui32> {jax.result_info = "result[22]"}) {
    %0 = stablehlo.divide %arg0, %arg1 : tensor<2x8xi32>
    %1 = stablehlo.remainder %arg0, %arg1 : tensor<2x8xi32>
    %2 = call @floor_divide(%arg0, %arg1) : (tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<2x8xi32>
    %3 = call @remainder(%arg0, %arg1) : (tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<2x8xi32>
    %4 = stablehlo.shift_left %arg0, %arg2 : tensor<2x8xi32>
    %5 = stablehlo.shift_right_arithmetic %arg0, %arg2 : tensor<2x8xi32>
    %6 = stablehlo.shift_right_logical %arg0, %arg2 : tensor<2x8xi32>
    %7 = stablehlo.and %arg0, %arg1 : tensor<2x8xi32>
    %8 = stablehlo.or %arg0, %arg1 : tensor<2x8xi32>
    %9 = stablehlo.xor %arg0, %arg1 : tensor<2x8xi32>
    %10 = stablehlo.not %arg0 : tensor<2x8xi32>
    %11 = stablehlo.popcnt %arg0 : tensor<2x8xi32>
    %12 = stablehlo.count_leading_zeros %arg0 : tensor<2x8xi32>
    %13 = stablehlo.abs %arg0 : tensor<2x8xi32>
    %14 = stablehlo.negate %arg0 : tensor<2x8xi32>
    %15 = stablehlo.maximum %arg0, %arg1 : tensor<2x8xi32>
    %16 = stablehlo.minimum %arg0, %arg1 : tensor<2x8xi32>
    %17 = stablehlo.compare LT, %arg0, %arg1, SIGNED : (tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<2x8xi1>
    %18 = stablehlo.reverse %arg3, dims = [0] : tensor<2x8xui32>
    %19 = stablehlo.compare LT, %arg3, %18, UNSIGNED : (tensor<2x8xui32>, tensor<2x8xui32>) -> tensor<2x8xi1>
    %20 = stablehlo.convert %arg2 : (tensor<2x8xi32>) -> tensor<2x8xui32>
    %21 = stablehlo.shift_right_logical %arg3, %20 : tensor<2x8xui32>
    %c = stablehlo.constant dense<3> : tensor<ui32>
    %22 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<ui32>) -> tensor<2x8xui32>
    %23 = stablehlo.divide %arg3, %22 : tensor<2x8xui32>
    %24 = stablehlo.popcnt %arg3 : tensor<2x8xui32>
    %25 = stablehlo.count_leading_zeros %arg3 : tensor<2x8xui32>
    return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %19, %21, %23, %24, %25 : tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xui32>, tensor<2x8xui32>, tensor<2x8xui32>, tensor<2x8xui32>
  }
  func.func private @floor_divide(%arg0: tensor<2x8xi32>, %arg1: tensor<2x8xi32>) -> tensor<2x8xi32> {
    %0 = stablehlo.divide %arg0, %arg1 : tensor<2x8xi32>
    %1 = stablehlo.sign %arg0 : tensor<2x8xi32>
    %2 = stablehlo.sign %arg1 : tensor<2x8xi32>
    %3 = stablehlo.compare NE, %1, %2, SIGNED : (tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<2x8xi1>
    %4 = stablehlo.remainder %arg0, %arg1 : tensor<2x8xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<2x8xi32>
    %6 = stablehlo.compare NE, %4, %5, SIGNED : (tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<2x8xi1>
    %7 = stablehlo.and %3, %6 : tensor<2x8xi1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %8 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<2x8xi32>
    %9 = stablehlo.subtract %0, %8 : tensor<2x8xi32>
    %10 = call @_where(%7, %9, %0) : (tensor<2x8xi1>, tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<2x8xi32>
    return %10 : tensor<2x8xi32>
  }
  func.func private @_where(%arg0: tensor<2x8xi1>, %arg1: tensor<2x8xi32>, %arg2: tensor<2x8xi32>) -> tensor<2x8xi32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<2x8xi1>, tensor<2x8xi32>
    return %0 : tensor<2x8xi32>
  }
  func.func private @remainder(%arg0: tensor<2x8xi32>, %arg1: tensor<2x8xi32>) -> tensor<2x8xi32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<2x8xi32>
    %1 = stablehlo.compare EQ, %arg1, %0, SIGNED : (tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<2x8xi1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<2x8xi32>
    %3 = call @_where(%1, %2, %arg1) : (tensor<2x8xi1>, tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<2x8xi32>
    %4 = stablehlo.remainder %arg0, %3 : tensor<2x8xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<2x8xi32>
    %6 = stablehlo.compare NE, %4, %5, SIGNED : (tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<2x8xi1>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<2x8xi32>
    %8 = stablehlo.compare LT, %4, %7, SIGNED : (tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<2x8xi1>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<2x8xi32>
    %10 = stablehlo.compare LT, %3, %9, SIGNED : (tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<2x8xi1>
    %11 = stablehlo.compare NE, %8, %10, UNSIGNED : (tensor<2x8xi1>, tensor<2x8xi1>) -> tensor<2x8xi1>
    %12 = stablehlo.and %11, %6 : tensor<2x8xi1>
    %13 = stablehlo.add %4, %3 : tensor<2x8xi32>
    %14 = stablehlo.select %12, %13, %4 : tensor<2x8xi1>, tensor<2x8xi32>
    return %14 : tensor<2x8xi32>
  }
}
