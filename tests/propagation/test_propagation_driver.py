"""The driver: user priorities, op priorities, constraints, groups, manual computations,
JAX's HLO annotations, provenance, and linear time."""

from pathlib import Path

import pytest

from xla_spmd.ir import F32, ArrayShape, Builder, Module
from xla_spmd.mesh import AxisRef, make_mesh
from xla_spmd.propagation import explain, explanation, propagate
from xla_spmd.propagation.propagate import run
from xla_spmd.sharding import DimSharding, TensorSharding

MESH = make_mesh({"x": 2, "y": 4})
DATA = Path(__file__).resolve().parent.parent / "data" / "jax"


def shape(*dims):
    return ArrayShape(F32, dims)


def S(*dims, priorities=None, open_dims=()):
    priorities = priorities or [None] * len(dims)
    return TensorSharding(MESH, [DimSharding(tuple(d), i not in open_dims, p)
                                 for i, (d, p) in enumerate(zip(dims, priorities))])


def shardings(module):
    return {i.name: str(i.sharding) for c in module.computations for i in c.instructions}


def text(body):
    return f"#sdy.sharding<@mesh, [{body}]>"


def test_user_priority_p0_before_p1():
    """x wants dim 0 on "x" at p1, y wants it on "y" at p0: p0 propagates first and wins."""
    b = Builder("m")
    x = b.parameter(shape(8, 8), "x", sharding=S(["x"], [], priorities=[1, None],
                                                 open_dims=(1,)))
    y = b.parameter(shape(8, 8), "y", sharding=S(["y"], [], priorities=[0, None],
                                                 open_dims=(1,)))
    out = b.add(b.negate(x, name="nx"), b.negate(y, name="ny"), name="sum")
    got = shardings(propagate(Module.from_entry("m", b.build(out))))
    assert got["sum"] == text('{"y", ?}, {?}')
    assert got["nx"] == text('{"y", ?}, {?}')
    # a user sharding is never overwritten; its priority, spent, is dropped (as Shardy)
    assert got["x"] == text('{"x"}, {?}')


def test_priority_ignored_without_user_priority_strategy():
    b = Builder("m")
    x = b.parameter(shape(8, 8), "x", sharding=S(["x"], [], priorities=[1, None],
                                                 open_dims=(1,)))
    y = b.parameter(shape(8, 8), "y", sharding=S(["y"], [], priorities=[0, None],
                                                 open_dims=(1,)))
    out = b.add(b.negate(x, name="nx"), b.negate(y, name="ny"), name="sum")
    got = shardings(propagate(Module.from_entry("m", b.build(out)), "op-priority"))
    assert got["nx"] == text('{"x", ?}, {?}')


def test_op_priority_elementwise_before_dot():
    """The elementwise chain from x settles h before the dot is considered: the dot's result
    follows its elementwise user, not the larger weight."""
    b = Builder("m")
    x = b.parameter(shape(4, 16), "x", sharding=S(["x"], []))
    w = b.parameter(shape(16, 64), "w", sharding=S([], ["x"]))
    h = b.dot(x, w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,), name="h")
    z = b.parameter(shape(4, 64), "z", sharding=S(["x"], []))
    out = b.add(h, z, name="out")
    got = shardings(propagate(Module.from_entry("m", b.build(out))))
    assert got["h"] == text('{"x", ?}, {?}')
    aggressive = shardings(propagate(Module.from_entry("m", b.build(out)), "aggressive"))
    assert aggressive["h"] == text('{?}, {"x", ?}')


def test_sharding_constraint_flows_both_ways_and_is_kept():
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x")
    a = b.tanh(x, name="a")
    c = b.custom_call(a, custom_call_target="Sharding", shape=shape(8, 16), name="c",
                      sharding=S(["x"], ["y"]))
    out = b.exponential(c, name="out")
    got = shardings(propagate(Module.from_entry("m", b.build(out))))
    assert got["c"] == text('{"x"}, {"y"}')
    assert got["a"] == text('{"x", ?}, {"y", ?}')
    assert got["x"] == text('{"x", ?}, {"y", ?}')
    assert got["out"] == text('{"x", ?}, {"y", ?}')


def test_constraint_is_never_overwritten():
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x", sharding=S(["x"], ["y"]))
    c = b.custom_call(x, custom_call_target="Sharding", shape=shape(8, 16), name="c",
                      sharding=S([], []))
    got = shardings(propagate(Module.from_entry("m", b.build(b.negate(c, name="n")))))
    assert got["c"] == text("{}, {}")
    assert got["n"] == text("{?}, {?}")


