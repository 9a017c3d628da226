"""jit: tracing once per signature, static arguments, shardings on parameters and results,
with_sharding_constraint, and printing."""

import numpy as np
import pytest

import xla_spmd as xs
import xla_spmd.numpy as xnp
from xla_spmd.errors import ShardingError
from xla_spmd.ir import verify
from xla_spmd.mesh import make_mesh
from xla_spmd.sharding import NamedSharding, P

MESH = make_mesh({"x": 2, "y": 4})


def test_traces_once_per_signature():
    calls = []

    @xs.jit
    def f(x, y):
        calls.append(1)
        return x * y + 1.0

    a = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(np.asarray(f(a, a)), 2.0)
    f(a * 2, a)
    assert len(calls) == 1
    f(np.ones((3, 3), np.float32), np.ones((3, 3), np.float32))
    f(a.astype(np.float16), a.astype(np.float16))
    assert len(calls) == 3
    f(a.astype(np.float64), a.astype(np.float64))  # f32 without x64, as in JAX: no new trace
    assert len(calls) == 3


def test_static_argnums_and_decorator_with_arguments():
    @xs.jit(static_argnums=(1,))
    def power(x, n):
        out = x
        for _ in range(n - 1):
            out = out * x
        return out

    x = np.array([2.0, 3.0], np.float32)
    np.testing.assert_allclose(np.asarray(power(x, 3)), [8.0, 27.0])
    np.testing.assert_allclose(np.asarray(power(x, 2)), [4.0, 9.0])
    assert len(power._cache) == 2


def test_pytree_inputs_and_outputs():
    f = xs.jit(lambda d: {"sum": d["a"] + d["b"][0], "none": None, "pair": (d["a"], 1.0)})
    out = f({"a": np.float32(1.0), "b": [np.float32(2.0)]})
    assert float(out["sum"]) == 3.0 and out["none"] is None and float(out["pair"][1]) == 1.0


def test_shardings_attached_to_parameters_and_results():
    f = xs.jit(lambda x, w: xnp.tanh(x @ w),
               in_shardings=(NamedSharding(MESH, P("x", None)), NamedSharding(MESH, P(None, "y"))),
               out_shardings=NamedSharding(MESH, P("x", "y")))
    lowered = f.lower(np.zeros((8, 4), np.float32), np.zeros((4, 8), np.float32))
    verify(lowered.module)
    p0, p1 = lowered.module.entry.parameters
    assert str(p0.sharding) == str(NamedSharding(MESH, P("x", None)).to_tensor_sharding(2))
    assert str(p1.sharding) == str(NamedSharding(MESH, P(None, "y")).to_tensor_sharding(2))
    assert lowered.module.entry.root.sharding is not None
    text = lowered.as_text(dialect="hlo")
    assert "parameter(0)" in text and "tanh" in text and '"x"' in text


def test_identity_output_sharding_uses_a_copy():
    s = NamedSharding(MESH, P("x"))
    lowered = xs.jit(lambda x: x, out_shardings=s).lower(np.zeros(4, np.float32))
    assert lowered.module.entry.root.opcode == "copy"


def test_with_sharding_constraint_is_a_sharding_custom_call():
    s = NamedSharding(MESH, P("y", None))
    f = xs.jit(lambda x: xs.with_sharding_constraint(x * 2.0, s) + 1.0)
    lowered = f.lower(np.zeros((8, 2), np.float32))
    calls = [i for i in lowered.module.entry.instructions if i.opcode == "custom-call"]
    assert calls[0].attrs.custom_call_target == "Sharding"
    assert str(calls[0].sharding) == str(s.to_tensor_sharding(2))
    np.testing.assert_allclose(np.asarray(f(np.ones((8, 2), np.float32))), 3.0)


def test_bad_shardings_are_clear():
    f = xs.jit(lambda x: x, in_shardings=(P("x"),))
    with pytest.raises(ShardingError, match="mesh"):
        f.lower(np.zeros(4, np.float32))
    g = xs.jit(lambda x: x, in_shardings=(NamedSharding(MESH, P("x", "y")),))
    with pytest.raises(ShardingError):
        g.lower(np.zeros(4, np.float32))


def test_python_scalars_are_weak():
    f = xs.jit(lambda x, s: x * s)
    assert f(np.ones(2, np.float16), 2.0).dtype == np.float16
    assert f.lower(np.ones(2, np.float16), 2.0).module.entry.parameters[1].shape.dtype.name \
        == "f32"


def test_nested_jit_and_grad_of_jit():
    inner = xs.jit(lambda x: xnp.sin(x))
    g = xs.grad(lambda x: xnp.sum(inner(x) * 2.0))
    x = np.array([0.0, 1.0])
    np.testing.assert_allclose(np.asarray(g(x)), 2 * np.cos(x))


def test_leaked_tracer_is_an_error():
    leaked = []
    xs.jit(lambda x: leaked.append(x) or x)(np.float32(1.0))
    with pytest.raises(Exception, match="escaped"):
        xs.jit(lambda y: y + leaked[0])(np.float32(1.0))


