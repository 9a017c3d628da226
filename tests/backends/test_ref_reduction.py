"""Reference evaluator: reduce, reduce-window, select-and-scatter, sort, topk, map vs numpy."""

import itertools

import ml_dtypes
import numpy as np
import pytest

from xla_spmd.backends.reference import evaluate
from xla_spmd.ir import (
    BF16,
    F32,
    PRED,
    S32,
    ArrayShape,
    Builder,
    ComparisonDirection,
    ComparisonType,
    DType,
    Module,
    TupleShape,
    Window,
)

RNG = np.random.default_rng(0)


def binary(opname, dtype=F32, name=None):
    b = Builder(name or f"{opname}_{dtype}")
    x = b.parameter(ArrayShape(dtype, ()), "x")
    y = b.parameter(ArrayShape(dtype, ()), "y")
    return b.build(b.op(opname, x, y))


def run(build, *args):
    """`build(builder, *parameters)` returns the root; evaluate on `args`."""
    b = Builder("entry")
    params = [b.parameter(ArrayShape(DType.from_numpy(a.dtype), a.shape), f"a{i}")
              for i, a in enumerate(args)]
    return evaluate(Module.from_entry("m", b.build(build(b, *params))), list(args))


# ---------------------------------------------------------------------------------------------
# reduce


@pytest.mark.parametrize("opname,ref", [("add", np.sum), ("multiply", np.prod),
                                        ("maximum", np.max), ("minimum", np.min)])
@pytest.mark.parametrize("axes", [(0,), (1,), (0, 2), (0, 1, 2), ()])
def test_reduce_fast_path_matches_numpy(opname, ref, axes):
    x = RNG.uniform(0.5, 1.5, (3, 4, 5)).astype(np.float32)
    init = {"add": 0, "multiply": 1, "maximum": -np.inf, "minimum": np.inf}[opname]
    got = run(lambda b, p: b.reduce(p, b.constant(np.float32(init)), dimensions=axes,
                                    to_apply=binary(opname)), x)
    np.testing.assert_allclose(got, ref(x, axis=axes) if axes else x, rtol=1e-5)


def test_reduce_integer_wraps_and_bf16_accumulates_in_f32():
    x = np.full((4, 100), 2**30, np.int32)
    got = run(lambda b, p: b.reduce(p, b.constant(np.int32(0)), dimensions=(1,),
                                    to_apply=binary("add", S32)), x)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.sum(x.astype(np.int64), axis=1).astype(np.int32))
    ones = np.ones((1000,), ml_dtypes.bfloat16)
    got = run(lambda b, p: b.reduce(p, b.constant(np.zeros((), ml_dtypes.bfloat16)),
                                    dimensions=(0,), to_apply=binary("add", BF16)), ones)
    assert got.dtype == ml_dtypes.bfloat16 and float(got) == 1000.0  # a bf16 fold stops at 256


def test_reduce_max_of_signed_zeros_is_positive():
    x = np.array([-0.0, 0.0, -0.0], np.float32)
    got = run(lambda b, p: b.reduce(p, b.constant(np.float32(-np.inf)), dimensions=(0,),
                                    to_apply=binary("maximum")), x)
    assert not np.signbit(got)


def sum_of_squares():
    b = Builder("sumsq")
    acc = b.parameter(ArrayShape(F32, ()), "acc")
    x = b.parameter(ArrayShape(F32, ()), "x")
    return b.build(b.add(acc, b.multiply(x, x)))


def test_reduce_elementwise_body_folds_in_order():
    x = RNG.normal(size=(3, 4, 5)).astype(np.float32)
    got = run(lambda b, p: b.reduce(p, b.constant(np.float32(0)), dimensions=(0, 2),
                                    to_apply=sum_of_squares()), x)
    np.testing.assert_allclose(got, np.sum(x * x, axis=(0, 2)), rtol=1e-5)


def test_reduce_non_elementwise_body_matches_vectorized():
    b = Builder("reshaping_add")
    acc = b.parameter(ArrayShape(F32, ()), "acc")
    x = b.parameter(ArrayShape(F32, ()), "x")
    body = b.build(b.add(acc, b.reshape(b.multiply(x, x), shape=ArrayShape(F32, ()))))
    x = RNG.normal(size=(2, 3)).astype(np.float32)
    got = run(lambda b, p: b.reduce(p, b.constant(np.float32(0)), dimensions=(1,),
                                    to_apply=body), x)
    np.testing.assert_allclose(got, np.sum(x * x, axis=1), rtol=1e-6)


