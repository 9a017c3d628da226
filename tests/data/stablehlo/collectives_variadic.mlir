// collective_broadcast with several operands and with a dynamic root (our own cases).

module @two_operands_from_the_first_member {
  func.func @bcast(%a : tensor<2xi32>, %b : tensor<f32>) -> (tensor<2xi32>, tensor<f32>) {
    %r:2 = "stablehlo.collective_broadcast"(%a, %b) {
      replica_groups = dense<[[2, 0], [1, 3]]> : tensor<2x2xi64>
    } : (tensor<2xi32>, tensor<f32>) -> (tensor<2xi32>, tensor<f32>)
    return %r#0, %r#1 : tensor<2xi32>, tensor<f32>
  }
  func.func @main() {
    %a0 = stablehlo.constant dense<[0, 0]> : tensor<2xi32>
    %a1 = stablehlo.constant dense<[1, 1]> : tensor<2xi32>
    %a2 = stablehlo.constant dense<[2, 2]> : tensor<2xi32>
    %a3 = stablehlo.constant dense<[3, 3]> : tensor<2xi32>
    %b0 = stablehlo.constant dense<0.5> : tensor<f32>
    %b1 = stablehlo.constant dense<1.5> : tensor<f32>
    %b2 = stablehlo.constant dense<2.5> : tensor<f32>
    %b3 = stablehlo.constant dense<3.5> : tensor<f32>
    %r:8 = "interpreter.run_parallel"(%a0, %b0, %a1, %b1, %a2, %b2, %a3, %b3) {
      programs = [[@bcast], [@bcast], [@bcast], [@bcast]]
    } : (tensor<2xi32>, tensor<f32>, tensor<2xi32>, tensor<f32>, tensor<2xi32>, tensor<f32>,
         tensor<2xi32>, tensor<f32>)
      -> (tensor<2xi32>, tensor<f32>, tensor<2xi32>, tensor<f32>, tensor<2xi32>, tensor<f32>,
          tensor<2xi32>, tensor<f32>)
    // Replicas 2 and 0 take replica 2's values; replicas 1 and 3 take replica 1's.
    check.expect_eq_const %r#0, dense<[2, 2]> : tensor<2xi32>
    check.expect_eq_const %r#1, dense<2.5> : tensor<f32>
    check.expect_eq_const %r#2, dense<[1, 1]> : tensor<2xi32>
    check.expect_eq_const %r#3, dense<1.5> : tensor<f32>
    check.expect_eq_const %r#4, dense<[2, 2]> : tensor<2xi32>
    check.expect_eq_const %r#5, dense<2.5> : tensor<f32>
    check.expect_eq_const %r#6, dense<[1, 1]> : tensor<2xi32>
    check.expect_eq_const %r#7, dense<1.5> : tensor<f32>
    func.return
  }
}

// -----

module @dynamic_roots_keep_every_bit {
  func.func @bcast(%x : tensor<2xf32>, %y : tensor<i1>, %root : tensor<2xi32>) -> (tensor<2xf32>, tensor<i1>) {
    %r:2 = "stablehlo.collective_broadcast"(%x, %y, %root) {
      replica_groups = dense<[[0, 1, 2]]> : tensor<1x3xi64>,
      has_dynamic_root
    } : (tensor<2xf32>, tensor<i1>, tensor<2xi32>) -> (tensor<2xf32>, tensor<i1>)
    return %r#0, %r#1 : tensor<2xf32>, tensor<i1>
  }
  func.func @main() {
    %x0 = stablehlo.constant dense<[1.0, 1.0]> : tensor<2xf32>
    %x1 = stablehlo.constant dense<[1.0, 1.0]> : tensor<2xf32>
    %x2 = stablehlo.constant dense<[-0.0, 0x7FC00000]> : tensor<2xf32>
    %yes = stablehlo.constant dense<true> : tensor<i1>
    %no = stablehlo.constant dense<false> : tensor<i1>
    // x from member 2 (-0.0 and NaN arrive as they are), y from member 1.
    %root = stablehlo.constant dense<[2, 1]> : tensor<2xi32>
    %r:6 = "interpreter.run_parallel"(%x0, %yes, %root, %x1, %no, %root, %x2, %yes, %root) {
      programs = [[@bcast], [@bcast], [@bcast]]
    } : (tensor<2xf32>, tensor<i1>, tensor<2xi32>, tensor<2xf32>, tensor<i1>, tensor<2xi32>,
         tensor<2xf32>, tensor<i1>, tensor<2xi32>)
      -> (tensor<2xf32>, tensor<i1>, tensor<2xf32>, tensor<i1>, tensor<2xf32>, tensor<i1>)
    %bits = stablehlo.bitcast_convert %r#0 : (tensor<2xf32>) -> tensor<2xi32>
    check.expect_eq_const %bits, dense<[-2147483648, 2143289344]> : tensor<2xi32>
    check.expect_eq_const %r#1, dense<false> : tensor<i1>
    check.expect_eq_const %r#5, dense<false> : tensor<i1>
    func.return
  }
}
