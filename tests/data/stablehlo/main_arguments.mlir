// main's arguments from --args; wrong --args fail with the error stablehlo-translate gives.
// RUN: stablehlo-translate --interpret %s --args="[dense<[1.5, -2.0]> : tensor<2xf32>, dense<[[true, false]]> : tensor<1x2xi1>, dense<3> : tensor<ui8>]" | FileCheck %s
// RUN: not stablehlo-translate --interpret %s --args="dense<1> : tensor<2xi32>" 2>&1 | FileCheck %s --check-prefix=NOT-ARRAY
// RUN: not stablehlo-translate --interpret %s --args="[dense<1> : tensor<2xf32>, 7]" 2>&1 | FileCheck %s --check-prefix=NOT-DENSE
// RUN: not stablehlo-translate --interpret %s --args="[dense<1> : tensor<2xf32>]" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not stablehlo-translate --interpret %s --args="[dense<1> : tensor<2xf32>, dense<true> : tensor<1x2xi1>, dense<3> : tensor<i8>]" 2>&1 | FileCheck %s --check-prefix=TYPE

// NOT-ARRAY: expectected array attribute string for args, i.e. --args=[dense<1> : tensor<2xi32>, ...]
// NOT-DENSE: expected dense elements attribute for args elements, i.e. --args=[dense<1> : tensor<2xi32>, ...]
// NOT-DENSE-SAME: argument 1 is 7
// COUNT: incorrect number of arguments specified, provided 1 inputs but function expected 3
// TYPE: invalid input argument type at index 2, input type was tensor<i8> but entry function expected tensor<ui8>

func.func @helper(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.multiply %x, %x : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

func.func @main(%x: tensor<2xf32>, %mask: tensor<1x2xi1>, %n: tensor<ui8>) -> (tensor<2xf32>, tensor<1x2xi1>, tensor<ui8>) {
  %0 = func.call @helper(%x) : (tensor<2xf32>) -> tensor<2xf32>
  %1 = stablehlo.not %mask : tensor<1x2xi1>
  %2 = stablehlo.add %n, %n : tensor<ui8>
  func.return %0, %1, %2 : tensor<2xf32>, tensor<1x2xi1>, tensor<ui8>
}

// CHECK:      tensor<2xf32> {
// CHECK-NEXT:   [2.250000e+00, 4.000000e+00]
// CHECK-NEXT: }
// CHECK-NEXT: tensor<1x2xi1> {
// CHECK-NEXT:   [
// CHECK-NEXT:     [false, true]
// CHECK-NEXT:   ]
// CHECK-NEXT: }
// CHECK-NEXT: tensor<ui8> {6}
// CHECK-NOT:  tensor
