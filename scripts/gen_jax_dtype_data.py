#!/usr/bin/env python3
"""Write JAX's dtype rules as data: ``tests/data/jax_dtypes.json``.

Run with an interpreter that has JAX (the project's own environment never gets it)::

    python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install jax
    /tmp/jaxenv/bin/python scripts/gen_jax_dtype_data.py

For 64-bit off (JAX's default) and on (``jax_enable_x64``), it records what JAX gives for:

* ``binary``: ``x + y`` and ``x / y`` for every pair of inputs, where an input is a numpy
  array of one dtype (strongly typed) or a Python scalar (``int``, ``float``, ``complex``,
  ``bool``; JAX types the first three weakly): the result's dtype and weak type;
* ``jit_input``: the dtype of ``jax.jit(lambda x: x)(np.zeros(3, dtype))``;
* ``defaults``: the dtypes of ``jnp.zeros(3)``, ``jnp.arange(3)``, ``jnp.arange(3.0)``,
  ``jnp.asarray(1.5)`` and ``jnp.asarray(1)``.

tests/frontend/test_dtype_rules.py checks xla-spmd against it.
"""

import json
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "jax_dtypes.json")

ARRAY_DTYPES = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
                "int64", "bfloat16", "float16", "float32", "float64", "complex64",
                "complex128"]
SCALARS = {"int": 1, "float": 1.0, "complex": 1j, "pybool": True}


def _input(name):
    if name in SCALARS:
        return SCALARS[name]
    return np.ones((), jnp.dtype(name))


def _result(fn, x, y):
    try:
        out = jax.eval_shape(fn, x, y)
    except Exception as error:  # noqa: BLE001 (record JAX's refusal as data)
        return {"error": type(error).__name__}
    return {"dtype": str(out.dtype), "weak": bool(out.weak_type)}


def _mode():
    names = ARRAY_DTYPES + list(SCALARS)
    binary = []
    for a in names:
        for b in names:
            binary.append({"x": a, "y": b,
                           "add": _result(lambda x, y: x + y, _input(a), _input(b)),
                           "divide": _result(lambda x, y: x / y, _input(a), _input(b))})
    jit_input = {d: str(jax.jit(lambda x: x)(np.zeros(3, jnp.dtype(d))).dtype)
                 for d in ARRAY_DTYPES}
    defaults = {"zeros": str(jnp.zeros(3).dtype), "arange_int": str(jnp.arange(3).dtype),
                "arange_float": str(jnp.arange(3.0).dtype),
                "asarray_float": str(jnp.asarray(1.5).dtype),
                "asarray_int": str(jnp.asarray(1).dtype)}
    return {"binary": binary, "jit_input": jit_input, "defaults": defaults}


def _lines(value, depth: int = 0) -> str:
    """JSON with one line per dict entry and per list item (small diffs, few lines)."""
    pad = " " * depth
    if isinstance(value, dict) and any(isinstance(v, (dict, list)) for v in value.values()):
        items = [f"{pad} {json.dumps(k)}: {_lines(v, depth + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list):
        items = [pad + " " + json.dumps(v, sort_keys=True) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(value, sort_keys=True)


def main():
    data = {"jax_version": jax.__version__}
    jax.config.update("jax_enable_x64", False)
    data["x32"] = _mode()
    jax.config.update("jax_enable_x64", True)
    data["x64"] = _mode()
    with open(OUT, "w") as f:
        f.write(_lines(data) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
