module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<6x4xf32>, %arg1: tensor<5xi32>, %arg2: tensor<5x4xf32>, %arg3: tensor<5xi32>, %arg4: tensor<4xi32>, %arg5: tensor<4xi32>, %arg6: tensor<4xf32>, %arg7: tensor<6x3xi32>, %arg8: tensor<6x3xf32>) -> (tensor<6x4xf32> {jax.result_info = "result[0]"}, tensor<6x4xf32> {jax.result_info = "result[1]"}, tensor<6x4xf32> {jax.result_info = "result[2]"}, tensor<6x4xf32> {jax.result_info = "result[3]"}, tensor<6x4xf32> {jax.result_info = "result[4]"}, tensor<6x4xf32> {jax.result_info = "result[5]"}, tensor<6x4xf32> {jax.result_info = "result[6]"}, tensor<6x4xf32> {jax.result_info = "result[7]"}, tensor<6x4xf32> {jax.result_info = "result[8]"}, tensor<7xi32> {jax.result_info = "result[9]"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %1 = stablehlo.compare LT, %arg1, %0, SIGNED : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %c_0 = stablehlo.constant dense<6> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %3 = stablehlo.add %arg1, %2 : tensor<5xi32>
    %4 = stablehlo.select %1, %3, %arg1 : tensor<5xi1>, tensor<5xi32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<5xi32>) -> tensor<5x1xi32>
    %6 = "stablehlo.scatter"(%arg0, %5, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg9: tensor<f32>, %arg10: tensor<f32>):
      %79 = stablehlo.add %arg9, %arg10 : tensor<f32>
      stablehlo.return %79 : tensor<f32>
    }) : (tensor<6x4xf32>, tensor<5x1xi32>, tensor<5x4xf32>) -> tensor<6x4xf32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %8 = stablehlo.compare LT, %arg1, %7, SIGNED : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %c_2 = stablehlo.constant dense<6> : tensor<i32>
    %9 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %10 = stablehlo.add %arg1, %9 : tensor<5xi32>
    %11 = stablehlo.select %8, %10, %arg1 : tensor<5xi1>, tensor<5xi32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [0] : (tensor<5xi32>) -> tensor<5x1xi32>
    %13 = "stablehlo.scatter"(%arg0, %12, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg9: tensor<f32>, %arg10: tensor<f32>):
      stablehlo.return %arg10 : tensor<f32>
    }) : (tensor<6x4xf32>, tensor<5x1xi32>, tensor<5x4xf32>) -> tensor<6x4xf32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %14 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %15 = stablehlo.compare LT, %arg1, %14, SIGNED : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %c_4 = stablehlo.constant dense<6> : tensor<i32>
    %16 = stablehlo.broadcast_in_dim %c_4, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %17 = stablehlo.add %arg1, %16 : tensor<5xi32>
    %18 = stablehlo.select %15, %17, %arg1 : tensor<5xi1>, tensor<5xi32>
    %19 = stablehlo.broadcast_in_dim %18, dims = [0] : (tensor<5xi32>) -> tensor<5x1xi32>
    %20 = "stablehlo.scatter"(%arg0, %19, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg9: tensor<f32>, %arg10: tensor<f32>):
      %79 = stablehlo.maximum %arg9, %arg10 : tensor<f32>
      stablehlo.return %79 : tensor<f32>
    }) : (tensor<6x4xf32>, tensor<5x1xi32>, tensor<5x4xf32>) -> tensor<6x4xf32>
    %c_5 = stablehlo.constant dense<0> : tensor<i32>
    %21 = stablehlo.broadcast_in_dim %c_5, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %22 = stablehlo.compare LT, %arg1, %21, SIGNED : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %c_6 = stablehlo.constant dense<6> : tensor<i32>
    %23 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %24 = stablehlo.add %arg1, %23 : tensor<5xi32>
    %25 = stablehlo.select %22, %24, %arg1 : tensor<5xi1>, tensor<5xi32>
    %26 = stablehlo.broadcast_in_dim %25, dims = [0] : (tensor<5xi32>) -> tensor<5x1xi32>
    %27 = "stablehlo.scatter"(%arg0, %26, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg9: tensor<f32>, %arg10: tensor<f32>):
      %79 = stablehlo.minimum %arg9, %arg10 : tensor<f32>
      stablehlo.return %79 : tensor<f32>
    }) : (tensor<6x4xf32>, tensor<5x1xi32>, tensor<5x4xf32>) -> tensor<6x4xf32>
    %c_7 = stablehlo.constant dense<0> : tensor<i32>
    %28 = stablehlo.broadcast_in_dim %c_7, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %29 = stablehlo.compare LT, %arg1, %28, SIGNED : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %c_8 = stablehlo.constant dense<6> : tensor<i32>
    %30 = stablehlo.broadcast_in_dim %c_8, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %31 = stablehlo.add %arg1, %30 : tensor<5xi32>
    %32 = stablehlo.select %29, %31, %arg1 : tensor<5xi1>, tensor<5xi32>
    %33 = stablehlo.broadcast_in_dim %32, dims = [0] : (tensor<5xi32>) -> tensor<5x1xi32>
    %34 = "stablehlo.scatter"(%arg0, %33, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg9: tensor<f32>, %arg10: tensor<f32>):
      %79 = stablehlo.multiply %arg9, %arg10 : tensor<f32>
      stablehlo.return %79 : tensor<f32>
    }) : (tensor<6x4xf32>, tensor<5x1xi32>, tensor<5x4xf32>) -> tensor<6x4xf32>
    %c_9 = stablehlo.constant dense<0> : tensor<i32>
    %35 = stablehlo.broadcast_in_dim %c_9, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %36 = stablehlo.compare LT, %arg3, %35, SIGNED : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %c_10 = stablehlo.constant dense<6> : tensor<i32>
    %37 = stablehlo.broadcast_in_dim %c_10, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %38 = stablehlo.add %arg3, %37 : tensor<5xi32>
    %39 = stablehlo.select %36, %38, %arg3 : tensor<5xi1>, tensor<5xi32>
    %40 = stablehlo.broadcast_in_dim %39, dims = [0] : (tensor<5xi32>) -> tensor<5x1xi32>
    %41 = "stablehlo.scatter"(%arg0, %40, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg9: tensor<f32>, %arg10: tensor<f32>):
      %79 = stablehlo.add %arg9, %arg10 : tensor<f32>
      stablehlo.return %79 : tensor<f32>
    }) : (tensor<6x4xf32>, tensor<5x1xi32>, tensor<5x4xf32>) -> tensor<6x4xf32>
    %c_11 = stablehlo.constant dense<0> : tensor<i32>
    %42 = stablehlo.broadcast_in_dim %c_11, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %43 = stablehlo.compare LT, %arg3, %42, SIGNED : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %c_12 = stablehlo.constant dense<6> : tensor<i32>
    %44 = stablehlo.broadcast_in_dim %c_12, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %45 = stablehlo.add %arg3, %44 : tensor<5xi32>
    %46 = stablehlo.select %43, %45, %arg3 : tensor<5xi1>, tensor<5xi32>
    %47 = stablehlo.broadcast_in_dim %46, dims = [0] : (tensor<5xi32>) -> tensor<5x1xi32>
    %48 = "stablehlo.scatter"(%arg0, %47, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg9: tensor<f32>, %arg10: tensor<f32>):
      stablehlo.return %arg10 : tensor<f32>
    }) : (tensor<6x4xf32>, tensor<5x1xi32>, tensor<5x4xf32>) -> tensor<6x4xf32>
    %c_13 = stablehlo.constant dense<0> : tensor<i32>
    %49 = stablehlo.broadcast_in_dim %c_13, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %50 = stablehlo.compare LT, %arg4, %49, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %c_14 = stablehlo.constant dense<6> : tensor<i32>
    %51 = stablehlo.broadcast_in_dim %c_14, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %52 = stablehlo.add %arg4, %51 : tensor<4xi32>
    %53 = stablehlo.select %50, %52, %arg4 : tensor<4xi1>, tensor<4xi32>
    %c_15 = stablehlo.constant dense<0> : tensor<i32>
    %54 = stablehlo.broadcast_in_dim %c_15, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %55 = stablehlo.compare LT, %arg5, %54, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %c_16 = stablehlo.constant dense<4> : tensor<i32>
    %56 = stablehlo.broadcast_in_dim %c_16, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %57 = stablehlo.add %arg5, %56 : tensor<4xi32>
    %58 = stablehlo.select %55, %57, %arg5 : tensor<4xi1>, tensor<4xi32>
    %59 = stablehlo.broadcast_in_dim %53, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
    %60 = stablehlo.broadcast_in_dim %58, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
    %61 = stablehlo.concatenate %59, %60, dim = 1 : (tensor<4x1xi32>, tensor<4x1xi32>) -> tensor<4x2xi32>
    %62 = "stablehlo.scatter"(%arg0, %61, %arg6) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg9: tensor<f32>, %arg10: tensor<f32>):
      %79 = stablehlo.add %arg9, %arg10 : tensor<f32>
      stablehlo.return %79 : tensor<f32>
    }) : (tensor<6x4xf32>, tensor<4x2xi32>, tensor<4xf32>) -> tensor<6x4xf32>
    %c_17 = stablehlo.constant dense<0> : tensor<i32>
    %63 = stablehlo.broadcast_in_dim %c_17, dims = [] : (tensor<i32>) -> tensor<6x3xi32>
    %64 = stablehlo.compare LT, %arg7, %63, SIGNED : (tensor<6x3xi32>, tensor<6x3xi32>) -> tensor<6x3xi1>
    %c_18 = stablehlo.constant dense<4> : tensor<i32>
    %65 = stablehlo.broadcast_in_dim %c_18, dims = [] : (tensor<i32>) -> tensor<6x3xi32>
    %66 = stablehlo.add %arg7, %65 : tensor<6x3xi32>
    %67 = stablehlo.select %64, %66, %arg7 : tensor<6x3xi1>, tensor<6x3xi32>
    %68 = stablehlo.broadcast_in_dim %67, dims = [0, 1] : (tensor<6x3xi32>) -> tensor<6x3x1xi32>
    %69 = "stablehlo.scatter"(%arg0, %68, %arg8) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [1], input_batching_dims = [0], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1], index_vector_dim = 2>, unique_indices = false}> ({
    ^bb0(%arg9: tensor<f32>, %arg10: tensor<f32>):
      %79 = stablehlo.add %arg9, %arg10 : tensor<f32>
      stablehlo.return %79 : tensor<f32>
    }) : (tensor<6x4xf32>, tensor<6x3x1xi32>, tensor<6x3xf32>) -> tensor<6x4xf32>
    %c_19 = stablehlo.constant dense<0> : tensor<i32>
    %70 = stablehlo.broadcast_in_dim %c_19, dims = [] : (tensor<i32>) -> tensor<7xi32>
    %c_20 = stablehlo.constant dense<0> : tensor<i32>
    %71 = stablehlo.broadcast_in_dim %c_20, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %72 = stablehlo.compare LT, %arg1, %71, SIGNED : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %c_21 = stablehlo.constant dense<7> : tensor<i32>
    %73 = stablehlo.broadcast_in_dim %c_21, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %74 = stablehlo.add %arg1, %73 : tensor<5xi32>
    %75 = stablehlo.select %72, %74, %arg1 : tensor<5xi1>, tensor<5xi32>
    %76 = stablehlo.broadcast_in_dim %75, dims = [0] : (tensor<5xi32>) -> tensor<5x1xi32>
    %c_22 = stablehlo.constant dense<1> : tensor<i32>
    %77 = stablehlo.broadcast_in_dim %c_22, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %78 = "stablehlo.scatter"(%70, %76, %77) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg9: tensor<i32>, %arg10: tensor<i32>):
      %79 = stablehlo.add %arg9, %arg10 : tensor<i32>
      stablehlo.return %79 : tensor<i32>
    }) : (tensor<7xi32>, tensor<5x1xi32>, tensor<5xi32>) -> tensor<7xi32>
    return %6, %13, %20, %27, %34, %41, %48, %62, %69, %78 : tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<7xi32>
  }
}
