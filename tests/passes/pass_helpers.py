"""Shared helpers of the pass tests: golden text checks and the reference-evaluator oracle."""

import numpy as np

from xla_spmd.backends.reference import evaluate, evaluate_spmd
from xla_spmd.ir import ArrayShape, Module, TupleShape, parse_hlo, print_module, verify
from xla_spmd.passes import run_passes


def random_value(shape, rng):
    if isinstance(shape, TupleShape):
        return tuple(random_value(s, rng) for s in shape.elements)
    assert isinstance(shape, ArrayShape)
    dtype = shape.dtype
    if dtype.is_pred:
        return rng.integers(0, 2, size=shape.dims).astype(bool)
    if dtype.is_integer:
        return rng.integers(-5 if dtype.is_signed else 0, 6, size=shape.dims).astype(dtype.numpy)
    return rng.standard_normal(shape.dims).astype(dtype.numpy)


def flatten(value):
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in flatten(v)]
    return [np.asarray(value)]


def assert_same_results(before: Module, after: Module, num_devices: int | None = None,
                        seed: int = 0):
    """Both modules give equal results on random arguments (per device when SPMD)."""
    rng = np.random.default_rng(seed)
    params = before.entry.parameters
    if num_devices is None:
        args = [random_value(p.shape, rng) for p in params]
        expected, found = [evaluate(before, args)], [evaluate(after, args)]
    else:
        args = [[random_value(p.shape, rng) for p in params] for _ in range(num_devices)]
        expected = evaluate_spmd(before, args, num_devices)
        found = evaluate_spmd(after, args, num_devices)
    for e, f in zip(expected, found):
        for a, b in zip(flatten(e), flatten(f), strict=True):
            np.testing.assert_array_equal(a, b)


def normalized(text: str) -> str:
    return print_module(parse_hlo(text))


def check_golden(passes, before: str, after: str | None, num_devices: int | None = None):
    """Run `passes` on `before` (verifying after each); the printed result must equal `after`
    (None: unchanged, and the very same module object); results must not change."""
    module = parse_hlo(before)
    verify(module)
    result = run_passes(module, passes, verify_each=True)
    if after is None:
        assert result is module, print_module(result)
    else:
        assert print_module(result) == normalized(after)
    assert parse_hlo(print_module(result)) == result
    assert_same_results(module, result, num_devices)
    return result
