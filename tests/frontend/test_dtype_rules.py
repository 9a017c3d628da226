"""JAX's dtype rules, checked against what JAX itself gives (tests/data/jax_dtypes.json, made
by scripts/gen_jax_dtype_data.py with JAX 0.10): the promotion lattice with weak Python
scalars, 64-bit types off by default and on with ``enable_x64``, canonical jit inputs and the
default types of creation functions."""

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import xla_spmd as xs
import xla_spmd.numpy as xnp
from xla_spmd import config

DATA = json.loads((Path(__file__).resolve().parent.parent / "data" / "jax_dtypes.json")
                  .read_text())
SCALARS = {"int": 1, "float": 1.0, "complex": 1j, "pybool": True}
MODES = {"x32": False, "x64": True}


def _input(name):
    if name in SCALARS:
        return SCALARS[name]
    dtype = ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)
    return np.ones((), dtype)


def _described(value) -> dict:
    return {"dtype": str(value.dtype), "weak": bool(value.weak_type)}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_binary_promotion_matches_jax(mode):
    """x + y and x / y for every pair of 15 array dtypes and 4 Python scalar types."""
    mismatches = []
    with config.override(enable_x64=MODES[mode]):
        for row in DATA[mode]["binary"]:
            x, y = _input(row["x"]), _input(row["y"])
            for op, function in (("add", xnp.add), ("divide", xnp.true_divide)):
                got = _described(function(x, y))
                if got != row[op]:
                    mismatches.append(f"{row['x']} {op} {row['y']}: {got}, JAX {row[op]}")
    assert len(DATA[mode]["binary"]) == 19 * 19
    assert not mismatches, "\n".join(mismatches)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_jit_inputs_and_defaults_match_jax(mode):
    with config.override(enable_x64=MODES[mode]):
        identity = xs.jit(lambda x: x)
        for name, expected in DATA[mode]["jit_input"].items():
            dtype = ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)
            assert str(identity(np.zeros(3, dtype)).dtype) == expected, name
        defaults = DATA[mode]["defaults"]
        assert str(xnp.zeros(3).dtype) == defaults["zeros"]
        assert str(xnp.arange(3).dtype) == defaults["arange_int"]
        assert str(xnp.arange(3.0).dtype) == defaults["arange_float"]
        assert str(xnp.asarray(1.5).dtype) == defaults["asarray_float"]
        assert str(xnp.asarray(1).dtype) == defaults["asarray_int"]


def test_issue_16_float64_cases_are_float32():
    """The three reports of issue 16: jit of a float64 input, a float64 numpy scalar times a
    f32 array, and a requested float64 dtype, all f32 unless x64 is on."""
    assert xs.jit(lambda x: x * 2)(np.ones(3)).dtype == np.float32
    x32 = np.ones(3, np.float32)
    assert xs.jit(lambda x: x * (1.0 / np.sqrt(4)))(x32).dtype == np.float32
    assert xnp.zeros(2, np.float64).dtype == np.float32
    assert xnp.asarray(x32).astype(np.float64).dtype == np.float32
    with config.override(enable_x64=True):
        assert xs.jit(lambda x: x * 2)(np.ones(3)).dtype == np.float64
        assert xnp.zeros(2).dtype == np.float64


def test_enable_x64_is_an_option_with_its_environment_variable(monkeypatch):
    assert config.OPTIONS["enable_x64"].env == "XLA_SPMD_ENABLE_X64"
    config.reset("enable_x64")
    monkeypatch.setenv("XLA_SPMD_ENABLE_X64", "1")
    try:
        assert config.enable_x64 is True
        config.update("jax_enable_x64", False)  # JAX's spelling works too
        assert config.enable_x64 is False
    finally:
        config.reset("enable_x64")
    monkeypatch.delenv("XLA_SPMD_ENABLE_X64")
    assert config.enable_x64 is False


def test_jit_retraces_when_x64_changes():
    f = xs.jit(lambda: xnp.zeros(2))
    assert f().dtype == np.float32
    with config.override(enable_x64=True):
        assert f().dtype == np.float64


def test_python_int_too_large_for_the_default_int_is_an_error():
    with pytest.raises(OverflowError, match="too large"):
        xnp.asarray(2 ** 40)
    with config.override(enable_x64=True):
        assert int(xnp.asarray(2 ** 40)) == 2 ** 40


# Loop carries with Python scalars: JAX promotes a weakly typed init where the body changes its
# type (the expected values and types are what JAX 0.10 gives for the same calls).

def _described_value(value):
    return float(value), str(value.dtype), bool(value.weak_type)


def test_fori_loop_promotes_a_weak_int_init():
    from xla_spmd import lax

    assert _described_value(lax.fori_loop(0, 3, lambda i, c: c + 0.5, 0)) == \
        (1.5, "float32", False)
    jitted = xs.jit(lambda: lax.fori_loop(0, 3, lambda i, c: c + 0.5, 0))()
    assert float(jitted) == 1.5 and jitted.dtype == np.float32
    assert _described_value(lax.fori_loop(0, 3, lambda i, c: c + 1, 0.0)) == \
        (3.0, "float32", True)
    assert _described_value(lax.fori_loop(0, 3, lambda i, c: c + np.float16(1), 0)) == \
        (3.0, "float16", False)
    a, b = lax.fori_loop(0, 3, lambda i, c: (c[0] + 0.5, c[1] * 2), (0, 1))
    assert _described_value(a) == (1.5, "float32", False)
    assert _described_value(b) == (8.0, "int32", True)
    assert _described_value(lax.while_loop(lambda c: c < 3, lambda c: c + 0.5, 0)) == \
        (3.0, "float32", False)


def test_scan_promotes_a_weak_int_carry():
    from xla_spmd import lax

    carry, ys = lax.scan(lambda c, x: (c + x, c), 0, np.ones(3, np.float32))
    assert _described_value(carry) == (3.0, "float32", False)
    assert ys.dtype == np.float32 and np.asarray(ys).tolist() == [0.0, 1.0, 2.0]
    carry, ys = lax.scan(lambda c, x: (c * 0.5 + x, c), 0, np.ones(3, np.int32))
    assert _described_value(carry) == (1.75, "float32", False)
    assert np.asarray(ys).tolist() == [0.0, 1.0, 1.5]


def test_a_strongly_typed_carry_is_not_promoted():
    from xla_spmd import lax

    with pytest.raises(xs.errors.XlaSpmdError, match="expected s32"):
        lax.fori_loop(0, 3, lambda i, c: c + 0.5, np.int32(0))
    with pytest.raises(xs.errors.XlaSpmdError, match="expected s32"):
        lax.scan(lambda c, x: (c + 0.5, x), np.int32(0), np.ones(3, np.float32))


def test_jit_results_keep_their_weak_type():
    """As JAX: jit(lambda x: x * 2)(3.0) is a weak f32, so adding a float16 gives float16."""
    result = xs.jit(lambda x: x * 2)(3.0)
    assert result.weak_type and (result + np.float16(1)).dtype == np.float16
    assert not xs.jit(lambda x: x * 2)(np.float32(3.0)).weak_type
    mesh = xs.make_mesh({"x": 8})
    sharded, scalar = xs.jit(lambda x, s: (x * 2, s * 2.0),
                             in_shardings=(xs.NamedSharding(mesh, xs.P("x")), None))(
        np.ones(8, np.float32), 1.5)
    assert not sharded.weak_type and scalar.weak_type
