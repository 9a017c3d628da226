"""Differential test of the elementwise ops (the ones the CPU backend generates code for) on
the CPU backend against the reference evaluator, with hypothesis-drawn ops, dtypes, shapes
and values (NaN, infinities, signed zeros, subnormals and integer extremes included).

Exact ops must be bit-identical (any NaN matches any NaN). Transcendentals must be within 2 ulp
of the correctly rounded value, computed in ``np.longdouble`` (64-bit or wider mantissa on the
machines we run on): numpy's own kernels are not that oracle, SVML's f32 ``tanh`` or ``atan2``
sit up to 3 ulp from glibc's. Each op is tested alone and fused behind a broadcast and a
transpose, and the report must show it was compiled (no fallback).
"""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import xla_spmd.backends.reference  # noqa: F401 (register the reference rules)
from xla_spmd.backends.cpu import CpuBackend
from xla_spmd.backends.cpu.fusion import can_be_root
from xla_spmd.backends.reference import evaluate
from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import ArrayShape, Builder, DType, Module
from xla_spmd.ir.attributes import ComparisonDirection, ComparisonType
from xla_spmd.stablehlo.interpreter import ulp_distance

TRANSCENDENTAL = {"exponential", "exponential-minus-one", "log", "log-plus-one", "sine",
                  "cosine", "tan", "tanh", "logistic", "power", "atan2", "cbrt"}
UNARY = ["abs", "negate", "exponential", "exponential-minus-one", "log", "log-plus-one",
         "sqrt", "rsqrt", "cbrt", "tanh", "logistic", "sine", "cosine", "tan", "floor", "ceil",
         "round-nearest-even", "round-nearest-afz", "sign", "not", "is-finite", "popcnt",
         "count-leading-zeros", "erf", "copy"]
BINARY = ["add", "subtract", "multiply", "divide", "remainder", "power", "maximum", "minimum",
          "and", "or", "xor", "shift-left", "shift-right-arithmetic", "shift-right-logical",
          "atan2"]
DTYPES = ["pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32",
          "f64"]
BACKEND = CpuBackend(libm=True)   # transcendentals generated too (within 2 ulp)


def values(draw, dtype: DType, shape) -> np.ndarray:
    count = int(np.prod(shape, dtype=np.int64))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    numpy_dtype = dtype.numpy
    if dtype.name == "pred":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.is_integer:
        info = np.iinfo(numpy_dtype)
        special = np.array([0, 1, info.max, info.bits - 1, info.bits, 3, info.min,
                            info.max // 2 + 1], dtype=np.uint64 if info.min == 0 else np.int64
                           ).astype(numpy_dtype)
        data = rng.integers(info.min, info.max, shape, dtype=numpy_dtype, endpoint=True)
        small = rng.integers(-5, 6, shape).astype(numpy_dtype)
    else:
        info = ml_dtypes.finfo(numpy_dtype)
        special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0, 0.5, -2.5,
                            float(info.smallest_subnormal), float(info.max),
                            -float(info.smallest_normal), 3.0], np.float64).astype(numpy_dtype)
        data = (rng.standard_normal(shape) * 4).astype(numpy_dtype)
        small = rng.integers(-3, 4, shape).astype(numpy_dtype)
    flat = np.where(rng.random(count) < 0.5, data.reshape(-1), small.reshape(-1))
    picks = rng.random(count) < 0.25
    flat = np.where(picks, special[rng.integers(0, len(special), count)], flat)
    return flat.astype(numpy_dtype).reshape(shape)


_PRECISE = {"exponential": np.exp, "exponential-minus-one": np.expm1, "log": np.log,
            "log-plus-one": np.log1p, "sine": np.sin, "cosine": np.cos, "tan": np.tan,
            "tanh": np.tanh, "logistic": lambda x: 1 / (1 + np.exp(-x)), "power": np.power,
            "atan2": np.arctan2, "cbrt": np.cbrt}
assert set(_PRECISE) == TRANSCENDENTAL


def correctly_rounded(opcode: str, operands: list[np.ndarray]) -> np.ndarray:
    """``opcode`` evaluated in extended precision, rounded once to the operands' dtype."""
    dtype = operands[0].dtype
    with np.errstate(all="ignore"):
        exact = _PRECISE[opcode](*(x.astype(np.longdouble) for x in operands))
        # Narrow types round via f64, which is exact enough not to double-round wrongly.
        return (exact if dtype == np.float64 else exact.astype(np.float64)).astype(dtype)


