// while (with an implicit capture), if, case, func.call, optimization_barrier, tuples.

func.func @while_capture() {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %step = stablehlo.constant dense<3> : tensor<i32>
  %limit = stablehlo.constant dense<4> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %acc = %c0) : tensor<i32>, tensor<i32>
  cond {
    %p = stablehlo.compare  LT, %i, %limit,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %n = stablehlo.add %i, %one : tensor<i32>
    %a = stablehlo.add %acc, %step : tensor<i32>
    stablehlo.return %n, %a : tensor<i32>, tensor<i32>
  }
  check.expect_eq_const %r#0, dense<4> : tensor<i32>
  check.expect_eq_const %r#1, dense<12> : tensor<i32>
  func.return
}

// -----

func.func @if_case() {
  %t = stablehlo.constant dense<true> : tensor<i1>
  %x = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %0 = "stablehlo.if"(%t) ({
    %n = stablehlo.negate %x : tensor<2xf32>
    stablehlo.return %n : tensor<2xf32>
  }, {
    stablehlo.return %x : tensor<2xf32>
  }) : (tensor<i1>) -> tensor<2xf32>
  %idx = stablehlo.constant dense<7> : tensor<i32>
  %1 = "stablehlo.case"(%idx) ({
    stablehlo.return %x : tensor<2xf32>
  }, {
    %m = stablehlo.multiply %x, %x : tensor<2xf32>
    stablehlo.return %m : tensor<2xf32>
  }) : (tensor<i32>) -> tensor<2xf32>
  check.expect_eq_const %0, dense<[-1.0, -2.0]> : tensor<2xf32>
  check.expect_eq_const %1, dense<[1.0, 4.0]> : tensor<2xf32>
  func.return
}

// -----

func.func private @helper(%a: tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>) {
  %0 = stablehlo.add %a, %a : tensor<2xi32>
  return %0, %a : tensor<2xi32>, tensor<2xi32>
}

func.func @calls_and_barrier() {
  %x = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %0:2 = func.call @helper(%x) : (tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>)
  %1:2 = stablehlo.optimization_barrier %0#0, %0#1 : tensor<2xi32>, tensor<2xi32>
  %t = stablehlo.tuple %1#0, %1#1 : tuple<tensor<2xi32>, tensor<2xi32>>
  %2 = stablehlo.get_tuple_element %t[1] : (tuple<tensor<2xi32>, tensor<2xi32>>) -> tensor<2xi32>
  check.expect_eq_const %1#0, dense<[2, 4]> : tensor<2xi32>
  check.expect_eq_const %2, dense<[1, 2]> : tensor<2xi32>
  func.return
}
