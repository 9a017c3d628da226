// Results printed as `stablehlo-translate --interpret` prints them, in both formats.
// RUN: stablehlo-translate --interpret --split-input-file %s | FileCheck %s
// RUN: stablehlo-translate --interpret --interpreter-print-dense --split-input-file %s | FileCheck %s --check-prefix=DENSE

func.func @main() -> (tensor<3xui16>, tensor<i1>, tensor<2x3xi32>, tensor<1x2x1xf32>, tensor<3x0xi4>) {
  // CHECK:      tensor<3xui16> {
  // CHECK-NEXT:   [65535, 0, 7]
  // CHECK-NEXT: }
  // DENSE:      dense<[65535, 0, 7]> : tensor<3xui16>
  %0 = stablehlo.constant dense<[65535, 0, 7]> : tensor<3xui16>
  // CHECK-NEXT: tensor<i1> {false}
  // DENSE-NEXT: dense<false> : tensor<i1>
  %1 = stablehlo.constant dense<false> : tensor<i1>
  // CHECK-NEXT: tensor<2x3xi32> {
  // CHECK-NEXT:   [
  // CHECK-NEXT:     [-1, 0, 1],
  // CHECK-NEXT:     [2, 3, 4]
  // CHECK-NEXT:   ]
  // CHECK-NEXT: }
  // DENSE-NEXT{LITERAL}: dense<[[-1, 0, 1], [2, 3, 4]]> : tensor<2x3xi32>
  %2 = stablehlo.iota dim = 1 : tensor<2x3xi32>
  %3 = stablehlo.constant dense<[[-1, -1, -1], [2, 2, 2]]> : tensor<2x3xi32>
  %4 = stablehlo.add %2, %3 : tensor<2x3xi32>
  // CHECK-NEXT: tensor<1x2x1xf32> {
  // CHECK-NEXT:   [
  // CHECK-NEXT:     [
  // CHECK-NEXT:       [2.500000e-01],
  // CHECK-NEXT:       [0x7F800000]
  // CHECK-NEXT:     ]
  // CHECK-NEXT:   ]
  // CHECK-NEXT: }
  // DENSE-NEXT{LITERAL}: dense<[[[2.500000e-01], [0x7F800000]]]> : tensor<1x2x1xf32>
  %5 = stablehlo.constant dense<[[[1.0], [0.0]]]> : tensor<1x2x1xf32>
  %6 = stablehlo.constant dense<4.0> : tensor<1x2x1xf32>
  %7 = stablehlo.multiply %5, %6 : tensor<1x2x1xf32>
  %8 = stablehlo.constant dense<1.0> : tensor<1x2x1xf32>
  %9 = stablehlo.divide %8, %7 : tensor<1x2x1xf32>
  // CHECK-NEXT: tensor<3x0xi4> {
  // CHECK-NEXT:   [
  // CHECK-NEXT:     [],
  // CHECK-NEXT:     [],
  // CHECK-NEXT:     []
  // CHECK-NEXT:   ]
  // CHECK-NEXT: }
  // DENSE-NEXT: dense<> : tensor<3x0xi4>
  %10 = stablehlo.constant dense<> : tensor<3x0xi4>
  func.return %0, %1, %4, %9, %10 : tensor<3xui16>, tensor<i1>, tensor<2x3xi32>, tensor<1x2x1xf32>, tensor<3x0xi4>
}

// -----

