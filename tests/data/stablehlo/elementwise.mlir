// Elementwise ops, compare, select, clamp, convert, constants (splat, nested, hex, bool, bf16).

func.func @add_sub_mul_div() {
  %a = stablehlo.constant dense<[1.0, -2.0, 3.5, 8.0]> : tensor<4xf32>
  %b = stablehlo.constant dense<2.0> : tensor<4xf32>
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  %1 = stablehlo.subtract %a, %b : tensor<4xf32>
  %2 = stablehlo.multiply %a, %b : tensor<4xf32>
  %3 = "stablehlo.divide"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  check.expect_eq_const %0, dense<[3.0, 0.0, 5.5, 10.0]> : tensor<4xf32>
  check.expect_eq_const %1, dense<[-1.0, -4.0, 1.5, 6.0]> : tensor<4xf32>
  check.expect_eq_const %2, dense<[2.0, -4.0, 7.0, 16.0]> : tensor<4xf32>
  check.expect_almost_eq_const %3, dense<[0.5, -1.0, 1.75, 4.0]> : tensor<4xf32>
  func.return
}

// -----

func.func @unary_math() {
  %x = stablehlo.constant dense<[0.0, 1.0, 4.0]> : tensor<3xf32>
  %0 = stablehlo.sqrt %x : tensor<3xf32>
  %1 = stablehlo.exponential %x : tensor<3xf32>
  %2 = stablehlo.negate %x : tensor<3xf32>
  %3 = stablehlo.tanh %x : tensor<3xf32>
  %4 = chlo.erf %x : tensor<3xf32> -> tensor<3xf32>
  %5 = stablehlo.abs %2 : tensor<3xf32>
  %6 = stablehlo.log_plus_one %x : tensor<3xf32>
  check.expect_almost_eq_const %0, dense<[0.0, 1.0, 2.0]> : tensor<3xf32>
  check.expect_almost_eq_const %1, dense<[1.0, 2.71828183, 54.5981500]> : tensor<3xf32>
  check.expect_eq_const %2, dense<[-0.0, -1.0, -4.0]> : tensor<3xf32>
  check.expect_almost_eq_const %3, dense<[0.0, 0.76159416, 0.99932930]> : tensor<3xf32>
  check.expect_almost_eq_const %4, dense<[0.0, 0.84270079, 1.0]> : tensor<3xf32>
  check.expect_eq %5, %x : tensor<3xf32>, tensor<3xf32>
  check.expect_close %6, dense<[0.0, 0.69314718, 1.60943791]> : tensor<3xf32>
  func.return
}

// -----

func.func @integer_ops() {
  %a = stablehlo.constant dense<[7, -7, 12, 1]> : tensor<4xi32>
  %b = stablehlo.constant dense<[2, 2, 5, 0]> : tensor<4xi32>
  %0 = stablehlo.divide %a, %b : tensor<4xi32>
  %1 = stablehlo.remainder %a, %b : tensor<4xi32>
  %2 = stablehlo.and %a, %b : tensor<4xi32>
  %3 = stablehlo.shift_left %a, %b : tensor<4xi32>
  %4 = stablehlo.popcnt %a : tensor<4xi32>
  %5 = stablehlo.maximum %a, %b : tensor<4xi32>
  check.expect_eq_const %0, dense<[3, -3, 2, -1]> : tensor<4xi32>
  check.expect_eq_const %1, dense<[1, -1, 2, 1]> : tensor<4xi32>
  check.expect_eq_const %2, dense<[2, 0, 4, 0]> : tensor<4xi32>
  check.expect_eq_const %3, dense<[28, -28, 384, 1]> : tensor<4xi32>
  check.expect_eq_const %4, dense<[3, 30, 2, 1]> : tensor<4xi32>
  check.expect_eq_const %5, dense<[7, 2, 12, 1]> : tensor<4xi32>
  func.return
}

// -----

func.func @compare_select_clamp() {
  %a = stablehlo.constant dense<[1.0, 5.0, 0x7FC00000]> : tensor<3xf32>
  %b = stablehlo.constant dense<[2.0, 2.0, 2.0]> : tensor<3xf32>
  %lt = stablehlo.compare  LT, %a, %b,  FLOAT : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  %ne = "stablehlo.compare"(%a, %b) {comparison_direction = #stablehlo<comparison_direction NE>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  %sel = stablehlo.select %lt, %a, %b : tensor<3xi1>, tensor<3xf32>
  %lo = stablehlo.constant dense<0.0> : tensor<f32>
  %hi = stablehlo.constant dense<3.0> : tensor<f32>
  %c = stablehlo.clamp %lo, %a, %hi : (tensor<f32>, tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  check.expect_eq_const %lt, dense<[true, false, false]> : tensor<3xi1>
  check.expect_eq_const %ne, dense<true> : tensor<3xi1>
  check.expect_eq_const %sel, dense<[1.0, 2.0, 2.0]> : tensor<3xf32>
  check.expect_eq_const %c, dense<[1.0, 3.0, 0x7FC00000]> : tensor<3xf32>
  func.return
}

// -----

func.func @convert_bitcast() {
  %a = stablehlo.constant dense<[1.5, -2.5, 300.0]> : tensor<3xf32>
  %0 = stablehlo.convert %a : (tensor<3xf32>) -> tensor<3xi32>
  %1 = stablehlo.convert %a : (tensor<3xf32>) -> tensor<3xbf16>
  %2 = stablehlo.bitcast_convert %a : (tensor<3xf32>) -> tensor<3xui32>
  %h = stablehlo.constant dense<"0x0000803F00000040"> : tensor<2xf32>
  %i = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi8>
  %r = stablehlo.reverse %i, dims = [0, 1] : tensor<2x3xi8>
  check.expect_eq_const %0, dense<[1, -2, 300]> : tensor<3xi32>
  check.expect_eq_const %1, dense<[1.5, -2.5, 300.0]> : tensor<3xbf16>
  check.expect_eq_const %2, dense<[1069547520, 3223322624, 1133903872]> : tensor<3xui32>
  check.expect_eq_const %h, dense<[1.0, 2.0]> : tensor<2xf32>
  check.expect_eq_const %r, dense<[[6, 5, 4], [3, 2, 1]]> : tensor<2x3xi8>
  func.return
}

// -----

func.func @cbrt_complex_principal_root() {
  // (-8)^(1/3) on the principal branch: 2 * (cos(pi/3) + i sin(pi/3))
  %x = stablehlo.constant dense<[(-8.0, 0.0), (0.0, 27.0)]> : tensor<2xcomplex<f64>>
  %r = stablehlo.cbrt %x : tensor<2xcomplex<f64>>
  check.expect_almost_eq_const %r, dense<[(1.0, 1.7320508075688772), (2.598076211353316, 1.5)]> : tensor<2xcomplex<f64>>
  func.return
}
