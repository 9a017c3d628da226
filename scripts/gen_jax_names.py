#!/usr/bin/env python3
"""Write the public names of ``jax.numpy``, ``jax.lax`` and ``jax.nn`` to
``tests/data/jax_names.json``, for the coverage test tests/frontend/test_jax_coverage.py, and
what ``jax.nn``'s activations give on a few inputs to ``tests/data/jax_nn_values.json`` (for
tests/frontend/test_jax_names.py).

Run with an interpreter that has JAX (the project's own environment never gets it)::

    python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install jax
    /tmp/jaxenv/bin/python scripts/gen_jax_names.py

A name is public when it does not start with ``_`` and is not a submodule.
"""

import json
import os
import types

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.lax  # noqa: E402
import jax.nn  # noqa: E402
import jax.numpy  # noqa: E402
import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "jax_names.json")
VALUES = os.path.join(ROOT, "tests", "data", "jax_nn_values.json")
ACTIVATIONS = ["softplus", "leaky_relu", "elu", "relu6", "silu", "swish", "log_sigmoid",
               "celu", "selu", "hard_tanh", "soft_sign", "standardize", "log_softmax"]


def public(module) -> list[str]:
    return sorted(name for name in dir(module) if not name.startswith("_")
                  and not isinstance(getattr(module, name), types.ModuleType))


def nn_values() -> dict:
    x = np.array([-3.0, -0.5, 0.0, 0.7, 8.0], np.float32)
    q = np.arange(24, dtype=np.float32).reshape(1, 3, 2, 4) / 10
    k = np.cos(np.arange(24, dtype=np.float32)).reshape(1, 3, 2, 4)
    v = np.sin(np.arange(24, dtype=np.float32)).reshape(1, 3, 2, 4)
    values = {"x": x.tolist(), "q": q.tolist(), "k": k.tolist(), "v": v.tolist()}
    for name in ACTIVATIONS:
        values[name] = np.asarray(getattr(jax.nn, name)(x)).tolist()
    values["dot_product_attention"] = np.asarray(jax.nn.dot_product_attention(q, k, v)).tolist()
    values["dot_product_attention_causal"] = np.asarray(
        jax.nn.dot_product_attention(q, k, v, is_causal=True)).tolist()
    values["one_hot_axis0"] = np.asarray(jax.nn.one_hot(np.array([0, 2]), 3, axis=0)).tolist()
    return values


def main():
    data = {"jax_version": jax.__version__, "numpy": public(jax.numpy),
            "lax": public(jax.lax), "nn": public(jax.nn)}
    with open(OUT, "w") as f:
        json.dump(data, f, indent=0)
        f.write("\n")
    with open(VALUES, "w") as f:
        json.dump(nn_values(), f)
        f.write("\n")
    print(f"wrote {VALUES} and {OUT}: " + ", ".join(f"{k} {len(v)}" for k, v in data.items()
                                       if isinstance(v, list)))


if __name__ == "__main__":
    main()
