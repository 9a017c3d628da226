"""The pipeline in one function: its stages' results, the backend it picks (and the fallback
that says why), propagation once per program, and jit and the command line going through it."""

import warnings

import numpy as np
import pytest

import xla_spmd as xs
from xla_spmd import pipeline
from xla_spmd.backends import BACKENDS
from xla_spmd.backends.reference import evaluate
from xla_spmd.cli import main
from xla_spmd.errors import XlaSpmdError
from xla_spmd.partition import partition

DATA = __import__("pathlib").Path(__file__).resolve().parent / "data" / "jax"
X = np.arange(32.0, dtype=np.float32).reshape(8, 4)


def matmul_module(mesh):
    f = xs.jit(lambda a, b: a @ b, in_shardings=(xs.NamedSharding(mesh, xs.P("x")),
                                                 xs.NamedSharding(mesh, xs.P())))
    return f.lower(X, X.T).module


def test_compile_keeps_each_stage_and_runs_on_the_devices():
    mesh = xs.make_mesh({"x": 4}, axis_types=xs.AxisType.Auto)
    program = pipeline.compile(matmul_module(mesh))
    assert program.mesh == mesh and program.spmd_module.num_partitions == 4
    assert program.executable.module is program.spmd_module
    # The propagated module has a sharding on every value, the SPMD one local shapes.
    assert all(i.sharding is not None for i in program.module.entry.instructions)
    assert str(program.spmd_module.entry.root.shape) == "f32[2,8]"
    results = {d: program.executable.run(d, [X[2 * d:2 * d + 2], X.T], None)[0]
               for d in range(4)}
    np.testing.assert_allclose(np.concatenate([results[d] for d in range(4)]), X @ X.T)


def test_the_configured_backend_is_used():
    with xs.config.override(backend="reference"):
        assert pipeline.load_backend().name == "reference"
    assert pipeline.load_backend("reference").name == "reference"


def test_a_backend_that_cannot_load_falls_back_with_the_reason(monkeypatch):
    monkeypatch.setitem(BACKENDS, "broken", "xla_spmd.no_such_backend_module")
    with pytest.warns(UserWarning, match="backend 'broken' cannot load: No module named "
                                         "'xla_spmd.no_such_backend_module'; running on the "
                                         "reference backend instead"):
        backend = pipeline.load_backend("broken")
    assert backend.name == "reference"


def test_an_unknown_backend_is_an_error():
    with pytest.raises(XlaSpmdError, match="unknown backend 'fast'; backends: reference"):
        pipeline.load_backend("fast")


def test_jit_propagates_once_per_program(monkeypatch):
    calls = []
    original = pipeline.propagate

    def counting(module, *args, **kwargs):
        calls.append(module.name)
        return original(module, *args, **kwargs)

    monkeypatch.setattr(pipeline, "propagate", counting)
    mesh = xs.make_mesh({"x": 8}, axis_types=xs.AxisType.Auto)
    f = xs.jit(lambda a: (a * 2).sum(0), in_shardings=xs.NamedSharding(mesh, xs.P("x")))
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(f(X)), (X * 2).sum(0))
    assert "HloModule" in f.lower(X).compile().as_text()
    assert calls == ["jit_<lambda>".replace("<", "").replace(">", "")]


def test_partition_only_partitions():
    # An unpropagated module keeps its missing shardings as replicated: propagation is the
    # pipeline's business, not the partitioner's.
    mesh = xs.make_mesh({"x": 4}, axis_types=xs.AxisType.Auto)
    module = matmul_module(mesh)
    spmd = partition(module, mesh)
    assert spmd.num_partitions == 4
    assert str(spmd.entry.root.shape) == "f32[8,8]"  # the dot result: replicated
    assert str(pipeline.lower(module).spmd_module.entry.root.shape) == "f32[2,8]"


def test_cli_run_takes_a_backend(tmp_path, capsys):
    case = DATA / "sharded_mlp_megatron_2x4"
    out = tmp_path / "out.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the reference backend loads: no fallback warning
        assert main(["run", str(case / "sharded_mlp_megatron_2x4.hlo"), "--inputs",
                     str(case / "sharded_mlp_megatron_2x4.npz"), "--devices", "8",
                     "--backend", "reference", "--output", str(out)]) == 0
    with np.load(out) as got, np.load(case / "sharded_mlp_megatron_2x4.npz") as want:
        inputs = [want[f"arg{i}"] for i in range(len([k for k in want.files
                                                     if k.startswith("arg")]))]
        module = xs.parse_hlo((case / "sharded_mlp_megatron_2x4.hlo").read_text())
        expected = evaluate(module, inputs)
        expected = expected if isinstance(expected, tuple) else (expected,)
        for i, value in enumerate(expected):
            np.testing.assert_allclose(got[f"out{i}"], value, rtol=1e-5, atol=1e-6)
    capsys.readouterr()
    assert main(["run", str(case / "sharded_mlp_megatron_2x4.hlo"), "--inputs",
                 str(case / "sharded_mlp_megatron_2x4.npz"), "--backend", "fast"]) == 2
    assert "unknown backend 'fast'" in capsys.readouterr().err
