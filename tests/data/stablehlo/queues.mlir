// send/recv between processes of run_parallel, infeed and outfeed queues, and
// collective_reduce with two operands (our own cases, after the spec's semantics).

module @ring_of_three {
  func.func @first(%x : tensor<3xi32>, %t : !stablehlo.token) -> (tensor<3xi32>, !stablehlo.token) {
    %sent = "stablehlo.send"(%x, %t) {
      channel_handle = #stablehlo.channel_handle<handle = 7, type = 2>,
      is_host_transfer = true
    } : (tensor<3xi32>, !stablehlo.token) -> !stablehlo.token
    %back:2 = "stablehlo.recv"(%sent) {
      channel_handle = #stablehlo.channel_handle<handle = 9, type = 3>,
      is_host_transfer = true
    } : (!stablehlo.token) -> (tensor<3xi32>, !stablehlo.token)
    return %back#0, %back#1 : tensor<3xi32>, !stablehlo.token
  }
  func.func @middle(%t : !stablehlo.token) -> !stablehlo.token {
    %got:2 = "stablehlo.recv"(%t) {
      channel_handle = #stablehlo.channel_handle<handle = 7, type = 3>,
      is_host_transfer = true
    } : (!stablehlo.token) -> (tensor<3xi32>, !stablehlo.token)
    %twice = stablehlo.add %got#0, %got#0 : tensor<3xi32>
    %sent = "stablehlo.send"(%twice, %got#1) {
      channel_handle = #stablehlo.channel_handle<handle = 8, type = 2>,
      is_host_transfer = true
    } : (tensor<3xi32>, !stablehlo.token) -> !stablehlo.token
    return %sent : !stablehlo.token
  }
  func.func @last(%t : !stablehlo.token) -> !stablehlo.token {
    %got:2 = "stablehlo.recv"(%t) {
      channel_handle = #stablehlo.channel_handle<handle = 8, type = 3>,
      is_host_transfer = true
    } : (!stablehlo.token) -> (tensor<3xi32>, !stablehlo.token)
    %minus = stablehlo.negate %got#0 : tensor<3xi32>
    %sent = "stablehlo.send"(%minus, %got#1) {
      channel_handle = #stablehlo.channel_handle<handle = 9, type = 2>,
      is_host_transfer = true
    } : (tensor<3xi32>, !stablehlo.token) -> !stablehlo.token
    return %sent : !stablehlo.token
  }
  func.func @main() {
    %x = stablehlo.constant dense<[1, -4, 10]> : tensor<3xi32>
    %t = stablehlo.after_all : !stablehlo.token
    %r:4 = "interpreter.run_parallel"(%x, %t, %t, %t) {
      programs = [[@first], [@middle], [@last]]
    } : (tensor<3xi32>, !stablehlo.token, !stablehlo.token, !stablehlo.token)
      -> (tensor<3xi32>, !stablehlo.token, !stablehlo.token, !stablehlo.token)
    check.expect_eq_const %r#0, dense<[-2, 8, -20]> : tensor<3xi32>
    func.return
  }
}

// -----

module @feeds {
  func.func @consume(%t : !stablehlo.token) -> (tensor<2xf32>, tensor<i32>, !stablehlo.token) {
    %a:3 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xf32>, tensor<i32>, !stablehlo.token)
    %done = "stablehlo.outfeed"(%a#0, %a#1, %a#2) : (tensor<2xf32>, tensor<i32>, !stablehlo.token) -> !stablehlo.token
    return %a#0, %a#1, %done : tensor<2xf32>, tensor<i32>, !stablehlo.token
  }
  func.func @fill() -> (tensor<2xf32>, tensor<i32>) {
    %v = stablehlo.constant dense<[0.25, -8.0]> : tensor<2xf32>
    %n = stablehlo.constant dense<42> : tensor<i32>
    return %v, %n : tensor<2xf32>, tensor<i32>
  }
  func.func @main() {
    %t = stablehlo.after_all : !stablehlo.token
    %r:3 = "interpreter.run_parallel"(%t) {
      infeed = [@fill],
      programs = [[@consume]]
    } : (!stablehlo.token) -> (tensor<2xf32>, tensor<i32>, !stablehlo.token)
    check.expect_eq_const %r#0, dense<[0.25, -8.0]> : tensor<2xf32>
    check.expect_eq_const %r#1, dense<42> : tensor<i32>
    func.return
  }
}

// -----

module @reduce_onto_roots {
  func.func @reduce(%a : tensor<2xi32>, %b : tensor<f32>) -> (tensor<2xi32>, tensor<f32>) {
    %r:2 = "stablehlo.collective_reduce"(%a, %b) ({
      ^bb0(%x: tensor<i32>, %y: tensor<i32>):
        %m = stablehlo.maximum %x, %y : tensor<i32>
        stablehlo.return %m : tensor<i32>
    }) {
      replica_groups = dense<[[1, 0], [2, 3]]> : tensor<2x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>
    } : (tensor<2xi32>, tensor<f32>) -> (tensor<2xi32>, tensor<f32>)
    return %r#0, %r#1 : tensor<2xi32>, tensor<f32>
  }
  func.func @main() {
    %a0 = stablehlo.constant dense<[1, 9]> : tensor<2xi32>
    %a1 = stablehlo.constant dense<[5, 2]> : tensor<2xi32>
    %a2 = stablehlo.constant dense<[-3, 0]> : tensor<2xi32>
    %a3 = stablehlo.constant dense<[-7, 4]> : tensor<2xi32>
    %b = stablehlo.constant dense<1.5> : tensor<f32>
    %c = stablehlo.constant dense<-2.5> : tensor<f32>
    %r:8 = "interpreter.run_parallel"(%a0, %b, %a1, %c, %a2, %b, %a3, %c) {
      programs = [[@reduce, @reduce, @reduce, @reduce]]
    } : (tensor<2xi32>, tensor<f32>, tensor<2xi32>, tensor<f32>, tensor<2xi32>, tensor<f32>,
         tensor<2xi32>, tensor<f32>)
      -> (tensor<2xi32>, tensor<f32>, tensor<2xi32>, tensor<f32>, tensor<2xi32>, tensor<f32>,
          tensor<2xi32>, tensor<f32>)
    // Roots are partitions 1 and 2 (first of each group); the others get zeros.
    check.expect_eq_const %r#0, dense<[0, 0]> : tensor<2xi32>
    check.expect_eq_const %r#1, dense<0.0> : tensor<f32>
    check.expect_eq_const %r#2, dense<[5, 9]> : tensor<2xi32>
    check.expect_eq_const %r#3, dense<1.5> : tensor<f32>
    check.expect_eq_const %r#4, dense<[-3, 4]> : tensor<2xi32>
    check.expect_eq_const %r#5, dense<1.5> : tensor<f32>
    check.expect_eq_const %r#6, dense<[0, 0]> : tensor<2xi32>
    check.expect_eq_const %r#7, dense<0.0> : tensor<f32>
    func.return
  }
}