def test_sharding_group_shares_one_sharding():
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x", sharding=S(["x"], []))
    y = b.parameter(shape(8, 16), "y")
    a = b.negate(x, name="a")
    c = b.exponential(y, name="c")
    out = b.tuple(a, c)
    module = Module.from_entry("m", b.build(out))
    got = shardings(propagate(module, groups=[["a", "c"]]))
    assert got["c"] == text('{"x", ?}, {?}')
    assert got["y"] == text('{"x", ?}, {?}')       # and back through exponential
    plain = shardings(propagate(module))
    assert plain["c"] == text("{?}, {?}")


def test_sharding_group_from_hlo_custom_call():
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x", sharding=S([], ["y"]))
    y = b.parameter(shape(8, 16), "y")
    gx = b.custom_call(x, custom_call_target="xla.sdy.ShardingGroup", shape=shape(8, 16))
    gy = b.custom_call(y, custom_call_target="xla.sdy.ShardingGroup", shape=shape(8, 16))
    out = b.tuple(b.negate(y, name="ny"), gx, gy)
    got = shardings(propagate(Module.from_entry("m", b.build(out))))
    # as Shardy's syncGroupMemberShardings: y takes the group's one sharding as it is
    assert got["y"] == text('{}, {"y"}')
    assert got["ny"] == text('{?}, {"y", ?}')


def load(name):
    parser = pytest.importorskip("xla_spmd.ir.hlo_parser")
    return parser.parse_hlo((DATA / name / f"{name}.hlo").read_text())


def test_jax_sdy_attributes_are_imported():
    out = propagate(load("sharded_mlp_megatron_2x4"))
    got = shardings(out)
    assert got["x.1"] == text('{"data"}, {}')
    assert got["dot_general.5"] == text('{"data", ?}, {"model", ?}')
    assert got["sub.16"] == text('{}, {"model"}')     # FuncResultSharding kept


def test_gspmd_only_module_is_imported():
    out = propagate(load("sharded_mlp_megatron_2x4_gspmd"))
    root = out.entry.root
    assert all(isinstance(s, TensorSharding) for s in root.sharding)


def test_wsc_constraints():
    got = shardings(propagate(load("sharded_wsc")))
    assert got["sharding_constraint.3"] == text('{"x"}, {"y"}')
    assert got["tanh.1"] == text('{"x", ?}, {"y", ?}')
    assert got["sharding_constraint.5"] == text('{}, {"x", "y"}')


def test_manual_axes_do_not_cross_into_shard_map_body():
    out = propagate(load("sharded_shard_map"))
    body = next(c for c in out.computations if c.name.startswith("xla.sdy.manual"))
    for inst in body.instructions:
        for sharding in (inst.sharding if isinstance(inst.sharding, tuple)
                         else (inst.sharding,)):
            if sharding is not None:
                assert not sharding.sharded_axes, inst.name


def test_manual_computation_free_axis_propagates_in_body():
    """shard_map over "x" only: the free axis "y" still propagates inside the body."""
    body = Builder("xla.sdy.manual_computation_body.1")
    p = body.parameter(shape(4, 16), "body_p")
    body_c = body.build(body.tanh(p, name="body_tanh"))
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x", sharding=S(["x"], ["y"]))
    local = b.custom_call(x, custom_call_target="xla.sdy.GlobalToLocalShape",
                          shape=shape(4, 16), name="local")
    local = b.instructions[-1] = local.replace(frontend_attributes=(
        ("xla.sdy.in_shardings", '#sdy.sharding_per_value<[<@mesh, [{"x"}, {"y", ?}]>]>'),
        ("xla.sdy.manual_axes", '#sdy<manual_axes{"x"}>')))
    called = b.call(local, to_apply=body_c, name="called")
    module = Module.from_entry("m", b.build(called), header=(
        ("frontend_attributes", '{xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=4]>}}'),))
    got = shardings(propagate(module))
    assert got["local"] == text('{}, {"y", ?}')
    assert got["body_tanh"] == text('{?}, {"y", ?}')


def test_explain_names_origin_and_chain():
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x", sharding=S(["x"], []))
    w = b.parameter(shape(16, 32), "w", sharding=S([], ["y"]))
    h = b.dot(b.tanh(x, name="t"), w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,),
              name="h")
    module = Module.from_entry("m", b.build(b.negate(h, name="n")))
    report = explanation(module, "n")
    assert 'dim 0 "x": from x (user sharding) -> t (tanh) -> h (dot) -> n (negate)' in report
    assert 'dim 1 "y": from w (user sharding) -> h (dot) -> n (negate)' in report


def chain_module(layers):
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x", sharding=S(["x"], []))
    w = b.parameter(shape(16, 16), "w", sharding=S([], ["y"]))
    h = x
    for _ in range(layers):
        h = b.tanh(b.dot(h, w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,)))
    return Module.from_entry("m", b.build(h))


