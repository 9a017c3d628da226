// stablehlo.composite (a call of its decomposition, §14) and convert complex -> real (§8).

func.func private @my_add(%a : tensor<2xf32>, %b : tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.add %a, %b : tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func @composite() {
  %x = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = stablehlo.constant dense<[0.5, -4.0]> : tensor<2xf32>
  %0 = stablehlo.composite "my_namespace.add" %x, %y {composite_attributes = {mode = "fast", n = 2 : i64}, decomposition = @my_add, version = 3 : i32} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = "stablehlo.composite"(%0, %0) {decomposition = @my_add, name = "my_namespace.add"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  check.expect_eq_const %0, dense<[1.5, -2.0]> : tensor<2xf32>
  check.expect_eq_const %1, dense<[3.0, -4.0]> : tensor<2xf32>
  func.return
}

// -----

func.func @convert_complex_to_real() {
  %c = stablehlo.constant dense<[(1.5, 2.0), (-2.75, -1.0), (0.0, 3.0)]> : tensor<3xcomplex<f32>>
  %0 = stablehlo.convert %c : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
  %1 = stablehlo.convert %c : (tensor<3xcomplex<f32>>) -> tensor<3xf64>
  %2 = stablehlo.convert %c : (tensor<3xcomplex<f32>>) -> tensor<3xi32>
  %3 = stablehlo.convert %c : (tensor<3xcomplex<f32>>) -> tensor<3xi1>
  %4 = stablehlo.convert %0 : (tensor<3xf32>) -> tensor<3xcomplex<f64>>
  check.expect_eq_const %0, dense<[1.5, -2.75, 0.0]> : tensor<3xf32>
  check.expect_eq_const %1, dense<[1.5, -2.75, 0.0]> : tensor<3xf64>
  check.expect_eq_const %2, dense<[1, -2, 0]> : tensor<3xi32>
  check.expect_eq_const %3, dense<[true, true, false]> : tensor<3xi1>
  check.expect_eq_const %4, dense<[(1.5, 0.0), (-2.75, 0.0), (0.0, 0.0)]> : tensor<3xcomplex<f64>>
  func.return
}