def test_donate_argnums_writes_input_output_alias():
    from xla_spmd.ir.hlo_parser import parse_hlo
    from xla_spmd.ir.hlo_printer import print_module
    f = xs.jit(lambda p, x, s: ({"w": p["w"] - x.sum() * s}, x * 2.0, x.sum()),
               static_argnums=2, donate_argnums=(0, 1))
    lowered = f.lower({"w": np.ones((2, 2))}, np.ones(3), 0.1)
    text = lowered.as_text(dialect="hlo")
    assert text.splitlines()[0] == ("HloModule jit_lambda, input_output_alias={ "
                                    "{0}: (0, {}, may-alias), {1}: (1, {}, may-alias) }")
    assert print_module(parse_hlo(text)) == text
    single = xs.jit(lambda x: x + 1.0, donate_argnums=0).lower(np.ones(2))
    assert "input_output_alias={ {}: (0, {}, may-alias) }" in single.as_text(dialect="hlo")
    with pytest.warns(UserWarning, match="not aliased"):
        xs.jit(lambda x: x.sum(), donate_argnums=0).lower(np.ones(3))
    with pytest.raises(Exception, match="donate_argnums"):
        xs.jit(lambda x, s: x * s, static_argnums=1, donate_argnums=1).lower(np.ones(2), 2.0)
    out = f({"w": np.ones((2, 2))}, np.ones(3), 0.5)
    np.testing.assert_allclose(np.asarray(out[0]["w"]), np.full((2, 2), -0.5))


def test_lowered_inspection_helpers():
    from xla_spmd.stablehlo import import_stablehlo
    x_spec, w_spec = NamedSharding(MESH, P("x", None)), NamedSharding(MESH, P(None, "y"))
    f = xs.jit(lambda x, w: {"out": xnp.tanh(x @ w), "norm": xnp.sum(x)},
               in_shardings=(x_spec, w_spec),
               out_shardings={"out": NamedSharding(MESH, P("x", "y")), "norm": None})
    lowered = f.lower(np.zeros((8, 4), np.float32), np.zeros((4, 8), np.float32))
    (in_x, in_w), kwargs = lowered.in_shardings
    assert kwargs == {} and in_x == x_spec and in_w == w_spec
    out = lowered.out_shardings
    assert set(out) == {"out", "norm"}
    assert out["out"] == NamedSharding(MESH, P("x", "y"))
    text = lowered.as_text(dialect="stablehlo")
    assert 'sdy.mesh @mesh = <["x"=2, "y"=4]>' in text
    assert 'sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>' in text
    assert import_stablehlo(text).entry.parameters[0].sharding is not None
    with pytest.raises(Exception, match="dialect"):
        lowered.as_text(dialect="mlir")
    plain = xs.jit(lambda x: x * 2.0).lower(np.ones(3, np.float32))
    assert plain.in_shardings == ((None,), {}) and plain.out_shardings is None


def test_keyword_arguments_are_traced():
    calls = []

    @xs.jit
    def f(a, y=1.0):
        calls.append(1)
        return a * y

    a = np.ones(2, np.float32)
    np.testing.assert_array_equal(np.asarray(f(a, y=3.0)), 3.0)
    np.testing.assert_array_equal(np.asarray(f(a, y=4.0)), 4.0)  # dynamic: no retrace
    assert len(calls) == 1
    lowered = f.lower(a, y=np.float32(2))
    assert len(lowered.module.entry.parameters) == 2
    assert lowered.in_shardings == ((None,), {"y": None})


def test_static_argnames():
    calls = []

    @xs.jit(static_argnames="power")
    def f(x, power=2):
        calls.append(power)
        out = x
        for _ in range(power - 1):
            out = out * x
        return out

    x = np.full(2, 2.0, np.float32)
    np.testing.assert_array_equal(np.asarray(f(x, power=3)), 8.0)
    np.testing.assert_array_equal(np.asarray(f(x, 3)), 8.0)  # positional: static as well
    np.testing.assert_array_equal(np.asarray(f(x, power=2)), 4.0)
    assert calls == [3, 3, 2]
    assert len(f.lower(x, power=5).module.entry.parameters) == 1
    with pytest.raises(Exception, match="hashable"):
        f(x, power=[1])


def test_compile_is_callable_and_prints():
    f = xs.jit(lambda x, n: x * n, static_argnums=1)
    compiled = f.lower(np.ones(3, np.float32), 2).compile()
    assert "HloModule" in compiled.as_text() and "multiply" in str(compiled)
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(compiled(x)), x * 2)   # static left out
    np.testing.assert_array_equal(np.asarray(compiled(x, 2)), x * 2)
    with pytest.raises(TypeError, match="compiled for"):
        compiled(x, 3)


def test_frontend_imports_no_runtime_or_partitioner():
    import subprocess
    import sys
    code = ("import sys, xla_spmd.frontend.jit; "
            "print([m for m in sys.modules if m.startswith(('xla_spmd.runtime', "
            "'xla_spmd.partition'))])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