def test_work_grows_linearly_with_ops():
    small, large = run(chain_module(20)), run(chain_module(160))
    ratio = large.propagator.visits / small.propagator.visits
    assert 6 < ratio < 10


def test_explain_prints(capsys):
    b = Builder("m")
    x = b.parameter(shape(8, 16), "x", sharding=S(["x"], []))
    explain(Module.from_entry("m", b.build(b.negate(x, name="n"))), "n")
    assert 'dim 0 "x": from x (user sharding) -> n (negate)' in capsys.readouterr().out


@pytest.mark.parametrize("conservative,expected", [
    (False, '#sdy.sharding<@mesh, [{"a":(1)2, ?}, {"a":(2)2, ?}]>'),
    (True, '#sdy.sharding<@mesh, [{?}, {?}]>'),   # no axis is split into sub-axes
])
def test_conservative_propagation_splits_no_axis(conservative, expected):
    from xla_spmd.propagation import conservative_propagation
    mesh = make_mesh({"a": 4, "b": 2})
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (8,)), sharding=TensorSharding(mesh, [["a"]]))
    y = b.reshape(x, shape=ArrayShape(F32, (2, 4)))
    with conservative_propagation(conservative):
        out = propagate(Module.from_entry("m", b.build(y)), "basic")
    assert str(out.entry.root.sharding) == expected


def test_size_one_axes_stay_with_the_major_factor():
    # Shardy's projection: a size-1 axis always fits a factor, so "c" (size 1) stays with
    # "a", "b" on the major factor of 8 -> 2x1x4 and the result's dim 0 gets all three
    from xla_spmd.mesh import AxisRef
    from xla_spmd.propagation.projection import AxisSizes, project_dim
    mesh = make_mesh({"a": 1, "b": 2, "c": 1})
    out = {}
    project_dim((AxisRef("a"), AxisRef("b"), AxisRef("c")), [0, 1, 2], [2, 1, 4], False,
                AxisSizes(mesh), out)
    assert [str(a) for a in out[0].axes] == ['"a"', '"b"', '"c"']
    assert out[1].axes == () and out[2].axes == ()


def test_factors_after_an_overflow_are_closed():
    from xla_spmd.mesh import AxisRef
    from xla_spmd.propagation.projection import AxisSizes, project_dim
    mesh = make_mesh({"x": 3})
    out = {}
    project_dim((AxisRef("x"),), [0, 1], [2, 3], False, AxisSizes(mesh), out)
    assert out[0].overflow == (AxisRef("x"),) and out[1].is_closed


@pytest.mark.parametrize("unsharded_scalars", [False, True])
def test_scalars_nobody_sharded(unsharded_scalars):
    # Nothing propagates to a scalar: by default it is replicated (every value has a
    # sharding); Shardy's view leaves it without one. A user's scalar sharding stays.
    mesh = make_mesh({"a": 2})
    b = Builder("main")
    s = b.parameter(ArrayShape(F32, ()))
    t = b.parameter(ArrayShape(F32, ()), sharding=TensorSharding(mesh, [], replicated=["a"]))
    x = b.parameter(ArrayShape(F32, (8,)), sharding=TensorSharding(mesh, [["a"]]))
    y = b.multiply(x, b.broadcast(b.add(s, t), shape=ArrayShape(F32, (8,)), dimensions=()))
    out = propagate(Module.from_entry("m", b.build(y)), "basic",
                    unsharded_scalars=unsharded_scalars)
    params = out.entry.parameters
    if unsharded_scalars:
        assert params[0].sharding is None
    else:
        assert str(params[0].sharding) == "#sdy.sharding<@mesh, []>"
    assert str(params[1].sharding) == '#sdy.sharding<@mesh, [], replicated={"a"}>'


@pytest.mark.parametrize("shared", [False, True])
def test_shared_functions_give_every_call_one_sharding(shared):
    # Shardy's dedup-functions-fully: a function is one for all its calls (func data-flow
    # edges), so the sharding one call brings reaches the other call's result too
    mesh = make_mesh({"a": 2})
    f = Builder("f")
    fx = f.parameter(ArrayShape(F32, (8,)))
    callee = f.build(f.negate(fx))
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (8,)), sharding=TensorSharding(mesh, [["a"]]))
    y = b.parameter(ArrayShape(F32, (8,)))
    first, second = b.call(x, to_apply=callee), b.call(y, to_apply=callee)
    out = propagate(Module.from_entry("m", b.build(b.tuple(first, second))), "basic",
                    shared_functions=shared)
    calls = [i for i in out.entry.instructions if i.opcode == "call"]
    axes = [[d.axes for d in c.sharding.dims] for c in calls]
    assert axes[0] == [(AxisRef("a"),)]
    assert axes[1] == ([(AxisRef("a"),)] if shared else [()])