def argmax_body():
    """JAX's argmax reducer: larger value wins, ties keep the smaller index."""
    b = Builder("argmax")
    av = b.parameter(ArrayShape(F32, ()), "av", number=0)
    ai = b.parameter(ArrayShape(S32, ()), "ai", number=1)
    bv = b.parameter(ArrayShape(F32, ()), "bv", number=2)
    bi = b.parameter(ArrayShape(S32, ()), "bi", number=3)
    gt = b.compare(av, bv, direction=ComparisonDirection.GT)
    eq = b.compare(av, bv, direction=ComparisonDirection.EQ)
    lt = b.compare(ai, bi, direction=ComparisonDirection.LT)
    first = b.op("or", gt, b.op("and", eq, lt))
    return b.build(b.tuple(b.select(first, av, bv), b.select(first, ai, bi)))


def test_variadic_argmax_reduce():
    x = RNG.integers(0, 4, (5, 7)).astype(np.float32)  # many ties
    index = np.broadcast_to(np.arange(7, dtype=np.int32), x.shape).copy()

    def build(b, values, indices):
        r = b.reduce(values, indices, b.constant(np.float32(-np.inf)), b.constant(np.int32(0)),
                     dimensions=(1,), to_apply=argmax_body())
        return r

    values, indices = run(build, x, index)
    np.testing.assert_array_equal(indices, np.argmax(x, axis=1))
    np.testing.assert_array_equal(values, np.max(x, axis=1))


def test_reduce_of_zero_elements_is_init():
    x = np.zeros((3, 0), np.float32)
    got = run(lambda b, p: b.reduce(p, b.constant(np.float32(7)), dimensions=(1,),
                                    to_apply=sum_of_squares()), x)
    np.testing.assert_array_equal(got, [7, 7, 7])


# ---------------------------------------------------------------------------------------------
# reduce-window


def brute_reduce_window(x, init, op, window):
    """XLA's rule per output element: fold real window elements from init, row-major."""
    out_shape = tuple(w.output_size(n) for w, n in zip(window.dims, x.shape))
    out = np.empty(out_shape, x.dtype)
    for o in np.ndindex(out_shape):
        acc = init
        for k in np.ndindex(tuple(w.size for w in window.dims)):
            index = []
            for w, oi, ki, n in zip(window.dims, o, k, x.shape):
                u = oi * w.stride + ki * w.rhs_dilation - w.padding_low
                if u % w.lhs_dilation or not 0 <= u // w.lhs_dilation < n:
                    break
                index.append(u // w.lhs_dilation)
            else:
                acc = op(acc, x[tuple(index)])
        out[o] = acc
    return out


def test_reduce_window_worked_example():
    x = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    window = Window.make((2, 1), (4, 1), ((2, 1), (0, 0)), (2, 1), (3, 1))
    got = run(lambda b, p: b.reduce_window(p, b.constant(np.float32(0)), window=window,
                                           to_apply=binary("add")), x)
    np.testing.assert_array_equal(got, [[0, 0], [3, 4]])


@pytest.mark.parametrize("seed", range(12))
def test_reduce_window_random_configs(seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(n) for n in rng.integers(1, 6, 2))
    window = Window.make(tuple(rng.integers(1, 4, 2)), tuple(rng.integers(1, 3, 2)),
                         [tuple(int(v) for v in rng.integers(0, 3, 2)) for _ in range(2)],
                         tuple(rng.integers(1, 3, 2)), tuple(rng.integers(1, 3, 2)))
    x = rng.normal(size=shape).astype(np.float32)
    # init 5 is no identity: the skip-padding rule is visible
    for opname, op, body in [("add", np.add, binary("add")), ("max", max, binary("maximum")),
                             ("sumsq", lambda a, v: a + v * v, sum_of_squares())]:
        got = run(lambda b, p, body=body: b.reduce_window(
            p, b.constant(np.float32(5)), window=window, to_apply=body), x)
        want = brute_reduce_window(x, np.float32(5), op, window)
        np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=opname)