func.func @main() -> (tensor<2xcomplex<f64>>, tensor<2x2xbf16>, tensor<2xf64>) {
  // CHECK:      tensor<2xcomplex<f64>> {
  // CHECK-NEXT{LITERAL}: [[1.500000e+00, -2.000000e+00], [0.000000e+00, 1.000000e-01]]
  // CHECK-NEXT: }
  // DENSE{LITERAL}: dense<[(1.500000e+00,-2.000000e+00), (0.000000e+00,1.000000e-01)]> : tensor<2xcomplex<f64>>
  %0 = stablehlo.constant dense<[(1.5, -2.0), (0.0, 0.1)]> : tensor<2xcomplex<f64>>
  // CHECK:      tensor<2x2xbf16> {
  // CHECK:          [-1.000000e+00, -1.000000e+00]
  // DENSE:      dense<-1.000000e+00> : tensor<2x2xbf16>
  %1 = stablehlo.constant dense<-1.0> : tensor<2x2xbf16>
  // CHECK:      tensor<2xf64> {
  // CHECK-NEXT:   [0.33333333333333331, 1.000000e+10]
  // DENSE:      dense<[0.33333333333333331, 1.000000e+10]> : tensor<2xf64>
  %2 = stablehlo.constant dense<[1.0, 1.0e10]> : tensor<2xf64>
  %3 = stablehlo.constant dense<[3.0, 1.0]> : tensor<2xf64>
  %4 = stablehlo.divide %2, %3 : tensor<2xf64>
  func.return %0, %1, %4 : tensor<2xcomplex<f64>>, tensor<2x2xbf16>, tensor<2xf64>
}

// -----

// interpreter.print writes `%N = value` as the program runs, before the results, %N the name
// MLIR's printer gives the value (here %2, after %0 and %1); the four device threads of
// run_parallel print whole values, never interleaved lines.
func.func @device() -> tensor<2xi32> {
  %id = stablehlo.partition_id : tensor<ui32>
  %0 = stablehlo.convert %id : (tensor<ui32>) -> tensor<i32>
  %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<i32>) -> tensor<2xi32>
  interpreter.print %1 : tensor<2xi32>
  return %1 : tensor<2xi32>
}

func.func @main() -> tensor<2xi32> {
  // CHECK:      %2 = tensor<2xi32> {
  // CHECK-NEXT:   [{{[0-3]}}, {{[0-3]}}]
  // CHECK-NEXT: }
  // CHECK-NEXT: %2 = tensor<2xi32> {
  // CHECK-NEXT:   [{{[0-3]}}, {{[0-3]}}]
  // CHECK-NEXT: }
  // CHECK-NEXT: %2 = tensor<2xi32> {
  // CHECK-NEXT:   [{{[0-3]}}, {{[0-3]}}]
  // CHECK-NEXT: }
  // CHECK-NEXT: %2 = tensor<2xi32> {
  // CHECK-NEXT:   [{{[0-3]}}, {{[0-3]}}]
  // CHECK-NEXT: }
  // CHECK-NEXT: tensor<2xi32> {
  // CHECK-NEXT:   [3, 3]
  // CHECK-NEXT: }
  // DENSE:      %2 = tensor<2xi32> {
  // DENSE:      dense<3> : tensor<2xi32>
  %r:4 = "interpreter.run_parallel"() {
    programs = [[@device, @device, @device, @device]]
  } : () -> (tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>)
  func.return %r#3 : tensor<2xi32>
}

// -----

// In a nested region MLIR numbers on from the end of the enclosing region: the while is %2,
// so the body's ops are %3 and %4.
func.func @main() -> tensor<i32> {
  // CHECK:      %4 = tensor<i32> {1}
  // CHECK-NEXT: %4 = tensor<i32> {2}
  // CHECK-NEXT: %4 = tensor<i32> {3}
  // CHECK-NEXT: tensor<i32> {3}
  // CHECK-NOT:  %4 =
  // DENSE:      %4 = tensor<i32> {3}
  // DENSE-NEXT: dense<3> : tensor<i32>
  %0 = stablehlo.constant dense<0> : tensor<i32>
  %1 = stablehlo.constant dense<3> : tensor<i32>
  %2:2 = stablehlo.while(%i = %0, %n = %1) : tensor<i32>, tensor<i32>
  cond {
    %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %next = stablehlo.add %i, %one : tensor<i32>
    interpreter.print %next : tensor<i32>
    stablehlo.return %next, %n : tensor<i32>, tensor<i32>
  }
  func.return %2#0 : tensor<i32>
}
