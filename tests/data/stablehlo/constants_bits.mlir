// Constant forms (hex, complex splat, i2/u2, i4/u4, narrow floats, no elements) and bitcast_convert to and from i1 bits.

func.func @hex_scalar() {
  %0 = stablehlo.constant dense<0x7F> : tensor<2xi8>
  check.expect_eq_const %0, dense<127> : tensor<2xi8>
  func.return
}
// -----
func.func @hex_blob() {
  %0 = stablehlo.constant dense<"0x0100000002000000"> : tensor<2xi32>
  check.expect_eq_const %0, dense<[1, 2]> : tensor<2xi32>
  func.return
}
// -----
func.func @hex_float() {
  %0 = stablehlo.constant dense<0x3F800000> : tensor<f32>
  check.expect_eq_const %0, dense<1.0> : tensor<f32>
  func.return
}
// -----
func.func @complex_splat() {
  %0 = stablehlo.constant dense<(1.5, -2.0)> : tensor<2xcomplex<f32>>
  check.expect_eq_const %0, dense<[(1.5, -2.0), (1.5, -2.0)]> : tensor<2xcomplex<f32>>
  func.return
}
// -----
func.func @i4() {
  %0 = stablehlo.constant dense<[-8, 7, 0x3]> : tensor<3xi4>
  %1 = stablehlo.add %0, %0 : tensor<3xi4>
  check.expect_eq_const %1, dense<[0, -2, 6]> : tensor<3xi4>
  func.return
}
// -----
func.func @u4() {
  %0 = stablehlo.constant dense<[15, 1]> : tensor<2xui4>
  %1 = stablehlo.add %0, %0 : tensor<2xui4>
  check.expect_eq_const %1, dense<[14, 2]> : tensor<2xui4>
  func.return
}
// -----
func.func @empty() {
  %0 = stablehlo.constant dense<> : tensor<0xi32>
  check.expect_eq_const %0, dense<> : tensor<0xi32>
  func.return
}
// -----
func.func @hex_complex() {
  %0 = stablehlo.constant dense<(0x3F800000, 0x40000000)> : tensor<complex<f32>>
  check.expect_eq_const %0, dense<(1.0, 2.0)> : tensor<complex<f32>>
  func.return
}
// -----
func.func @i1_bits_to_i16() {
  // 0x8005: bits 0, 2 and 15 set (element 0 is the least significant bit).
  %bits = stablehlo.constant dense<[true, false, true, false, false, false, false, false,
                                    false, false, false, false, false, false, false, true]> : tensor<16xi1>
  %0 = stablehlo.bitcast_convert %bits : (tensor<16xi1>) -> tensor<i16>
  check.expect_eq_const %0, dense<-32763> : tensor<i16>
  func.return
}
// -----
func.func @f32_to_i1_bits() {
  // 1.0f is 0x3F800000: bits 23..29 set.
  %x = stablehlo.constant dense<[1.0, -0.0]> : tensor<2xf32>
  %0 = stablehlo.bitcast_convert %x : (tensor<2xf32>) -> tensor<2x32xi1>
  %1 = stablehlo.convert %0 : (tensor<2x32xi1>) -> tensor<2x32xi32>
  %2 = stablehlo.iota dim = 1 : tensor<2x32xi32>
  %3 = stablehlo.multiply %1, %2 : tensor<2x32xi32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %4 = stablehlo.reduce(%3 init: %zero) applies stablehlo.add across dimensions = [1]
    : (tensor<2x32xi32>, tensor<i32>) -> tensor<2xi32>
  // sum of set bit positions: 23 + ... + 29 = 182 for 1.0; bit 31 alone for -0.0
  check.expect_eq_const %4, dense<[182, 31]> : tensor<2xi32>
  func.return
}
// -----
func.func @i2_and_ui2_wrap() {
  %a = stablehlo.constant dense<[1, -2, -1]> : tensor<3xi2>
  %b = stablehlo.add %a, %a : tensor<3xi2>
  check.expect_eq_const %b, dense<[-2, 0, -2]> : tensor<3xi2>
  %u = stablehlo.constant dense<[3, 1]> : tensor<2xui2>
  %v = stablehlo.add %u, %u : tensor<2xui2>
  check.expect_eq_const %v, dense<[2, 2]> : tensor<2xui2>
  func.return
}
// -----
func.func @narrow_floats_from_bits() {
  // f4E2M1FN 0x6 is 4.0, 0xF is -6.0; f8E8M0FNU 0x7F is 1.0
  %a = stablehlo.constant dense<[0x6, 0xF]> : tensor<2xf4E2M1FN>
  %fa = stablehlo.convert %a : (tensor<2xf4E2M1FN>) -> tensor<2xf32>
  check.expect_eq_const %fa, dense<[4.0, -6.0]> : tensor<2xf32>
  %b = stablehlo.constant dense<0x7F> : tensor<f8E8M0FNU>
  %fb = stablehlo.convert %b : (tensor<f8E8M0FNU>) -> tensor<f32>
  check.expect_eq_const %fb, dense<1.0> : tensor<f32>
  %c = stablehlo.constant dense<[1.5, -0.25]> : tensor<2xf8E3M4>
  %d = stablehlo.multiply %c, %c : tensor<2xf8E3M4>
  check.expect_eq_const %d, dense<[2.25, 0.0625]> : tensor<2xf8E3M4>
  func.return
}
