"""`xla-spmd propagate` / `xla-spmd rules`, and the benchmark's training steps."""

import importlib.util
from pathlib import Path

import pytest

from xla_spmd.propagation.propagate import run

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = ROOT / "tests" / "data" / "jax"


def load_bench():
    spec = importlib.util.spec_from_file_location(
        "bench_propagation", ROOT / "scripts" / "bench_propagation.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cli(*args):
    from xla_spmd.cli import main
    return main(list(args))


def test_cli_propagate_prints_sdy_stablehlo(capsys):
    pytest.importorskip("xla_spmd.stablehlo")
    assert cli("propagate", str(DATA / "sharded_wsc" / "sharded_wsc.hlo"), "--explain") == 0
    out = capsys.readouterr().out
    assert 'sdy.mesh @mesh = <["x"=2, "y"=4]>' in out
    assert ('stablehlo.tanh %0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, '
            '[{"x", ?}, {"y", ?}]>]>}') in out
    assert "sdy.sharding_constraint %1 <@mesh, [{\"x\"}, {\"y\"}]>" in out
    assert '// tanh.1: dim 0 "x": from sharding_constraint.3 (user sharding)' in out


@pytest.mark.parametrize("strategy", ["basic", "aggressive", "op-priority", "user-priority"])
def test_cli_propagate_strategies_on_mlir(capsys, strategy):
    pytest.importorskip("xla_spmd.stablehlo")
    path = DATA / "sharded_mlp_megatron_2x4" / "sharded_mlp_megatron_2x4.mlir"
    assert cli("propagate", str(path), "--strategy", strategy) == 0
    assert "#sdy.sharding_per_value" in capsys.readouterr().out


def test_cli_rules(capsys):
    pytest.importorskip("xla_spmd.stablehlo")
    assert cli("rules", str(DATA / "sharded_wsc" / "sharded_wsc.mlir")) == 0
    out = capsys.readouterr().out
    assert ("sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) "
            "{i=16, j=12, k=8} reduction={k}>") in out


def test_benchmark_step_is_megatron_sharded():
    bench = load_bench()
    module = bench.build_step(2, batch=2, seq=8, hidden=16, heads=4, ffn=32)
    out = run(module).module
    params = {p.name: p for p in out.entry.parameters}
    for inst in out.entry.instructions:
        if (inst.op.name == "subtract" and inst.operands[0].name in params
                and inst.operands[1].op.name == "multiply"):
            grad = inst.operands[1].operands[0]
            weight = inst.operands[0]
            assert [d.axes for d in grad.sharding.dims] == \
                [d.axes for d in weight.sharding.dims], weight.name


def test_benchmark_visits_grow_linearly():
    bench = load_bench()
    sizes = dict(batch=2, seq=8, hidden=16, heads=4, ffn=32)
    small = run(bench.build_step(2, **sizes))
    large = run(bench.build_step(16, **sizes))
    per_op = [r.propagator.visits / len(r.propagator.graph.nodes) for r in (small, large)]
    assert per_op[1] < 1.2 * per_op[0]
