module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x6xf32>, %arg1: tensor<2x3xi32>, %arg2: tensor<4xi32>, %arg3: tensor<8x2xi32>, %arg4: tensor<5xi32>, %arg5: tensor<8x3xi32>) -> (tensor<2x3x6xf32> {jax.result_info = "result[0]"}, tensor<4xf32> {jax.result_info = "result[1]"}, tensor<8x2xf32> {jax.result_info = "result[2]"}, tensor<5x6xf32> {jax.result_info = "result[3]"}, tensor<8x5xf32> {jax.result_info = "result[4]"}, tensor<8x4xf32> {jax.result_info = "result[5]"}, tensor<8x3xf32> {jax.result_info = "result[6]"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<2x3xi32>
    %1 = stablehlo.compare LT, %arg1, %0, SIGNED : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
    %c_0 = stablehlo.constant dense<8> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<2x3xi32>
    %3 = stablehlo.add %arg1, %2 : tensor<2x3xi32>
    %4 = stablehlo.select %1, %3, %arg1 : tensor<2x3xi1>, tensor<2x3xi32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0, 1] : (tensor<2x3xi32>) -> tensor<2x3x1xi32>
    %6 = "stablehlo.gather"(%arg0, %5) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 6>}> : (tensor<8x6xf32>, tensor<2x3x1xi32>) -> tensor<2x3x6xf32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %8 = stablehlo.compare LT, %arg2, %7, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %c_2 = stablehlo.constant dense<8> : tensor<i32>
    %9 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %10 = stablehlo.add %arg2, %9 : tensor<4xi32>
    %11 = stablehlo.select %8, %10, %arg2 : tensor<4xi1>, tensor<4xi32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %12 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %13 = stablehlo.compare LT, %arg2, %12, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %c_4 = stablehlo.constant dense<6> : tensor<i32>
    %14 = stablehlo.broadcast_in_dim %c_4, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %15 = stablehlo.add %arg2, %14 : tensor<4xi32>
    %16 = stablehlo.select %13, %15, %arg2 : tensor<4xi1>, tensor<4xi32>
    %17 = stablehlo.broadcast_in_dim %11, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
    %18 = stablehlo.broadcast_in_dim %16, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
    %19 = stablehlo.concatenate %17, %18, dim = 1 : (tensor<4x1xi32>, tensor<4x1xi32>) -> tensor<4x2xi32>
    %20 = "stablehlo.gather"(%arg0, %19) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0, 1], start_index_map = [0, 1], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1>}> : (tensor<8x6xf32>, tensor<4x2xi32>) -> tensor<4xf32>
    %21 = call @take_along_axis(%arg0, %arg3) : (tensor<8x6xf32>, tensor<8x2xi32>) -> tensor<8x2xf32>
    %22 = call @_take(%arg0, %arg4) : (tensor<8x6xf32>, tensor<5xi32>) -> tensor<5x6xf32>
    %23 = call @_take_0(%arg0, %arg4) : (tensor<8x6xf32>, tensor<5xi32>) -> tensor<8x5xf32>
    %c_5 = stablehlo.constant dense<0> : tensor<i32>
    %24 = stablehlo.broadcast_in_dim %c_5, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %25 = stablehlo.compare LT, %arg2, %24, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %c_6 = stablehlo.constant dense<6> : tensor<i32>
    %26 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %27 = stablehlo.add %arg2, %26 : tensor<4xi32>
    %28 = stablehlo.select %25, %27, %arg2 : tensor<4xi1>, tensor<4xi32>
    %29 = stablehlo.broadcast_in_dim %28, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
    %30 = "stablehlo.gather"(%arg0, %29) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 8, 1>}> : (tensor<8x6xf32>, tensor<4x1xi32>) -> tensor<8x4xf32>
    %c_7 = stablehlo.constant dense<0> : tensor<i32>
    %31 = stablehlo.broadcast_in_dim %c_7, dims = [] : (tensor<i32>) -> tensor<8x3xi32>
    %32 = stablehlo.compare LT, %arg5, %31, SIGNED : (tensor<8x3xi32>, tensor<8x3xi32>) -> tensor<8x3xi1>
    %c_8 = stablehlo.constant dense<6> : tensor<i32>
    %33 = stablehlo.broadcast_in_dim %c_8, dims = [] : (tensor<i32>) -> tensor<8x3xi32>
    %34 = stablehlo.add %arg5, %33 : tensor<8x3xi32>
    %35 = stablehlo.select %32, %34, %arg5 : tensor<8x3xi1>, tensor<8x3xi32>
    %36 = stablehlo.broadcast_in_dim %35, dims = [0, 1] : (tensor<8x3xi32>) -> tensor<8x3x1xi32>
    %37 = "stablehlo.gather"(%arg0, %36) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1>}> : (tensor<8x6xf32>, tensor<8x3x1xi32>) -> tensor<8x3xf32>
    return %6, %20, %21, %22, %23, %30, %37 : tensor<2x3x6xf32>, tensor<4xf32>, tensor<8x2xf32>, tensor<5x6xf32>, tensor<8x5xf32>, tensor<8x4xf32>, tensor<8x3xf32>
  }
  func.func private @take_along_axis(%arg0: tensor<8x6xf32>, %arg1: tensor<8x2xi32>) -> tensor<8x2xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<8x2xi32>
    %1 = stablehlo.compare LT, %arg1, %0, SIGNED : (tensor<8x2xi32>, tensor<8x2xi32>) -> tensor<8x2xi1>
    %c_0 = stablehlo.constant dense<6> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<8x2xi32>
    %3 = stablehlo.add %arg1, %2 : tensor<8x2xi32>
    %4 = stablehlo.select %1, %3, %arg1 : tensor<8x2xi1>, tensor<8x2xi32>
    %5 = stablehlo.reshape %4 : (tensor<8x2xi32>) -> tensor<8x2x1xi32>
    %c_1 = stablehlo.constant dense<5> : tensor<1xi32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %6 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<8x2x1xi32>
    %7 = stablehlo.compare GE, %5, %6, SIGNED : (tensor<8x2x1xi32>, tensor<8x2x1xi32>) -> tensor<8x2x1xi1>
    %8 = stablehlo.broadcast_in_dim %c_1, dims = [2] : (tensor<1xi32>) -> tensor<1x1x1xi32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1, 2] : (tensor<1x1x1xi32>) -> tensor<8x2x1xi32>
    %10 = stablehlo.compare LE, %5, %9, SIGNED : (tensor<8x2x1xi32>, tensor<8x2x1xi32>) -> tensor<8x2x1xi1>
    %11 = stablehlo.and %7, %10 : tensor<8x2x1xi1>
    %c_3 = stablehlo.constant dense<true> : tensor<i1>
    %12 = stablehlo.reduce(%11 init: %c_3) applies stablehlo.and across dimensions = [2] : (tensor<8x2x1xi1>, tensor<i1>) -> tensor<8x2xi1>
    %13 = "stablehlo.gather"(%arg0, %5) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1>}> : (tensor<8x6xf32>, tensor<8x2x1xi32>) -> tensor<8x2xf32>
    %cst = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x2xf32>
    %15 = stablehlo.select %12, %13, %14 : tensor<8x2xi1>, tensor<8x2xf32>
    return %15 : tensor<8x2xf32>
  }
  func.func private @_take(%arg0: tensor<8x6xf32>, %arg1: tensor<5xi32>) -> tensor<5x6xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [0] : (tensor<5xi32>) -> tensor<5x1xi32>
    %1 = "stablehlo.gather"(%arg0, %0) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 6>}> : (tensor<8x6xf32>, tensor<5x1xi32>) -> tensor<5x6xf32>
    return %1 : tensor<5x6xf32>
  }
  func.func private @_take_0(%arg0: tensor<8x6xf32>, %arg1: tensor<5xi32>) -> tensor<8x5xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %1 = stablehlo.compare LT, %arg1, %0, SIGNED : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %c_0 = stablehlo.constant dense<6> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %3 = stablehlo.add %arg1, %2 : tensor<5xi32>
    %4 = call @_where(%1, %3, %arg1) : (tensor<5xi1>, tensor<5xi32>, tensor<5xi32>) -> tensor<5xi32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<5xi32>) -> tensor<5x1xi32>
    %c_1 = stablehlo.constant dense<5> : tensor<1xi32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %6 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<5x1xi32>
    %7 = stablehlo.compare GE, %5, %6, SIGNED : (tensor<5x1xi32>, tensor<5x1xi32>) -> tensor<5x1xi1>
    %8 = stablehlo.broadcast_in_dim %c_1, dims = [1] : (tensor<1xi32>) -> tensor<1x1xi32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1] : (tensor<1x1xi32>) -> tensor<5x1xi32>
    %10 = stablehlo.compare LE, %5, %9, SIGNED : (tensor<5x1xi32>, tensor<5x1xi32>) -> tensor<5x1xi1>
    %11 = stablehlo.and %7, %10 : tensor<5x1xi1>
    %c_3 = stablehlo.constant dense<true> : tensor<i1>
    %12 = stablehlo.reduce(%11 init: %c_3) applies stablehlo.and across dimensions = [1] : (tensor<5x1xi1>, tensor<i1>) -> tensor<5xi1>
    %13 = "stablehlo.gather"(%arg0, %5) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 8, 1>}> : (tensor<8x6xf32>, tensor<5x1xi32>) -> tensor<8x5xf32>
    %14 = stablehlo.broadcast_in_dim %12, dims = [1] : (tensor<5xi1>) -> tensor<8x5xi1>
    %cst = stablehlo.constant dense<-1.000000e+00> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x5xf32>
    %16 = stablehlo.select %14, %13, %15 : tensor<8x5xi1>, tensor<8x5xf32>
    return %16 : tensor<8x5xf32>
  }
  func.func private @_where(%arg0: tensor<5xi1>, %arg1: tensor<5xi32>, %arg2: tensor<5xi32>) -> tensor<5xi32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<5xi1>, tensor<5xi32>
    return %0 : tensor<5xi32>
  }
}
