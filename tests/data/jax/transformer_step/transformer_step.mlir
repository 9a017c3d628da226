module @jit_transformer_step attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<32xf32>, %arg1: tensor<16xf32>, %arg2: tensor<11x16xf32>, %arg3: tensor<16xf32>, %arg4: tensor<16xf32>, %arg5: tensor<16xf32>, %arg6: tensor<16xf32>, %arg7: tensor<16x32xf32>, %arg8: tensor<32x16xf32>, %arg9: tensor<16x16xf32>, %arg10: tensor<16x16xf32>, %arg11: tensor<16x16xf32>, %arg12: tensor<16x16xf32>, %arg13: tensor<2x8xi32>, %arg14: tensor<2x8xi32>) -> (tensor<f32> {jax.result_info = "result[0]"}, tensor<32xf32> {jax.result_info = "result[1]['b_ff1']"}, tensor<16xf32> {jax.result_info = "result[1]['b_ff2']"}, tensor<11x16xf32> {jax.result_info = "result[1]['emb']"}, tensor<16xf32> {jax.result_info = "result[1]['ln1_b']"}, tensor<16xf32> {jax.result_info = "result[1]['ln1_g']"}, tensor<16xf32> {jax.result_info = "result[1]['ln2_b']"}, tensor<16xf32> {jax.result_info = "result[1]['ln2_g']"}, tensor<16x32xf32> {jax.result_info = "result[1]['w_ff1']"}, tensor<32x16xf32> {jax.result_info = "result[1]['w_ff2']"}, tensor<16x16xf32> {jax.result_info = "result[1]['wk']"}, tensor<16x16xf32> {jax.result_info = "result[1]['wo']"}, tensor<16x16xf32> {jax.result_info = "result[1]['wq']"}, tensor<16x16xf32> {jax.result_info = "result[1]['wv']"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<2x8xi32>
    %1 = stablehlo.compare LT, %arg13, %0, SIGNED : (tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<2x8xi1>
    %c_0 = stablehlo.constant dense<11> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<2x8xi32>
    %3 = stablehlo.add %arg13, %2 : tensor<2x8xi32>
    %4 = stablehlo.select %1, %3, %arg13 : tensor<2x8xi1>, tensor<2x8xi32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0, 1] : (tensor<2x8xi32>) -> tensor<2x8x1xi32>
    %6 = "stablehlo.gather"(%arg2, %5) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 16>}> : (tensor<11x16xf32>, tensor<2x8x1xi32>) -> tensor<2x8x16xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst) applies stablehlo.add across dimensions = [2] : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x1xf32>
    %cst_1 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<2x8x1xf32>
    %10 = stablehlo.divide %8, %9 : tensor<2x8x1xf32>
    %11 = stablehlo.broadcast_in_dim %10, dims = [0, 1, 2] : (tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
    %12 = stablehlo.subtract %6, %11 : tensor<2x8x16xf32>
    %13 = stablehlo.multiply %12, %12 : tensor<2x8x16xf32>
    %cst_2 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<2x8x16xf32>
    %15 = stablehlo.multiply %14, %12 : tensor<2x8x16xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %16 = stablehlo.reduce(%13 init: %cst_3) applies stablehlo.add across dimensions = [2] : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8xf32>
    %17 = stablehlo.broadcast_in_dim %16, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x1xf32>
    %cst_4 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %18 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<2x8x1xf32>
    %19 = stablehlo.divide %17, %18 : tensor<2x8x1xf32>
    %20 = stablehlo.broadcast_in_dim %10, dims = [0, 1, 2] : (tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
    %21 = stablehlo.subtract %6, %20 : tensor<2x8x16xf32>
    %cst_5 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %22 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<2x8x1xf32>
    %23 = stablehlo.add %19, %22 : tensor<2x8x1xf32>
    %24 = stablehlo.rsqrt %23 : tensor<2x8x1xf32>
    %25 = stablehlo.divide %24, %23 : tensor<2x8x1xf32>
    %cst_6 = stablehlo.constant dense<-5.000000e-01> : tensor<f32>
    %26 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<2x8x1xf32>
    %27 = stablehlo.multiply %26, %25 : tensor<2x8x1xf32>
    %28 = stablehlo.broadcast_in_dim %24, dims = [0, 1, 2] : (tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
    %29 = stablehlo.multiply %21, %28 : tensor<2x8x16xf32>
    %30 = stablehlo.broadcast_in_dim %arg4, dims = [2] : (tensor<16xf32>) -> tensor<1x1x16xf32>
    %31 = stablehlo.broadcast_in_dim %30, dims = [0, 1, 2] : (tensor<1x1x16xf32>) -> tensor<2x8x16xf32>
    %32 = stablehlo.multiply %29, %31 : tensor<2x8x16xf32>
    %33 = stablehlo.broadcast_in_dim %arg3, dims = [2] : (tensor<16xf32>) -> tensor<1x1x16xf32>
    %34 = stablehlo.broadcast_in_dim %33, dims = [0, 1, 2] : (tensor<1x1x16xf32>) -> tensor<2x8x16xf32>
    %35 = stablehlo.add %32, %34 : tensor<2x8x16xf32>
    %36 = stablehlo.dot_general %35, %arg11, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %37 = stablehlo.reshape %36 : (tensor<2x8x16xf32>) -> tensor<2x8x2x8xf32>
    %38 = stablehlo.dot_general %35, %arg9, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %39 = stablehlo.reshape %38 : (tensor<2x8x16xf32>) -> tensor<2x8x2x8xf32>
    %40 = stablehlo.dot_general %35, %arg12, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %41 = stablehlo.reshape %40 : (tensor<2x8x16xf32>) -> tensor<2x8x2x8xf32>
    %42 = stablehlo.dot_general %37, %39, batching_dims = [0, 2] x [0, 2], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] : (tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>) -> tensor<2x2x8x8xf32>
    %cst_7 = stablehlo.constant dense<2.82842708> : tensor<f32>
    %43 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<2x2x8x8xf32>
    %44 = stablehlo.divide %42, %43 : tensor<2x2x8x8xf32>
    %c_8 = stablehlo.constant dense<true> : tensor<i1>
    %45 = stablehlo.broadcast_in_dim %c_8, dims = [] : (tensor<i1>) -> tensor<8x8xi1>
    %46 = call @tril(%45) : (tensor<8x8xi1>) -> tensor<8x8xi1>
    %cst_9 = stablehlo.constant dense<-1.000000e+09> : tensor<f32>
    %47:3 = call @_where(%46, %44, %cst_9) : (tensor<8x8xi1>, tensor<2x2x8x8xf32>, tensor<f32>) -> (tensor<2x2x8x8xf32>, tensor<2x2x8x8xi1>, tensor<2x2x8x8xf32>)
    %cst_10 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %48 = stablehlo.reduce(%47#0 init: %cst_10) applies stablehlo.maximum across dimensions = [3] : (tensor<2x2x8x8xf32>, tensor<f32>) -> tensor<2x2x8xf32>
    %49 = stablehlo.reshape %48 : (tensor<2x2x8xf32>) -> tensor<2x2x8x1xf32>
    %50 = stablehlo.broadcast_in_dim %49, dims = [0, 1, 2, 3] : (tensor<2x2x8x1xf32>) -> tensor<2x2x8x8xf32>
    %51 = stablehlo.compare EQ, %47#0, %50, FLOAT : (tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xi1>
    %52 = stablehlo.convert %51 : (tensor<2x2x8x8xi1>) -> tensor<2x2x8x8xf32>
    %cst_11 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %53 = stablehlo.reduce(%52 init: %cst_11) applies stablehlo.add across dimensions = [3] : (tensor<2x2x8x8xf32>, tensor<f32>) -> tensor<2x2x8xf32>
    %cst_12 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %54 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<2x2x8xf32>
    %55 = stablehlo.maximum %54, %48 : tensor<2x2x8xf32>
    %56 = stablehlo.compare EQ, %48, %55, FLOAT : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xi1>
    %cst_13 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %57 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<2x2x8xf32>
    %cst_14 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %58 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<2x2x8xf32>
    %59 = stablehlo.select %56, %57, %58 : tensor<2x2x8xi1>, tensor<2x2x8xf32>
    %cst_15 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %60 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<2x2x8xf32>
    %61 = stablehlo.compare EQ, %60, %55, FLOAT : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xi1>
    %cst_16 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %62 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<2x2x8xf32>
    %cst_17 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %63 = stablehlo.broadcast_in_dim %cst_17, dims = [] : (tensor<f32>) -> tensor<2x2x8xf32>
    %64 = stablehlo.select %61, %62, %63 : tensor<2x2x8xi1>, tensor<2x2x8xf32>
    %65 = stablehlo.divide %59, %64 : tensor<2x2x8xf32>
    %66 = stablehlo.broadcast_in_dim %55, dims = [0, 1, 2] : (tensor<2x2x8xf32>) -> tensor<2x2x8x1xf32>
    %67 = stablehlo.broadcast_in_dim %66, dims = [0, 1, 2, 3] : (tensor<2x2x8x1xf32>) -> tensor<2x2x8x8xf32>
    %68 = stablehlo.subtract %47#0, %67 : tensor<2x2x8x8xf32>
    %69 = stablehlo.exponential %68 : tensor<2x2x8x8xf32>
    %cst_18 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %70 = stablehlo.reduce(%69 init: %cst_18) applies stablehlo.add across dimensions = [3] : (tensor<2x2x8x8xf32>, tensor<f32>) -> tensor<2x2x8xf32>
    %71 = stablehlo.broadcast_in_dim %70, dims = [0, 1, 2] : (tensor<2x2x8xf32>) -> tensor<2x2x8x1xf32>
    %72 = stablehlo.broadcast_in_dim %71, dims = [0, 1, 2, 3] : (tensor<2x2x8x1xf32>) -> tensor<2x2x8x8xf32>
    %73 = stablehlo.divide %69, %72 : tensor<2x2x8x8xf32>
    %74 = stablehlo.multiply %71, %71 : tensor<2x2x8x1xf32>
    %cst_19 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %75 = stablehlo.broadcast_in_dim %cst_19, dims = [] : (tensor<f32>) -> tensor<2x2x8x1xf32>
    %76 = stablehlo.divide %75, %74 : tensor<2x2x8x1xf32>
    %77 = stablehlo.dot_general %41, %73, batching_dims = [0, 2] x [0, 1], contracting_dims = [1] x [3], precision = [DEFAULT, DEFAULT] : (tensor<2x8x2x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
    %78 = stablehlo.transpose %77, dims = [0, 3, 1, 2] : (tensor<2x2x8x8xf32>) -> tensor<2x8x2x8xf32>
    %79 = stablehlo.reshape %78 : (tensor<2x8x2x8xf32>) -> tensor<2x8x16xf32>
    %80 = stablehlo.dot_general %79, %arg10, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %81 = stablehlo.add %6, %80 : tensor<2x8x16xf32>
    %cst_20 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %82 = stablehlo.reduce(%81 init: %cst_20) applies stablehlo.add across dimensions = [2] : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8xf32>
    %83 = stablehlo.broadcast_in_dim %82, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x1xf32>
    %cst_21 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %84 = stablehlo.broadcast_in_dim %cst_21, dims = [] : (tensor<f32>) -> tensor<2x8x1xf32>
    %85 = stablehlo.divide %83, %84 : tensor<2x8x1xf32>
    %86 = stablehlo.broadcast_in_dim %85, dims = [0, 1, 2] : (tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
    %87 = stablehlo.subtract %81, %86 : tensor<2x8x16xf32>
    %88 = stablehlo.multiply %87, %87 : tensor<2x8x16xf32>
    %cst_22 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %89 = stablehlo.broadcast_in_dim %cst_22, dims = [] : (tensor<f32>) -> tensor<2x8x16xf32>
    %90 = stablehlo.multiply %89, %87 : tensor<2x8x16xf32>
    %cst_23 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %91 = stablehlo.reduce(%88 init: %cst_23) applies stablehlo.add across dimensions = [2] : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8xf32>
    %92 = stablehlo.broadcast_in_dim %91, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x1xf32>
    %cst_24 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %93 = stablehlo.broadcast_in_dim %cst_24, dims = [] : (tensor<f32>) -> tensor<2x8x1xf32>
    %94 = stablehlo.divide %92, %93 : tensor<2x8x1xf32>
    %95 = stablehlo.broadcast_in_dim %85, dims = [0, 1, 2] : (tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
    %96 = stablehlo.subtract %81, %95 : tensor<2x8x16xf32>
    %cst_25 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %97 = stablehlo.broadcast_in_dim %cst_25, dims = [] : (tensor<f32>) -> tensor<2x8x1xf32>
    %98 = stablehlo.add %94, %97 : tensor<2x8x1xf32>
    %99 = stablehlo.rsqrt %98 : tensor<2x8x1xf32>
    %100 = stablehlo.divide %99, %98 : tensor<2x8x1xf32>
    %cst_26 = stablehlo.constant dense<-5.000000e-01> : tensor<f32>
    %101 = stablehlo.broadcast_in_dim %cst_26, dims = [] : (tensor<f32>) -> tensor<2x8x1xf32>
    %102 = stablehlo.multiply %101, %100 : tensor<2x8x1xf32>
    %103 = stablehlo.broadcast_in_dim %99, dims = [0, 1, 2] : (tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
    %104 = stablehlo.multiply %96, %103 : tensor<2x8x16xf32>
    %105 = stablehlo.broadcast_in_dim %arg6, dims = [2] : (tensor<16xf32>) -> tensor<1x1x16xf32>
    %106 = stablehlo.broadcast_in_dim %105, dims = [0, 1, 2] : (tensor<1x1x16xf32>) -> tensor<2x8x16xf32>
    %107 = stablehlo.multiply %104, %106 : tensor<2x8x16xf32>
    %108 = stablehlo.broadcast_in_dim %arg5, dims = [2] : (tensor<16xf32>) -> tensor<1x1x16xf32>
    %109 = stablehlo.broadcast_in_dim %108, dims = [0, 1, 2] : (tensor<1x1x16xf32>) -> tensor<2x8x16xf32>
    %110 = stablehlo.add %107, %109 : tensor<2x8x16xf32>
    %111 = stablehlo.dot_general %110, %arg7, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
    %112 = stablehlo.broadcast_in_dim %arg0, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %113 = stablehlo.broadcast_in_dim %112, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<2x8x32xf32>
    %114 = stablehlo.add %111, %113 : tensor<2x8x32xf32>
    %115 = stablehlo.multiply %114, %114 : tensor<2x8x32xf32>
    %116 = stablehlo.multiply %115, %114 : tensor<2x8x32xf32>
    %117 = stablehlo.multiply %114, %114 : tensor<2x8x32xf32>
    %cst_27 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %118 = stablehlo.broadcast_in_dim %cst_27, dims = [] : (tensor<f32>) -> tensor<2x8x32xf32>
    %119 = stablehlo.multiply %118, %117 : tensor<2x8x32xf32>
    %cst_28 = stablehlo.constant dense<4.471500e-02> : tensor<f32>
    %120 = stablehlo.broadcast_in_dim %cst_28, dims = [] : (tensor<f32>) -> tensor<2x8x32xf32>
    %121 = stablehlo.multiply %120, %116 : tensor<2x8x32xf32>
    %122 = stablehlo.add %114, %121 : tensor<2x8x32xf32>
    %cst_29 = stablehlo.constant dense<0.797884583> : tensor<f32>
    %123 = stablehlo.broadcast_in_dim %cst_29, dims = [] : (tensor<f32>) -> tensor<2x8x32xf32>
    %124 = stablehlo.multiply %123, %122 : tensor<2x8x32xf32>
    %125 = stablehlo.tanh %124 : tensor<2x8x32xf32>
    %cst_30 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %126 = stablehlo.broadcast_in_dim %cst_30, dims = [] : (tensor<f32>) -> tensor<2x8x32xf32>
    %127 = stablehlo.subtract %126, %125 : tensor<2x8x32xf32>
    %cst_31 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %128 = stablehlo.broadcast_in_dim %cst_31, dims = [] : (tensor<f32>) -> tensor<2x8x32xf32>
    %129 = stablehlo.add %128, %125 : tensor<2x8x32xf32>
    %cst_32 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %130 = stablehlo.broadcast_in_dim %cst_32, dims = [] : (tensor<f32>) -> tensor<2x8x32xf32>
    %131 = stablehlo.multiply %130, %129 : tensor<2x8x32xf32>
    %132 = stablehlo.multiply %114, %131 : tensor<2x8x32xf32>
    %133 = stablehlo.dot_general %132, %arg8, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x8x32xf32>, tensor<32x16xf32>) -> tensor<2x8x16xf32>
    %134 = stablehlo.add %81, %133 : tensor<2x8x16xf32>
    %135 = stablehlo.broadcast_in_dim %arg1, dims = [2] : (tensor<16xf32>) -> tensor<1x1x16xf32>
    %136 = stablehlo.broadcast_in_dim %135, dims = [0, 1, 2] : (tensor<1x1x16xf32>) -> tensor<2x8x16xf32>
    %137 = stablehlo.add %134, %136 : tensor<2x8x16xf32>
    %138 = stablehlo.transpose %arg2, dims = [1, 0] : (tensor<11x16xf32>) -> tensor<16x11xf32>
    %139 = stablehlo.dot_general %137, %138, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x8x16xf32>, tensor<16x11xf32>) -> tensor<2x8x11xf32>
    %140:3 = call @log_softmax(%139) : (tensor<2x8x11xf32>) -> (tensor<2x8x11xf32>, tensor<2x8x11xf32>, tensor<2x8x1xf32>)
    %141 = stablehlo.broadcast_in_dim %arg14, dims = [0, 1] : (tensor<2x8xi32>) -> tensor<2x8x1xi32>
    %142:2 = call @take_along_axis(%140#0, %141) : (tensor<2x8x11xf32>, tensor<2x8x1xi32>) -> (tensor<2x8x1xf32>, tensor<2x8x1x1xi32>)
    %cst_33 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %143 = stablehlo.reduce(%142#0 init: %cst_33) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<f32>
    %cst_34 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %144 = stablehlo.divide %143, %cst_34 : tensor<f32>
    %145 = stablehlo.negate %144 : tensor<f32>
    %cst_35 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %146 = stablehlo.negate %cst_35 : tensor<f32>
    %cst_36 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %147 = stablehlo.divide %146, %cst_36 : tensor<f32>
    %148 = stablehlo.broadcast_in_dim %147, dims = [] : (tensor<f32>) -> tensor<2x8x1xf32>
    %149 = call @take_along_axis_0(%142#1, %148) : (tensor<2x8x1x1xi32>, tensor<2x8x1xf32>) -> tensor<2x8x11xf32>
    %150 = call @log_softmax_1(%140#1, %140#2, %149) : (tensor<2x8x11xf32>, tensor<2x8x1xf32>, tensor<2x8x11xf32>) -> tensor<2x8x11xf32>
    %151 = stablehlo.dot_general %150, %137, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x8x11xf32>, tensor<2x8x16xf32>) -> tensor<11x16xf32>
    %152 = stablehlo.transpose %151, dims = [1, 0] : (tensor<11x16xf32>) -> tensor<16x11xf32>
    %153 = stablehlo.dot_general %150, %138, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x8x11xf32>, tensor<16x11xf32>) -> tensor<2x8x16xf32>
    %154 = stablehlo.transpose %152, dims = [1, 0] : (tensor<16x11xf32>) -> tensor<11x16xf32>
    %cst_37 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %155 = stablehlo.reduce(%153 init: %cst_37) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<16xf32>
    %156 = stablehlo.reshape %155 : (tensor<16xf32>) -> tensor<1x1x16xf32>
    %cst_38 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %157 = stablehlo.reduce(%156 init: %cst_38) applies stablehlo.add across dimensions = [0, 1] : (tensor<1x1x16xf32>, tensor<f32>) -> tensor<16xf32>
    %158 = stablehlo.dot_general %153, %132, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x8x16xf32>, tensor<2x8x32xf32>) -> tensor<16x32xf32>
    %159 = stablehlo.transpose %158, dims = [1, 0] : (tensor<16x32xf32>) -> tensor<32x16xf32>
    %160 = stablehlo.dot_general %153, %arg8, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x8x16xf32>, tensor<32x16xf32>) -> tensor<2x8x32xf32>
    %161 = stablehlo.multiply %114, %160 : tensor<2x8x32xf32>
    %162 = stablehlo.multiply %160, %131 : tensor<2x8x32xf32>
    %cst_39 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %163 = stablehlo.broadcast_in_dim %cst_39, dims = [] : (tensor<f32>) -> tensor<2x8x32xf32>
    %164 = stablehlo.multiply %163, %161 : tensor<2x8x32xf32>
    %165 = stablehlo.multiply %164, %127 : tensor<2x8x32xf32>
    %166 = stablehlo.multiply %165, %125 : tensor<2x8x32xf32>
    %167 = stablehlo.add %165, %166 : tensor<2x8x32xf32>
    %cst_40 = stablehlo.constant dense<0.797884583> : tensor<f32>
    %168 = stablehlo.broadcast_in_dim %cst_40, dims = [] : (tensor<f32>) -> tensor<2x8x32xf32>
    %169 = stablehlo.multiply %168, %167 : tensor<2x8x32xf32>
    %170 = stablehlo.add %162, %169 : tensor<2x8x32xf32>
    %cst_41 = stablehlo.constant dense<4.471500e-02> : tensor<f32>
    %171 = stablehlo.broadcast_in_dim %cst_41, dims = [] : (tensor<f32>) -> tensor<2x8x32xf32>
    %172 = stablehlo.multiply %171, %169 : tensor<2x8x32xf32>
    %173 = stablehlo.multiply %172, %119 : tensor<2x8x32xf32>
    %174 = stablehlo.add %170, %173 : tensor<2x8x32xf32>
    %cst_42 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %175 = stablehlo.reduce(%174 init: %cst_42) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x8x32xf32>, tensor<f32>) -> tensor<32xf32>
    %176 = stablehlo.reshape %175 : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %cst_43 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %177 = stablehlo.reduce(%176 init: %cst_43) applies stablehlo.add across dimensions = [0, 1] : (tensor<1x1x32xf32>, tensor<f32>) -> tensor<32xf32>
    %178 = stablehlo.dot_general %174, %110, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x8x32xf32>, tensor<2x8x16xf32>) -> tensor<32x16xf32>
    %179 = stablehlo.transpose %178, dims = [1, 0] : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %180 = stablehlo.dot_general %174, %arg7, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x8x32xf32>, tensor<16x32xf32>) -> tensor<2x8x16xf32>
    %cst_44 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %181 = stablehlo.reduce(%180 init: %cst_44) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<16xf32>
    %182 = stablehlo.reshape %181 : (tensor<16xf32>) -> tensor<1x1x16xf32>
    %cst_45 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %183 = stablehlo.reduce(%182 init: %cst_45) applies stablehlo.add across dimensions = [0, 1] : (tensor<1x1x16xf32>, tensor<f32>) -> tensor<16xf32>
    %184 = stablehlo.multiply %104, %180 : tensor<2x8x16xf32>
    %cst_46 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %185 = stablehlo.reduce(%184 init: %cst_46) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<16xf32>
    %186 = stablehlo.reshape %185 : (tensor<16xf32>) -> tensor<1x1x16xf32>
    %187 = stablehlo.broadcast_in_dim %105, dims = [0, 1, 2] : (tensor<1x1x16xf32>) -> tensor<2x8x16xf32>
    %188 = stablehlo.multiply %180, %187 : tensor<2x8x16xf32>
    %cst_47 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %189 = stablehlo.reduce(%186 init: %cst_47) applies stablehlo.add across dimensions = [0, 1] : (tensor<1x1x16xf32>, tensor<f32>) -> tensor<16xf32>
    %190 = stablehlo.multiply %96, %188 : tensor<2x8x16xf32>
    %cst_48 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %191 = stablehlo.reduce(%190 init: %cst_48) applies stablehlo.add across dimensions = [2] : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8xf32>
    %192 = stablehlo.reshape %191 : (tensor<2x8xf32>) -> tensor<2x8x1xf32>
    %193 = stablehlo.broadcast_in_dim %99, dims = [0, 1, 2] : (tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
    %194 = stablehlo.multiply %188, %193 : tensor<2x8x16xf32>
    %195 = stablehlo.multiply %192, %102 : tensor<2x8x1xf32>
    %196 = stablehlo.negate %194 : tensor<2x8x16xf32>
    %cst_49 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %197 = stablehlo.reduce(%196 init: %cst_49) applies stablehlo.add across dimensions = [2] : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8xf32>
    %198 = stablehlo.reshape %197 : (tensor<2x8xf32>) -> tensor<2x8x1xf32>
    %199 = stablehlo.add %153, %194 : tensor<2x8x16xf32>
    %cst_50 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %200 = stablehlo.broadcast_in_dim %cst_50, dims = [] : (tensor<f32>) -> tensor<2x8x1xf32>
    %201 = stablehlo.divide %195, %200 : tensor<2x8x1xf32>
    %cst_51 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %202 = stablehlo.reduce(%201 init: %cst_51) applies stablehlo.add across dimensions = [2] : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8xf32>
    %203 = stablehlo.broadcast_in_dim %202, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x16xf32>
    %204 = stablehlo.multiply %203, %90 : tensor<2x8x16xf32>
    %205 = stablehlo.negate %204 : tensor<2x8x16xf32>
    %cst_52 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %206 = stablehlo.reduce(%205 init: %cst_52) applies stablehlo.add across dimensions = [2] : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8xf32>
    %207 = stablehlo.reshape %206 : (tensor<2x8xf32>) -> tensor<2x8x1xf32>
    %208 = stablehlo.add %199, %204 : tensor<2x8x16xf32>
    %209 = stablehlo.add %198, %207 : tensor<2x8x1xf32>
    %cst_53 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %210 = stablehlo.broadcast_in_dim %cst_53, dims = [] : (tensor<f32>) -> tensor<2x8x1xf32>
    %211 = stablehlo.divide %209, %210 : tensor<2x8x1xf32>
    %cst_54 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %212 = stablehlo.reduce(%211 init: %cst_54) applies stablehlo.add across dimensions = [2] : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8xf32>
    %213 = stablehlo.broadcast_in_dim %212, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x16xf32>
    %214 = stablehlo.add %208, %213 : tensor<2x8x16xf32>
    %215 = stablehlo.dot_general %214, %79, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
    %216 = stablehlo.transpose %215, dims = [1, 0] : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %217 = stablehlo.dot_general %214, %arg10, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %218 = stablehlo.reshape %217 : (tensor<2x8x16xf32>) -> tensor<2x8x2x8xf32>
    %219 = stablehlo.transpose %218, dims = [0, 2, 3, 1] : (tensor<2x8x2x8xf32>) -> tensor<2x2x8x8xf32>
    %220 = stablehlo.dot_general %219, %41, batching_dims = [0, 1] x [0, 2], contracting_dims = [2] x [3], precision = [DEFAULT, DEFAULT] : (tensor<2x2x8x8xf32>, tensor<2x8x2x8xf32>) -> tensor<2x2x8x8xf32>
    %221 = stablehlo.dot_general %219, %73, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2], precision = [DEFAULT, DEFAULT] : (tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
    %222 = stablehlo.transpose %221, dims = [0, 3, 1, 2] : (tensor<2x2x8x8xf32>) -> tensor<2x8x2x8xf32>
    %223 = stablehlo.broadcast_in_dim %76, dims = [0, 1, 2, 3] : (tensor<2x2x8x1xf32>) -> tensor<2x2x8x8xf32>
    %224 = stablehlo.multiply %220, %223 : tensor<2x2x8x8xf32>
    %225 = stablehlo.multiply %224, %69 : tensor<2x2x8x8xf32>
    %cst_55 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %226 = stablehlo.reduce(%225 init: %cst_55) applies stablehlo.add across dimensions = [3] : (tensor<2x2x8x8xf32>, tensor<f32>) -> tensor<2x2x8xf32>
    %227 = stablehlo.reshape %226 : (tensor<2x2x8xf32>) -> tensor<2x2x8x1xf32>
    %228 = stablehlo.negate %227 : tensor<2x2x8x1xf32>
    %229 = stablehlo.broadcast_in_dim %71, dims = [0, 1, 2, 3] : (tensor<2x2x8x1xf32>) -> tensor<2x2x8x8xf32>
    %230 = stablehlo.divide %220, %229 : tensor<2x2x8x8xf32>
    %cst_56 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %231 = stablehlo.reduce(%228 init: %cst_56) applies stablehlo.add across dimensions = [3] : (tensor<2x2x8x1xf32>, tensor<f32>) -> tensor<2x2x8xf32>
    %232 = stablehlo.broadcast_in_dim %231, dims = [0, 1, 2] : (tensor<2x2x8xf32>) -> tensor<2x2x8x8xf32>
    %233 = stablehlo.add %230, %232 : tensor<2x2x8x8xf32>
    %234 = stablehlo.multiply %233, %69 : tensor<2x2x8x8xf32>
    %235 = call @_where_2(%47#1, %47#2, %234) : (tensor<2x2x8x8xi1>, tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
    %cst_57 = stablehlo.constant dense<2.82842708> : tensor<f32>
    %236 = stablehlo.broadcast_in_dim %cst_57, dims = [] : (tensor<f32>) -> tensor<2x2x8x8xf32>
    %237 = stablehlo.divide %235, %236 : tensor<2x2x8x8xf32>
    %238 = stablehlo.dot_general %237, %37, batching_dims = [0, 1] x [0, 2], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x2x8x8xf32>, tensor<2x8x2x8xf32>) -> tensor<2x2x8x8xf32>
    %239 = stablehlo.transpose %238, dims = [0, 2, 1, 3] : (tensor<2x2x8x8xf32>) -> tensor<2x8x2x8xf32>
    %240 = stablehlo.dot_general %237, %39, batching_dims = [0, 1] x [0, 2], contracting_dims = [3] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x2x8x8xf32>, tensor<2x8x2x8xf32>) -> tensor<2x2x8x8xf32>
    %241 = stablehlo.transpose %240, dims = [0, 2, 1, 3] : (tensor<2x2x8x8xf32>) -> tensor<2x8x2x8xf32>
    %242 = stablehlo.reshape %222 : (tensor<2x8x2x8xf32>) -> tensor<2x8x16xf32>
    %243 = stablehlo.dot_general %242, %35, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
    %244 = stablehlo.transpose %243, dims = [1, 0] : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %245 = stablehlo.dot_general %242, %arg12, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %246 = stablehlo.reshape %239 : (tensor<2x8x2x8xf32>) -> tensor<2x8x16xf32>
    %247 = stablehlo.dot_general %246, %35, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
    %248 = stablehlo.transpose %247, dims = [1, 0] : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %249 = stablehlo.dot_general %246, %arg9, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %250 = stablehlo.add %245, %249 : tensor<2x8x16xf32>
    %251 = stablehlo.reshape %241 : (tensor<2x8x2x8xf32>) -> tensor<2x8x16xf32>
    %252 = stablehlo.dot_general %251, %35, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
    %253 = stablehlo.transpose %252, dims = [1, 0] : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %254 = stablehlo.dot_general %251, %arg11, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %255 = stablehlo.add %250, %254 : tensor<2x8x16xf32>
    %cst_58 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %256 = stablehlo.reduce(%255 init: %cst_58) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<16xf32>
    %257 = stablehlo.reshape %256 : (tensor<16xf32>) -> tensor<1x1x16xf32>
    %cst_59 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %258 = stablehlo.reduce(%257 init: %cst_59) applies stablehlo.add across dimensions = [0, 1] : (tensor<1x1x16xf32>, tensor<f32>) -> tensor<16xf32>
    %259 = stablehlo.multiply %29, %255 : tensor<2x8x16xf32>
    %cst_60 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %260 = stablehlo.reduce(%259 init: %cst_60) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<16xf32>
    %261 = stablehlo.reshape %260 : (tensor<16xf32>) -> tensor<1x1x16xf32>
    %262 = stablehlo.broadcast_in_dim %30, dims = [0, 1, 2] : (tensor<1x1x16xf32>) -> tensor<2x8x16xf32>
    %263 = stablehlo.multiply %255, %262 : tensor<2x8x16xf32>
    %cst_61 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %264 = stablehlo.reduce(%261 init: %cst_61) applies stablehlo.add across dimensions = [0, 1] : (tensor<1x1x16xf32>, tensor<f32>) -> tensor<16xf32>
    %265 = stablehlo.multiply %21, %263 : tensor<2x8x16xf32>
    %cst_62 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %266 = stablehlo.reduce(%265 init: %cst_62) applies stablehlo.add across dimensions = [2] : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8xf32>
    %267 = stablehlo.reshape %266 : (tensor<2x8xf32>) -> tensor<2x8x1xf32>
    %268 = stablehlo.broadcast_in_dim %24, dims = [0, 1, 2] : (tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
    %269 = stablehlo.multiply %263, %268 : tensor<2x8x16xf32>
    %270 = stablehlo.multiply %267, %27 : tensor<2x8x1xf32>
    %271 = stablehlo.negate %269 : tensor<2x8x16xf32>
    %cst_63 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %272 = stablehlo.reduce(%271 init: %cst_63) applies stablehlo.add across dimensions = [2] : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8xf32>
    %273 = stablehlo.reshape %272 : (tensor<2x8xf32>) -> tensor<2x8x1xf32>
    %274 = stablehlo.add %214, %269 : tensor<2x8x16xf32>
    %cst_64 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %275 = stablehlo.broadcast_in_dim %cst_64, dims = [] : (tensor<f32>) -> tensor<2x8x1xf32>
    %276 = stablehlo.divide %270, %275 : tensor<2x8x1xf32>
    %cst_65 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %277 = stablehlo.reduce(%276 init: %cst_65) applies stablehlo.add across dimensions = [2] : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8xf32>
    %278 = stablehlo.broadcast_in_dim %277, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x16xf32>
    %279 = stablehlo.multiply %278, %15 : tensor<2x8x16xf32>
    %280 = stablehlo.negate %279 : tensor<2x8x16xf32>
    %cst_66 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %281 = stablehlo.reduce(%280 init: %cst_66) applies stablehlo.add across dimensions = [2] : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8xf32>
    %282 = stablehlo.reshape %281 : (tensor<2x8xf32>) -> tensor<2x8x1xf32>
    %283 = stablehlo.add %274, %279 : tensor<2x8x16xf32>
    %284 = stablehlo.add %273, %282 : tensor<2x8x1xf32>
    %cst_67 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %285 = stablehlo.broadcast_in_dim %cst_67, dims = [] : (tensor<f32>) -> tensor<2x8x1xf32>
    %286 = stablehlo.divide %284, %285 : tensor<2x8x1xf32>
    %cst_68 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %287 = stablehlo.reduce(%286 init: %cst_68) applies stablehlo.add across dimensions = [2] : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8xf32>
    %288 = stablehlo.broadcast_in_dim %287, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x16xf32>
    %289 = stablehlo.add %283, %288 : tensor<2x8x16xf32>
    %cst_69 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %290 = stablehlo.broadcast_in_dim %cst_69, dims = [] : (tensor<f32>) -> tensor<11x16xf32>
    %291 = "stablehlo.scatter"(%290, %5, %289) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [2], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 2>, unique_indices = false}> ({
    ^bb0(%arg15: tensor<f32>, %arg16: tensor<f32>):
      %332 = stablehlo.add %arg15, %arg16 : tensor<f32>
      stablehlo.return %332 : tensor<f32>
    }) : (tensor<11x16xf32>, tensor<2x8x1xi32>, tensor<2x8x16xf32>) -> tensor<11x16xf32>
    %292 = stablehlo.add %154, %291 : tensor<11x16xf32>
    %cst_70 = stablehlo.constant dense<5.000000e-02> : tensor<f32>
    %293 = stablehlo.broadcast_in_dim %cst_70, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %294 = stablehlo.multiply %293, %177 : tensor<32xf32>
    %295 = stablehlo.subtract %arg0, %294 : tensor<32xf32>
    %cst_71 = stablehlo.constant dense<5.000000e-02> : tensor<f32>
    %296 = stablehlo.broadcast_in_dim %cst_71, dims = [] : (tensor<f32>) -> tensor<16xf32>
    %297 = stablehlo.multiply %296, %157 : tensor<16xf32>
    %298 = stablehlo.subtract %arg1, %297 : tensor<16xf32>
    %cst_72 = stablehlo.constant dense<5.000000e-02> : tensor<f32>
    %299 = stablehlo.broadcast_in_dim %cst_72, dims = [] : (tensor<f32>) -> tensor<11x16xf32>
    %300 = stablehlo.multiply %299, %292 : tensor<11x16xf32>
    %301 = stablehlo.subtract %arg2, %300 : tensor<11x16xf32>
    %cst_73 = stablehlo.constant dense<5.000000e-02> : tensor<f32>
    %302 = stablehlo.broadcast_in_dim %cst_73, dims = [] : (tensor<f32>) -> tensor<16xf32>
    %303 = stablehlo.multiply %302, %258 : tensor<16xf32>
    %304 = stablehlo.subtract %arg3, %303 : tensor<16xf32>
    %cst_74 = stablehlo.constant dense<5.000000e-02> : tensor<f32>
    %305 = stablehlo.broadcast_in_dim %cst_74, dims = [] : (tensor<f32>) -> tensor<16xf32>
    %306 = stablehlo.multiply %305, %264 : tensor<16xf32>
    %307 = stablehlo.subtract %arg4, %306 : tensor<16xf32>
    %cst_75 = stablehlo.constant dense<5.000000e-02> : tensor<f32>
    %308 = stablehlo.broadcast_in_dim %cst_75, dims = [] : (tensor<f32>) -> tensor<16xf32>
    %309 = stablehlo.multiply %308, %183 : tensor<16xf32>
    %310 = stablehlo.subtract %arg5, %309 : tensor<16xf32>
    %cst_76 = stablehlo.constant dense<5.000000e-02> : tensor<f32>
    %311 = stablehlo.broadcast_in_dim %cst_76, dims = [] : (tensor<f32>) -> tensor<16xf32>
    %312 = stablehlo.multiply %311, %189 : tensor<16xf32>
    %313 = stablehlo.subtract %arg6, %312 : tensor<16xf32>
    %cst_77 = stablehlo.constant dense<5.000000e-02> : tensor<f32>
    %314 = stablehlo.broadcast_in_dim %cst_77, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %315 = stablehlo.multiply %314, %179 : tensor<16x32xf32>
    %316 = stablehlo.subtract %arg7, %315 : tensor<16x32xf32>
    %cst_78 = stablehlo.constant dense<5.000000e-02> : tensor<f32>
    %317 = stablehlo.broadcast_in_dim %cst_78, dims = [] : (tensor<f32>) -> tensor<32x16xf32>
    %318 = stablehlo.multiply %317, %159 : tensor<32x16xf32>
    %319 = stablehlo.subtract %arg8, %318 : tensor<32x16xf32>
    %cst_79 = stablehlo.constant dense<5.000000e-02> : tensor<f32>
    %320 = stablehlo.broadcast_in_dim %cst_79, dims = [] : (tensor<f32>) -> tensor<16x16xf32>
    %321 = stablehlo.multiply %320, %248 : tensor<16x16xf32>
    %322 = stablehlo.subtract %arg9, %321 : tensor<16x16xf32>
    %cst_80 = stablehlo.constant dense<5.000000e-02> : tensor<f32>
    %323 = stablehlo.broadcast_in_dim %cst_80, dims = [] : (tensor<f32>) -> tensor<16x16xf32>
    %324 = stablehlo.multiply %323, %216 : tensor<16x16xf32>
    %325 = stablehlo.subtract %arg10, %324 : tensor<16x16xf32>
    %cst_81 = stablehlo.constant dense<5.000000e-02> : tensor<f32>
    %326 = stablehlo.broadcast_in_dim %cst_81, dims = [] : (tensor<f32>) -> tensor<16x16xf32>
    %327 = stablehlo.multiply %326, %253 : tensor<16x16xf32>
    %328 = stablehlo.subtract %arg11, %327 : tensor<16x16xf32>
    %cst_82 = stablehlo.constant dense<5.000000e-02> : tensor<f32>
    %329 = stablehlo.broadcast_in_dim %cst_82, dims = [] : (tensor<f32>) -> tensor<16x16xf32>
    %330 = stablehlo.multiply %329, %244 : tensor<16x16xf32>
    %331 = stablehlo.subtract %arg12, %330 : tensor<16x16xf32>
    return %145, %295, %298, %301, %304, %307, %310, %313, %316, %319, %322, %325, %328, %331 : tensor<f32>, tensor<32xf32>, tensor<16xf32>, tensor<11x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x32xf32>, tensor<32x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>
  }
  func.func private @tril(%arg0: tensor<8x8xi1>) -> tensor<8x8xi1> {
    %0 = stablehlo.iota dim = 0 : tensor<8x8xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<8x8xi32>
    %2 = stablehlo.add %0, %1 : tensor<8x8xi32>
    %3 = stablehlo.iota dim = 1 : tensor<8x8xi32>
    %4 = stablehlo.compare GE, %2, %3, SIGNED : (tensor<8x8xi32>, tensor<8x8xi32>) -> tensor<8x8xi1>
    %c_0 = stablehlo.constant dense<false> : tensor<i1>
    %5 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i1>) -> tensor<8x8xi1>
    %6 = stablehlo.select %4, %arg0, %5 : tensor<8x8xi1>, tensor<8x8xi1>
    return %6 : tensor<8x8xi1>
  }
  func.func private @_where(%arg0: tensor<8x8xi1>, %arg1: tensor<2x2x8x8xf32>, %arg2: tensor<f32>) -> (tensor<2x2x8x8xf32>, tensor<2x2x8x8xi1>, tensor<2x2x8x8xf32>) {
    %0 = stablehlo.convert %arg2 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %arg0, dims = [2, 3] : (tensor<8x8xi1>) -> tensor<2x2x8x8xi1>
    %2 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<2x2x8x8xf32>
    %3 = stablehlo.select %1, %arg1, %2 : tensor<2x2x8x8xi1>, tensor<2x2x8x8xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x2x8x8xf32>
    return %3, %1, %4 : tensor<2x2x8x8xf32>, tensor<2x2x8x8xi1>, tensor<2x2x8x8xf32>
  }
  func.func private @log_softmax(%arg0: tensor<2x8x11xf32>) -> (tensor<2x8x11xf32>, tensor<2x8x11xf32>, tensor<2x8x1xf32>) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [2] : (tensor<2x8x11xf32>, tensor<f32>) -> tensor<2x8xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x8xf32>
    %2 = stablehlo.maximum %1, %0 : tensor<2x8xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : (tensor<2x8x1xf32>) -> tensor<2x8x11xf32>
    %5 = stablehlo.subtract %arg0, %4 : tensor<2x8x11xf32>
    %6 = stablehlo.exponential %5 : tensor<2x8x11xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_1) applies stablehlo.add across dimensions = [2] : (tensor<2x8x11xf32>, tensor<f32>) -> tensor<2x8xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x1xf32>
    %9 = stablehlo.log %8 : tensor<2x8x1xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0, 1, 2] : (tensor<2x8x1xf32>) -> tensor<2x8x11xf32>
    %11 = stablehlo.subtract %5, %10 : tensor<2x8x11xf32>
    return %11, %6, %8 : tensor<2x8x11xf32>, tensor<2x8x11xf32>, tensor<2x8x1xf32>
  }
  func.func private @take_along_axis(%arg0: tensor<2x8x11xf32>, %arg1: tensor<2x8x1xi32>) -> (tensor<2x8x1xf32>, tensor<2x8x1x1xi32>) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<2x8x1xi32>
    %1 = stablehlo.compare LT, %arg1, %0, SIGNED : (tensor<2x8x1xi32>, tensor<2x8x1xi32>) -> tensor<2x8x1xi1>
    %c_0 = stablehlo.constant dense<11> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<2x8x1xi32>
    %3 = stablehlo.add %arg1, %2 : tensor<2x8x1xi32>
    %4 = stablehlo.select %1, %3, %arg1 : tensor<2x8x1xi1>, tensor<2x8x1xi32>
    %5 = stablehlo.reshape %4 : (tensor<2x8x1xi32>) -> tensor<2x8x1x1xi32>
    %c_1 = stablehlo.constant dense<10> : tensor<1xi32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %6 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<2x8x1x1xi32>
    %7 = stablehlo.compare GE, %5, %6, SIGNED : (tensor<2x8x1x1xi32>, tensor<2x8x1x1xi32>) -> tensor<2x8x1x1xi1>
    %8 = stablehlo.broadcast_in_dim %c_1, dims = [3] : (tensor<1xi32>) -> tensor<1x1x1x1xi32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1, 2, 3] : (tensor<1x1x1x1xi32>) -> tensor<2x8x1x1xi32>
    %10 = stablehlo.compare LE, %5, %9, SIGNED : (tensor<2x8x1x1xi32>, tensor<2x8x1x1xi32>) -> tensor<2x8x1x1xi1>
    %11 = stablehlo.and %7, %10 : tensor<2x8x1x1xi1>
    %c_3 = stablehlo.constant dense<true> : tensor<i1>
    %12 = stablehlo.reduce(%11 init: %c_3) applies stablehlo.and across dimensions = [3] : (tensor<2x8x1x1xi1>, tensor<i1>) -> tensor<2x8x1xi1>
    %13 = "stablehlo.gather"(%arg0, %5) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [2], operand_batching_dims = [0, 1], start_indices_batching_dims = [0, 1], start_index_map = [2], index_vector_dim = 3>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1, 1>}> : (tensor<2x8x11xf32>, tensor<2x8x1x1xi32>) -> tensor<2x8x1xf32>
    %cst = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x8x1xf32>
    %15 = stablehlo.select %12, %13, %14 : tensor<2x8x1xi1>, tensor<2x8x1xf32>
    return %15, %5 : tensor<2x8x1xf32>, tensor<2x8x1x1xi32>
  }
  func.func private @take_along_axis_0(%arg0: tensor<2x8x1x1xi32>, %arg1: tensor<2x8x1xf32>) -> tensor<2x8x11xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x8x11xf32>
    %1 = "stablehlo.scatter"(%0, %arg0, %arg1) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [2], input_batching_dims = [0, 1], scatter_indices_batching_dims = [0, 1], scatter_dims_to_operand_dims = [2], index_vector_dim = 3>, unique_indices = false}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %2 = stablehlo.add %arg2, %arg3 : tensor<f32>
      stablehlo.return %2 : tensor<f32>
    }) : (tensor<2x8x11xf32>, tensor<2x8x1x1xi32>, tensor<2x8x1xf32>) -> tensor<2x8x11xf32>
    return %1 : tensor<2x8x11xf32>
  }
  func.func private @log_softmax_1(%arg0: tensor<2x8x11xf32>, %arg1: tensor<2x8x1xf32>, %arg2: tensor<2x8x11xf32>) -> tensor<2x8x11xf32> {
    %0 = stablehlo.negate %arg2 : tensor<2x8x11xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [2] : (tensor<2x8x11xf32>, tensor<f32>) -> tensor<2x8xf32>
    %2 = stablehlo.reshape %1 : (tensor<2x8xf32>) -> tensor<2x8x1xf32>
    %3 = stablehlo.divide %2, %arg1 : tensor<2x8x1xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.reduce(%3 init: %cst_0) applies stablehlo.add across dimensions = [2] : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x11xf32>
    %6 = stablehlo.multiply %5, %arg0 : tensor<2x8x11xf32>
    %7 = stablehlo.add %arg2, %6 : tensor<2x8x11xf32>
    return %7 : tensor<2x8x11xf32>
  }
  func.func private @_where_2(%arg0: tensor<2x2x8x8xi1>, %arg1: tensor<2x2x8x8xf32>, %arg2: tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x2x8x8xf32>
    %1 = stablehlo.select %arg0, %arg2, %0 : tensor<2x2x8x8xi1>, tensor<2x2x8x8xf32>
    return %1 : tensor<2x2x8x8xf32>
  }
}
