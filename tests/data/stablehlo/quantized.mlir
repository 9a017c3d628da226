// Quantized element types (!quant.uniform), with the spec's quantize / dequantize semantics
// (our own cases; expected storage values computed by hand).

func.func @quantize_rounds_to_even_and_clamps() {
  // x / 0.5 + 1 = [3.5, -19, 5, 201] -> clamp to [-8, 7] -> round half to even
  %x = stablehlo.constant dense<[1.25, -10.0, 2.0, 100.0]> : tensor<4xf32>
  %q = "stablehlo.uniform_quantize"(%x) : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8<-8:7>:f32, 0.5:1>>
  %s = "stablehlo.bitcast_convert"(%q) : (tensor<4x!quant.uniform<i8<-8:7>:f32, 0.5:1>>) -> tensor<4xi8>
  check.expect_eq_const %s, dense<[4, -8, 5, 7]> : tensor<4xi8>
  func.return
}

// -----

func.func @multiply_requantizes() {
  %a = stablehlo.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %b = stablehlo.constant dense<[3.0, 0.5]> : tensor<2xf32>
  %qa = "stablehlo.uniform_quantize"(%a) : (tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f32, 0.25>>
  %qb = "stablehlo.uniform_quantize"(%b) : (tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f32, 0.5:2>>
  %sb = "stablehlo.bitcast_convert"(%qb) : (tensor<2x!quant.uniform<i8:f32, 0.5:2>>) -> tensor<2xi8>
  check.expect_eq_const %sb, dense<[8, 3]> : tensor<2xi8>
  // [1, -2] * [3, 0.5] = [3, -1] -> / 1.0 - 1
  %p = stablehlo.multiply %qa, %qb : (tensor<2x!quant.uniform<i8:f32, 0.25>>, tensor<2x!quant.uniform<i8:f32, 0.5:2>>) -> tensor<2x!quant.uniform<i8:f32, 1.0:-1>>
  %sp = "stablehlo.bitcast_convert"(%p) : (tensor<2x!quant.uniform<i8:f32, 1.0:-1>>) -> tensor<2xi8>
  check.expect_eq_const %sp, dense<[2, -2]> : tensor<2xi8>
  func.return
}

// -----

func.func @compare_dequantized_values() {
  %a = stablehlo.constant dense<[4, -8]> : tensor<2xi8>
  %b = stablehlo.constant dense<[3, -2]> : tensor<2xi8>
  %qa = "stablehlo.bitcast_convert"(%a) : (tensor<2xi8>) -> tensor<2x!quant.uniform<i8:f32, 0.25>>
  %qb = "stablehlo.bitcast_convert"(%b) : (tensor<2xi8>) -> tensor<2x!quant.uniform<i8:f32, 0.5:2>>
  // [1.0, -2.0] > [0.5, -2.0]
  %c = stablehlo.compare GT, %qa, %qb : (tensor<2x!quant.uniform<i8:f32, 0.25>>, tensor<2x!quant.uniform<i8:f32, 0.5:2>>) -> tensor<2xi1>
  check.expect_eq_const %c, dense<[true, false]> : tensor<2xi1>
  func.return
}

// -----

func.func @dequantize_per_axis() {
  %s = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi8>
  %q = "stablehlo.bitcast_convert"(%s) : (tensor<2x2xi8>) -> tensor<2x2x!quant.uniform<i8:f32:1, {0.5, 2.0:1}>>
  %x = "stablehlo.uniform_dequantize"(%q) : (tensor<2x2x!quant.uniform<i8:f32:1, {0.5, 2.0:1}>>) -> tensor<2x2xf32>
  check.expect_eq_const %x, dense<[[0.5, 2.0], [1.5, 6.0]]> : tensor<2x2xf32>
  func.return
}
