// Shardy ops evaluate as their global-view meaning (identity) on one device.
module @sdy_ops {
  sdy.mesh @mesh = <["x"=2, "y"=2]>
  func.func @main() {
    %x = sdy.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
    %0 = sdy.sharding_constraint %x <@mesh, [{"x"}, {}]> : tensor<2x2xf32>
    %1 = sdy.reshard %0 <@mesh, [{}, {"y"}]> : tensor<2x2xf32>
    %2 = stablehlo.add %1, %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x", ?}, {?}]>]>} : tensor<2x2xf32>
    %3 = sdy.propagation_barrier %2 allowed_direction=BOTH : tensor<2x2xf32>
    sdy.sharding_group %3 group_id=0 : tensor<2x2xf32>
    %4 = sdy.all_gather [{}, {"y"}] %3 out_sharding=<@mesh, [{}, {}]> : tensor<2x2xf32>
    check.expect_eq_const %4, dense<[[2.0, 4.0], [6.0, 8.0]]> : tensor<2x2xf32>
    func.return
  }
}
