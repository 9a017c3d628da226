"""xla_spmd.random gives jax.random's numbers: the same key and call as the JAX-made data in
tests/data/jax_random.{json,npz} (scripts/gen_jax_random_data.py, JAX 0.10), eagerly and
under jit. Integers and bits must match exactly; floats to a few ulps (erf, log and sqrt are
approximations whose last bits differ between XLA's CPU kernels and numpy)."""

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import xla_spmd as xs
import xla_spmd.random as xr
from xla_spmd import config

DATA = Path(__file__).resolve().parent.parent / "data"
CASES = json.loads((DATA / "jax_random.json").read_text())["cases"]
with np.load(DATA / "jax_random.npz", allow_pickle=False) as _npz:
    EXPECTED = {name: _npz[name] for name in _npz.files}


def _decode(value):
    if isinstance(value, dict) and "array" in value:
        dtype = ml_dtypes.bfloat16 if value["dtype"] == "bfloat16" else np.dtype(value["dtype"])
        return np.asarray(value["array"], dtype)
    if isinstance(value, list):
        return tuple(value)
    return value


def _call(case, jitted: bool):
    function = getattr(xr, case["function"])
    args = [_decode(a) for a in case["args"]]
    kwargs = {k: (ml_dtypes.bfloat16 if v == "bfloat16" else np.dtype(v)) if k == "dtype"
              else _decode(v) for k, v in case["kwargs"].items()}
    if case["seed"] is None:
        return function(*args, **kwargs)
    key = xr.PRNGKey(case["seed"])
    if jitted:
        return xs.jit(lambda k: function(k, *args, **kwargs))(key)
    return function(key, *args, **kwargs)


def _compare(case, got):
    want = EXPECTED[case["name"]]
    got = np.asarray(got)
    assert str(got.dtype) == case["dtype"] and list(got.shape) == case["shape"], case["name"]
    if got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=case["name"])
    else:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=2e-6, atol=2e-7, err_msg=case["name"])


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_same_numbers_as_jax(case):
    with config.override(enable_x64=case["x64"]):
        _compare(case, _call(case, jitted=False))


@pytest.mark.parametrize("case", [c for c in CASES if c["seed"] is not None
                                  and c["function"] in ("split", "uniform", "normal",
                                                        "randint", "permutation")],
                         ids=lambda c: c["name"])
def test_same_numbers_under_jit(case):
    with config.override(enable_x64=case["x64"]):
        _compare(case, _call(case, jitted=True))


def test_sharded_sample_equals_the_unsharded_one():
    """Each element hashes its own counter: a sample drawn with a sharded output is the same
    array, with no communication needed."""
    mesh = xs.make_mesh({"x": 8})
    sharding = xs.NamedSharding(mesh, xs.P("x"))
    f = xs.jit(lambda k: xr.normal(k, (16, 3)), out_shardings=sharding)
    np.testing.assert_array_equal(np.asarray(f(xr.PRNGKey(3))),
                                  np.asarray(xr.normal(xr.PRNGKey(3), (16, 3))))


def test_traced_seed_and_fold_in_data():
    """A seed and fold_in data that are traced values give the same keys as static ones."""
    np.testing.assert_array_equal(np.asarray(xs.jit(lambda s: xr.PRNGKey(s))(42)),
                                  EXPECTED["key_42"])
    np.testing.assert_array_equal(
        np.asarray(xs.jit(lambda k, n: xr.fold_in(k, n))(xr.PRNGKey(42), 7)),
        EXPECTED["fold_in_7"])
