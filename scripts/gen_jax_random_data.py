#!/usr/bin/env python3
"""Write what ``jax.random`` gives for a table of calls: ``tests/data/jax_random.json`` (the
calls) and ``tests/data/jax_random.npz`` (their results), for tests/frontend/test_random_jax.py.

Run with an interpreter that has JAX (the project's own environment never gets it)::

    python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install jax
    /tmp/jaxenv/bin/python scripts/gen_jax_random_data.py

Each case is ``(name, function, key seed, args, kwargs, x64)``: the test calls
``xla_spmd.random.<function>(xla_spmd.random.PRNGKey(seed), *args, **kwargs)`` with the same
arguments (arrays are written ``{"array": [...], "dtype": "..."}``, dtypes by name) and compares
with ``jax.random.<function>(jax.random.PRNGKey(seed), ...)`` stored under ``name``. Keys are
raw ``uint32[2]`` arrays (``PRNGKey``), JAX's default threefry2x32 implementation with its
default ``jax_threefry_partitionable=True``. Cases with ``x64`` run with ``jax_enable_x64``.
"""

import json
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "jax_random")


def array(values, dtype):
    return {"array": values, "dtype": dtype}


LOGITS = array([[0.1, 2.0, -1.0, 0.5, 0.0], [3.0, 0.2, 0.2, -2.0, 1.0],
                [-0.5, -0.5, 4.0, 0.0, 1.5]], "float32")
CASES = [
    # keys: seed layout, split and fold_in
    ("key_0", "PRNGKey", None, [0], {}, False),
    ("key_42", "PRNGKey", None, [42], {}, False),
    ("key_large", "PRNGKey", None, [2 ** 40 + 7], {}, False),
    ("key_negative", "PRNGKey", None, [-3], {}, False),
    ("key_large_x64", "PRNGKey", None, [2 ** 40 + 7], {}, True),
    ("split_2", "split", 0, [], {}, False),
    ("split_3", "split", 42, [3], {}, False),
    ("split_shape", "split", 7, [(2, 3)], {}, False),
    ("fold_in_0", "fold_in", 0, [0], {}, False),
    ("fold_in_7", "fold_in", 42, [7], {}, False),
    ("fold_in_big", "fold_in", 1, [123456789], {}, False),
    # raw bits
    ("bits_u32", "bits", 0, [(5,)], {}, False),
    ("bits_u32_2d", "bits", 3, [(3, 4)], {"dtype": "uint32"}, False),
    ("bits_u8", "bits", 3, [(7,)], {"dtype": "uint8"}, False),
    ("bits_u16", "bits", 3, [(7,)], {"dtype": "uint16"}, False),
    ("bits_u64", "bits", 3, [(5,)], {"dtype": "uint64"}, True),
    ("bits_scalar", "bits", 11, [()], {}, False),
    # uniform
    ("uniform", "uniform", 0, [(7,)], {}, False),
    ("uniform_2d_range", "uniform", 1, [(2, 3)], {"minval": -2.0, "maxval": 3.0}, False),
    ("uniform_scalar", "uniform", 2, [], {}, False),
    ("uniform_f16", "uniform", 3, [(6,)], {"dtype": "float16"}, False),
    ("uniform_bf16", "uniform", 3, [(6,)], {"dtype": "bfloat16"}, False),
    ("uniform_f64", "uniform", 4, [(5,)], {"dtype": "float64"}, True),
    ("uniform_array_bounds", "uniform", 5, [(2, 3)],
     {"minval": array([0.0, 1.0, 2.0], "float32"), "maxval": 5.0}, False),
    # normal and truncated normal
    ("normal", "normal", 0, [(9,)], {}, False),
    ("normal_2d", "normal", 42, [(3, 4)], {}, False),
    ("normal_f64", "normal", 4, [(5,)], {"dtype": "float64"}, True),
    ("truncated_normal", "truncated_normal", 0, [-1.5, 2.0, (8,)], {}, False),
    ("truncated_normal_narrow", "truncated_normal", 9, [0.0, 0.5, (2, 3)], {}, False),
    # bernoulli
    ("bernoulli", "bernoulli", 0, [0.3, (12,)], {}, False),
    ("bernoulli_default", "bernoulli", 1, [], {"shape": (6,)}, False),
    ("bernoulli_p_array", "bernoulli", 2,
     [array([0.1, 0.5, 0.9, 0.99], "float32")], {}, False),
    # categorical
    ("categorical", "categorical", 0, [LOGITS], {}, False),
    ("categorical_axis0", "categorical", 1, [LOGITS], {"axis": 0}, False),
    ("categorical_shape", "categorical", 2, [LOGITS], {"shape": (4, 3)}, False),
    # randint
    ("randint", "randint", 0, [(10,), 0, 10], {}, False),
    ("randint_wide", "randint", 1, [(8,), -5, 1000], {}, False),
    ("randint_2d", "randint", 2, [(3, 4), 3, 7], {}, False),
    ("randint_empty_range", "randint", 3, [(4,), 5, 5], {}, False),
    ("randint_uint8_full", "randint", 4, [(8,), 0, 256], {"dtype": "uint8"}, False),
    ("randint_int8", "randint", 5, [(8,), -100, 100], {"dtype": "int8"}, False),
    ("randint_int64", "randint", 6, [(5,), 0, 2 ** 40], {"dtype": "int64"}, True),
    # permutation
    ("permutation_int", "permutation", 0, [10], {}, False),
    ("permutation_two_rounds", "permutation", 1, [2000], {}, False),
    ("permutation_array", "permutation", 2,
     [array([[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]], "int32")], {}, False),
    ("permutation_axis1", "permutation", 3,
     [array([[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]], "int32")], {"axis": 1}, False),
    ("permutation_independent", "permutation", 4,
     [array([[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]], "int32")],
     {"independent": True}, False),
]


def decode(value):
    if isinstance(value, dict) and "array" in value:
        return np.asarray(value["array"], jnp.dtype(value["dtype"]))
    if isinstance(value, list):
        return tuple(value)
    return value


def run(function, seed, args, kwargs):
    args = [decode(a) for a in args]
    kwargs = {k: jnp.dtype(v) if k == "dtype" else decode(v) for k, v in kwargs.items()}
    fn = getattr(jax.random, function)
    if seed is None:
        return fn(*args, **kwargs)
    return fn(jax.random.PRNGKey(seed), *args, **kwargs)


def main():
    cases, results = [], {}
    for name, function, seed, args, kwargs, x64 in CASES:
        jax.config.update("jax_enable_x64", x64)
        out = np.asarray(run(function, seed, json.loads(json.dumps(args)),
                             json.loads(json.dumps(kwargs))))
        dtype = str(out.dtype)
        results[name] = out.astype(np.float32) if dtype == "bfloat16" else out
        cases.append({"name": name, "function": function, "seed": seed, "args": args,
                      "kwargs": kwargs, "x64": x64, "dtype": dtype,
                      "shape": list(out.shape)})
    jax.config.update("jax_enable_x64", False)
    np.savez_compressed(OUT + ".npz", **results)
    with open(OUT + ".json", "w") as f:
        json.dump({"jax_version": jax.__version__, "cases": cases}, f, indent=1)
        f.write("\n")
    print(f"wrote {OUT}.json and {OUT}.npz ({len(cases)} cases)")


if __name__ == "__main__":
    main()
