module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x5xi1>, %arg1: tensor<3x5xi1>, %arg2: tensor<3x5xui8>, %arg3: tensor<3x5xui8>, %arg4: tensor<3x5xi8>) -> (tensor<3x5xi1> {jax.result_info = "result[0]"}, tensor<3x5xi1> {jax.result_info = "result[1]"}, tensor<3x5xi1> {jax.result_info = "result[2]"}, tensor<3x5xi1> {jax.result_info = "result[3]"}, tensor<3x5xui8> {jax.result_info = "result[4]"}, tensor<3x5xui8> {jax.result_info = "result[5]"}, tensor<3x5xui8> {jax.result_info = "result[6]"}, tensor<3x5xi8> {jax.result_info = "result[7]"}, tensor<3x5xi8> {jax.result_info = "result[8]"}, tensor<3x5xui8> {jax.result_info = "result[9]"}, tensor<3x5xi8> {jax.result_info = "result[10]"}) {
    %0 = stablehlo.and %arg0, %arg1 : tensor<3x5xi1>
    %1 = stablehlo.or %arg0, %arg1 : tensor<3x5xi1>
    %2 = stablehlo.xor %arg0, %arg1 : tensor<3x5xi1>
    %3 = stablehlo.not %arg0 : tensor<3x5xi1>
    %4 = stablehlo.add %arg2, %arg3 : tensor<3x5xui8>
    %5 = stablehlo.multiply %arg2, %arg3 : tensor<3x5xui8>
    %6 = stablehlo.subtract %arg2, %arg3 : tensor<3x5xui8>
    %7 = stablehlo.add %arg4, %arg4 : tensor<3x5xi8>
    %c = stablehlo.constant dense<3> : tensor<i8>
    %8 = call @floor_divide(%arg4, %c) : (tensor<3x5xi8>, tensor<i8>) -> tensor<3x5xi8>
    %9 = call @_where_0(%arg0, %arg2, %arg3) : (tensor<3x5xi1>, tensor<3x5xui8>, tensor<3x5xui8>) -> tensor<3x5xui8>
    %c_0 = stablehlo.constant dense<2> : tensor<i8>
    %10 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i8>) -> tensor<3x5xi8>
    %11 = stablehlo.shift_right_arithmetic %arg4, %10 : tensor<3x5xi8>
    return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %11 : tensor<3x5xi1>, tensor<3x5xi1>, tensor<3x5xi1>, tensor<3x5xi1>, tensor<3x5xui8>, tensor<3x5xui8>, tensor<3x5xui8>, tensor<3x5xi8>, tensor<3x5xi8>, tensor<3x5xui8>, tensor<3x5xi8>
  }
  func.func private @floor_divide(%arg0: tensor<3x5xi8>, %arg1: tensor<i8>) -> tensor<3x5xi8> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<i8>) -> tensor<3x5xi8>
    %1 = stablehlo.divide %arg0, %0 : tensor<3x5xi8>
    %2 = stablehlo.sign %arg0 : tensor<3x5xi8>
    %3 = stablehlo.sign %arg1 : tensor<i8>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<i8>) -> tensor<3x5xi8>
    %5 = stablehlo.compare NE, %2, %4, SIGNED : (tensor<3x5xi8>, tensor<3x5xi8>) -> tensor<3x5xi1>
    %6 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<i8>) -> tensor<3x5xi8>
    %7 = stablehlo.remainder %arg0, %6 : tensor<3x5xi8>
    %c = stablehlo.constant dense<0> : tensor<i8>
    %8 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i8>) -> tensor<3x5xi8>
    %9 = stablehlo.compare NE, %7, %8, SIGNED : (tensor<3x5xi8>, tensor<3x5xi8>) -> tensor<3x5xi1>
    %10 = stablehlo.and %5, %9 : tensor<3x5xi1>
    %c_0 = stablehlo.constant dense<1> : tensor<i8>
    %11 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i8>) -> tensor<3x5xi8>
    %12 = stablehlo.subtract %1, %11 : tensor<3x5xi8>
    %13 = call @_where(%10, %12, %1) : (tensor<3x5xi1>, tensor<3x5xi8>, tensor<3x5xi8>) -> tensor<3x5xi8>
    return %13 : tensor<3x5xi8>
  }
  func.func private @_where(%arg0: tensor<3x5xi1>, %arg1: tensor<3x5xi8>, %arg2: tensor<3x5xi8>) -> tensor<3x5xi8> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<3x5xi1>, tensor<3x5xi8>
    return %0 : tensor<3x5xi8>
  }
  func.func private @_where_0(%arg0: tensor<3x5xi1>, %arg1: tensor<3x5xui8>, %arg2: tensor<3x5xui8>) -> tensor<3x5xui8> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<3x5xi1>, tensor<3x5xui8>
    return %0 : tensor<3x5xui8>
  }
}