def test_variadic_reduce_window():
    x = RNG.integers(0, 3, (6,)).astype(np.float32)
    index = np.arange(6, dtype=np.int32)
    window = Window.make((3,), (1,), ((1, 1),))
    values, indices = run(lambda b, v, i: b.reduce_window(
        v, i, b.constant(np.float32(-np.inf)), b.constant(np.int32(0)), window=window,
        to_apply=argmax_body()), x, index)
    padded = np.concatenate([[-np.inf], x, [-np.inf]])
    for o in range(6):
        best = int(np.argmax(padded[o:o + 3])) + o - 1
        assert indices[o] == best and values[o] == x[best]


# ---------------------------------------------------------------------------------------------
# select-and-scatter


def ge_body():
    b = Builder("ge")
    x = b.parameter(ArrayShape(F32, ()), "x")
    y = b.parameter(ArrayShape(F32, ()), "y")
    return b.build(b.compare(x, y, direction=ComparisonDirection.GE))


def brute_select_and_scatter(operand, source, init, window):
    result = np.full(operand.shape, init, operand.dtype)
    for s in np.ndindex(source.shape):
        pick = None
        for k in np.ndindex(tuple(w.size for w in window.dims)):
            index = tuple(si * w.stride - w.padding_low + ki
                          for si, ki, w in zip(s, k, window.dims))
            if not all(0 <= i < n for i, n in zip(index, operand.shape)):
                continue
            if pick is None or not operand[pick] >= operand[index]:
                pick = index
        if pick is not None:
            result[pick] += source[s]
    return result