def float_ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`ulp_distance`, with NaN vs NaN at 0."""
    with np.errstate(invalid="ignore"):  # ml_dtypes warns casting NaN
        nan = np.isnan(a.astype(np.float64)) & np.isnan(b.astype(np.float64))
    return np.where(nan, np.uint64(0), ulp_distance(a, b))


def assert_same(got: np.ndarray, want: np.ndarray, tolerance_ulp: int, what: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, what
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    distance = float_ulp_distance(got, want)
    worst = int(distance.max(initial=0))
    assert worst <= tolerance_ulp, (f"{what}: {worst} ulp apart\n got {got.ravel()[:8]}\n"
                                    f"want {want.ravel()[:8]}")


def build(opcode, operand_dtypes, shape, fused, attrs):
    """``opcode`` on parameters; ``fused`` feeds operand 0 through broadcast + transpose."""
    b = Builder("main")
    params = []
    for k, dtype in enumerate(operand_dtypes):
        if fused and k == 0 and len(shape) == 2:
            row = b.parameter(ArrayShape(dtype, (shape[0],)), f"p{k}")
            wide = b.broadcast(row, dimensions=(1,),
                               shape=ArrayShape(dtype, (shape[1], shape[0])))
            params.append(b.transpose(wide, dimensions=(1, 0)))
        else:
            params.append(b.parameter(ArrayShape(dtype, tuple(shape)), f"p{k}"))
    root = b.op(opcode, *params, **attrs)
    return Module.from_entry("m", b.build(root)), root


def check(opcode, operand_dtypes, shape, fused, attrs, draw):
    try:
        module, root = build(opcode, operand_dtypes, shape, fused, attrs)
    except XlaSpmdError:
        assume(False)
    assume(can_be_root(root, libm=True))
    args = [values(draw, p.shape.dtype, p.shape.dims) for p in module.entry.parameters]
    try:
        want = evaluate(module, args)
    except XlaSpmdError:
        assume(False)
    executable = BACKEND.compile(module, (0,))
    (got,) = executable.run(0, args, None)
    assert executable.report()["fallbacks"] == {}
    what = f"{opcode} {operand_dtypes} {shape}"
    if opcode in TRANSCENDENTAL:
        operands = list(args)
        if fused and len(shape) == 2:  # operand 0 is row p0 broadcast along dimension 1
            operands[0] = np.broadcast_to(args[0][:, None], tuple(shape))
        assert_same(got, correctly_rounded(opcode, operands), 2, what)
    else:
        assert_same(got, np.asarray(want), 0, what)


shapes = st.lists(st.integers(1, 6), min_size=0, max_size=3)


def _compiled(opcode, dtypes, **attrs) -> bool:
    try:
        _, root = build(opcode, dtypes, (2,), False, attrs)
    except XlaSpmdError:
        return False
    return can_be_root(root, libm=True)


ARITHMETIC = [(opcode, name) for opcode in UNARY + BINARY for name in DTYPES
              if _compiled(opcode, [DType.named(name)] * (1 if opcode in UNARY else 2))]


@pytest.mark.parametrize("opcode, dtype", ARITHMETIC)
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_unary_and_binary_ops_match_the_reference(opcode, dtype, data):
    arity = 1 if opcode in UNARY else 2
    check(opcode, [DType.named(dtype)] * arity, data.draw(shapes), data.draw(st.booleans()),
          {}, data.draw)


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_compare_select_clamp_match_the_reference(dtype, data):
    dtype = DType.named(dtype)
    kind = data.draw(st.sampled_from(["compare", "select", "clamp"]))
    shape, fused = data.draw(shapes), data.draw(st.booleans())
    if kind == "compare":
        attrs = {"direction": data.draw(st.sampled_from(list(ComparisonDirection)))}
        comparison = data.draw(st.sampled_from([None, *ComparisonType]))
        if comparison is not None:
            attrs["type"] = comparison
        check("compare", [dtype, dtype], shape, fused, attrs, data.draw)
    elif kind == "select":
        check("select", [DType.named("pred"), dtype, dtype], shape, fused, {}, data.draw)
    else:
        check("clamp", [dtype] * 3, shape, fused, {}, data.draw)


@pytest.mark.parametrize("source", DTYPES)
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_conversions_match_the_reference(source, data):
    kind = data.draw(st.sampled_from(["convert", "bitcast-convert"]))
    source, target = DType.named(source), DType.named(data.draw(st.sampled_from(DTYPES)))
    shape = tuple(data.draw(shapes))
    b = Builder("main")
    p = b.parameter(ArrayShape(source, shape), "p0")
    try:
        root = b.op(kind, p, shape=ArrayShape(target, shape))
    except XlaSpmdError:
        assume(False)
    module = Module.from_entry("m", b.build(root))
    assume(can_be_root(root, libm=True))
    args = [values(data.draw, source, shape)]
    want = evaluate(module, args)
    executable = BACKEND.compile(module, (0,))
    (got,) = executable.run(0, args, None)
    assert executable.report()["fallbacks"] == {}
    assert_same(got, np.asarray(want), 0, f"{kind} {source}->{target} {shape}")


def test_every_supported_elementwise_op_is_covered():
    """The tables above reach every elementwise opcode the renderer compiles."""
    from xla_spmd.ir.ops import OPS
    covered = {opcode for opcode, _ in ARITHMETIC} | {"compare", "select", "clamp",
                                                      "convert", "bitcast-convert"}
    compiled = {name for name, op in OPS.items()
                if op.family.value in ("unary", "binary", "elementwise")
                and any(_compiled(name, [DType.named(d)] * max(op.min_operands, 1))
                        for d in DTYPES)}
    assert compiled <= covered, sorted(compiled - covered)