CALLEE = """
sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>})
    -> tensor<8x8xf32> {
  %0 = call @f(%arg0) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
func.func private @f(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.abs %arg0 : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
"""


def _signature(module, name):
    from xla_spmd.sharding import declare_meshes, meshes_of
    from xla_spmd.stablehlo import export_stablehlo
    text = export_stablehlo(declare_meshes(module, meshes_of(module)))
    return next(line for line in text.splitlines() if f"func.func private @{name}(" in line)


def test_callee_results_only_with_the_pipeline_default():
    """Shardy's propagation passes give only main's results shardings (its pipeline gives
    every function's): callee_results=False leaves @f's result bare, its argument not."""
    from xla_spmd.stablehlo import import_stablehlo
    module = import_stablehlo(CALLEE)
    bare = _signature(propagate(module, "basic", callee_results=False), "f")
    # the argument aliases main's (closed) value; the result has no sharding
    assert bare.endswith('-> tensor<8x8xf32> {') and bare.count("#sdy.sharding<") == 1
    full = _signature(propagate(module, "basic"), "f")
    assert full.endswith('-> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, '
                         '[{"x", ?}, {"y", ?}]>}) {')


def test_func_data_flow_edge_holds_its_owners_sharding():
    """An explicit sdy.func_data_flow_edge on a callee argument holds the propagated
    sharding; the argument keeps none (as in Shardy)."""
    from xla_spmd.stablehlo import import_stablehlo
    source = CALLEE.replace("%0 = stablehlo.abs %arg0", "%e = sdy.func_data_flow_edge %arg0 : "
                            "tensor<8x8xf32>\n  %0 = stablehlo.abs %e")
    out = propagate(import_stablehlo(source), "basic", callee_results=False)
    assert _signature(out, "f").startswith("  func.func private @f(%arg0: tensor<8x8xf32>) ->")
    edge = next(i for c in out.computations for i in c.instructions
                if getattr(i.attrs, "custom_call_target", None) == "xla.sdy.FuncDataFlowEdge")
    assert str(edge.sharding) == text('{"x", ?}, {"y", ?}')


def test_sharding_group_links_an_uncalled_function():
    """Functions nothing calls propagate in the module's one graph: a sharding group links
    a value of one to a value of the other (Shardy's shard_as across functions)."""
    from xla_spmd.stablehlo import import_stablehlo
    source = """
    sdy.mesh @mesh = <["x"=2, "y"=4]>
    func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y", ?}, {?}]>})
        -> tensor<8x8xf32> {
      %0 = stablehlo.negate %arg0 : tensor<8x8xf32>
      sdy.sharding_group %0 group_id = 4 : tensor<8x8xf32>
      return %0 : tensor<8x8xf32>
    }
    func.func private @other(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
      %0 = stablehlo.exponential %arg0 : tensor<8x8xf32>
      sdy.sharding_group %0 group_id = 4 : tensor<8x8xf32>
      return %0 : tensor<8x8xf32>
    }
    """
    out = propagate(import_stablehlo(source), "basic")
    other = next(c for c in out.computations if c.name == "other")
    exp = next(i for i in other.instructions if i.opcode == "exponential")
    assert str(exp.sharding) == text('{"y", ?}, {?}')
    assert str(other.parameters[0].sharding) == text('{"y", ?}, {?}')   # and back


def test_keep_sharding_rules_writes_built_in_rules_and_keeps_the_users():
    """keep_sharding_rules (Shardy's keep-sharding-rules=true): every op with a rule has it
    written after propagation; a rule written by the user stays as it was."""
    from xla_spmd.ir.custom_calls import SHARDING_RULE
    from xla_spmd.stablehlo import import_stablehlo
    mine = "#sdy.op_sharding_rule<([ij, k], [ij, k])->([ij, k]) {i=4, j=2, k=8}>"
    module = import_stablehlo(f"""
sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x8xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"a"}}, {{"b"}}]>}},
                %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {{
  %0 = stablehlo.add %arg0, %arg1 : tensor<8x8xf32>
  %1 = stablehlo.add %0, %0 {{sdy.sharding_rule = {mine}}} : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}}""")
    kept = propagate(module, "basic", keep_sharding_rules=True)
    first, second = [i for i in kept.entry.instructions if i.opcode == "add"]
    assert first.frontend_attribute(SHARDING_RULE) == \
        "#sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=8, j=8}>"
    assert second.frontend_attribute(SHARDING_RULE) == mine
    assert str(second.sharding) == '#sdy.sharding<@mesh, [{"a", ?}, {"b", ?}]>'
    plain = propagate(module, "basic")
    assert [i.frontend_attribute(SHARDING_RULE) for i in plain.entry.instructions
            if i.opcode == "add"] == [None, mine]