def test_select_and_scatter_is_maxpool_gradient():
    x = np.array([[1, 5, 2, 0], [3, 4, 8, 8], [0, 0, 1, 1], [9, 0, 1, 1]], np.float32)
    grad = np.array([[10, 20], [30, 40]], np.float32)
    window = Window.make((2, 2), (2, 2))
    got = run(lambda b, o, s: b.select_and_scatter(o, s, b.constant(np.float32(0)),
                                                   window=window, select=ge_body(),
                                                   scatter=binary("add")), x, grad)
    want = np.zeros((4, 4), np.float32)
    want[0, 1], want[1, 2], want[3, 0], want[2, 2] = 10, 20, 30, 40  # ties: first wins
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("seed", range(4))
def test_select_and_scatter_overlapping_padded(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, (5, 6)).astype(np.float32)
    window = Window.make((3, 3), (2, 1), ((1, 1), (0, 2)))
    out_shape = tuple(w.output_size(n) for w, n in zip(window.dims, x.shape))
    source = rng.normal(size=out_shape).astype(np.float32)
    got = run(lambda b, o, s: b.select_and_scatter(o, s, b.constant(np.float32(1)),
                                                   window=window, select=ge_body(),
                                                   scatter=binary("add")), x, source)
    np.testing.assert_allclose(got, brute_select_and_scatter(x, source, 1.0, window),
                               rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# sort, topk, map


def comparator(direction, dtype=F32, operands=1, kind=None):
    b = Builder(f"cmp_{direction}_{operands}")
    params = []
    for i in range(operands):
        for side in "ab":
            params.append(b.parameter(ArrayShape(dtype if i == 0 else S32, ()), f"{side}{i}"))
    return b.build(b.compare(params[0], params[1], direction=ComparisonDirection[direction],
                             type=kind))


def lexicographic_comparator():
    """keys ascending, then values descending: not a single compare (general path)."""
    b = Builder("lex")
    ka, kb = (b.parameter(ArrayShape(F32, ()), n) for n in ("ka", "kb"))
    va, vb = (b.parameter(ArrayShape(S32, ()), n) for n in ("va", "vb"))
    less = b.compare(ka, kb, direction=ComparisonDirection.LT)
    equal = b.compare(ka, kb, direction=ComparisonDirection.EQ)
    greater_value = b.compare(va, vb, direction=ComparisonDirection.GT)
    return b.build(b.op("or", less, b.op("and", equal, greater_value)))


@pytest.mark.parametrize("direction", ["LT", "GT"])
def test_sort_is_stable_and_permutes_all_operands(direction):
    keys = RNG.integers(0, 3, (4, 9)).astype(np.float32)
    values = np.broadcast_to(np.arange(9, dtype=np.int32), keys.shape).copy()
    shape = TupleShape((ArrayShape(F32, keys.shape), ArrayShape(S32, keys.shape)))
    sorted_keys, perm = run(lambda b, k, v: b.sort(
        k, v, dimensions=(1,), is_stable=True, to_apply=comparator(direction, operands=2),
        shape=shape), keys, values)
    for row in range(4):
        sign = 1 if direction == "LT" else -1
        want = sorted(range(9), key=lambda i, row=row: sign * keys[row, i])
        np.testing.assert_array_equal(perm[row], want)
        np.testing.assert_array_equal(sorted_keys[row], keys[row, want])


def test_sort_total_order_and_general_comparator():
    x = np.array([3.0, np.nan, -0.0, 0.0, -np.inf, 1.0, -np.nan], np.float32)
    got = run(lambda b, p: b.sort(p, dimensions=(0,),
                                  to_apply=comparator("LT", kind=ComparisonType.TOTALORDER)), x)
    bits = got.view(np.uint32)
    assert np.isnan(got[0]) and bits[0] >> 31 == 1 and got[1] == -np.inf
    assert np.signbit(got[2]) and not np.signbit(got[3]) and np.isnan(got[-1])
    keys = RNG.integers(0, 3, (2, 8)).astype(np.float32)
    values = RNG.integers(0, 5, (2, 8)).astype(np.int32)
    k, v = run(lambda b, k, v: b.sort(k, v, dimensions=(1,),
                                      to_apply=lexicographic_comparator()), keys, values)
    for row in range(2):
        want = sorted(zip(keys[row], values[row]), key=lambda kv: (kv[0], -kv[1]))
        np.testing.assert_array_equal(k[row], [a for a, _ in want])
        np.testing.assert_array_equal(v[row], [c for _, c in want])


def test_topk_and_map():
    x = np.array([[1, 5, 5, 2], [0, -1, 3, 3]], np.float32)
    values, indices = run(lambda b, p: b.topk(p, k=3), x)
    np.testing.assert_array_equal(values, [[5, 5, 2], [3, 3, 0]])
    np.testing.assert_array_equal(indices, [[1, 2, 3], [2, 3, 0]])
    y = RNG.normal(size=(3, 4)).astype(np.float32)
    got = run(lambda b, p, q: b.map(p, q, dimensions=(0, 1), to_apply=sum_of_squares()), y, y)
    np.testing.assert_allclose(got, y + y * y, rtol=1e-6)


def test_pred_and_or_reduce():
    x = RNG.integers(0, 2, (4, 6)).astype(bool)
    for opname, ref, init in (("and", np.all, True), ("or", np.any, False)):
        got = run(lambda b, p, o=opname, i=init: b.reduce(
            p, b.constant(np.bool_(i)), dimensions=(1,), to_apply=binary(o, PRED)), x)
        np.testing.assert_array_equal(got, ref(x, axis=1))


def test_window_taps_cover_every_position():
    # A window of ones summed gives the number of real elements per window.
    x = np.ones((4, 5), np.float32)
    window = Window.make((2, 3), (1, 2), ((1, 0), (2, 1)), (2, 1), (1, 2))
    got = run(lambda b, p: b.reduce_window(p, b.constant(np.float32(0)), window=window,
                                           to_apply=binary("add")), x)
    want = brute_reduce_window(x, np.float32(0), np.add, window)
    np.testing.assert_array_equal(got, want)
    assert list(itertools.chain(got.shape)) == [w.output_size(n) for w, n in
                                                 zip(window.dims, x.shape)]


def test_sort_pairwise_and_python_paths_agree():
    from xla_spmd.backends.reference.evaluator import Context
    from xla_spmd.backends.reference.reduction import _sort_general, _sort_pairwise

    keys = RNG.integers(0, 4, (3, 11)).astype(np.float32)
    values = RNG.integers(0, 3, (3, 11)).astype(np.int32)
    body = lexicographic_comparator()
    ctx = Context()
    pairwise = _sort_pairwise(ctx, body, [keys, values], 1)
    python = _sort_general(ctx, body, [keys, values], 1)
    np.testing.assert_array_equal(pairwise, python)
    keys[0, 3] = np.nan  # FLOAT `<` with NaN: incomparability is not transitive
    assert _sort_pairwise(ctx, body, [keys, values], 1) is None
    # `<=` is no strict weak order: positions collide and the pairwise path declines.
    b = Builder("le")
    x, y = b.parameter(ArrayShape(F32, ()), "x"), b.parameter(ArrayShape(F32, ()), "y")
    le = b.build(b.compare(x, y, direction=ComparisonDirection.LE))
    assert _sort_pairwise(ctx, le, [np.array([1, 1, 0], np.float32)], 0) is None
