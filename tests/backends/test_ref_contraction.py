"""Reference evaluator: dot vs np.einsum, convolution vs the §12.2 element formula."""

import itertools

import ml_dtypes
import numpy as np
import pytest

from xla_spmd.backends.reference import evaluate
from xla_spmd.ir import ArrayShape, Builder, ConvDimensionNumbers, DType, Module, Window

RNG = np.random.default_rng(1)


def run(build, *args, result=None):
    b = Builder("entry")
    params = [b.parameter(ArrayShape(DType.from_numpy(a.dtype), a.shape), f"a{i}")
              for i, a in enumerate(args)]
    return evaluate(Module.from_entry("m", b.build(build(b, *params))), list(args))


# ---------------------------------------------------------------------------------------------
# dot


@pytest.mark.parametrize("lhs_shape,rhs_shape,dims,spec", [
    ((4, 3), (3, 5), ((), (1,), (), (0,)), "ik,kj->ij"),
    ((2, 4, 3), (2, 3, 5), ((0,), (2,), (0,), (1,)), "bik,bkj->bij"),
    ((3, 2, 4), (5, 4, 2), ((1,), (2,), (2,), (1,)), "ibk,jkb->bij"),
    ((3,), (4,), ((), (), (), ()), "i,j->ij"),
    ((2, 3, 4), (4, 3), ((), (1, 2), (), (1, 0)), "ijk,kj->i"),
])
def test_dot_matches_einsum(lhs_shape, rhs_shape, dims, spec):
    lhs = RNG.normal(size=lhs_shape).astype(np.float32)
    rhs = RNG.normal(size=rhs_shape).astype(np.float32)
    lb, lc, rb, rc = dims
    got = run(lambda b, x, y: b.dot(x, y, lhs_batch_dims=lb, lhs_contracting_dims=lc,
                                    rhs_batch_dims=rb, rhs_contracting_dims=rc), lhs, rhs)
    np.testing.assert_allclose(got, np.einsum(spec, lhs, rhs), rtol=1e-5, atol=1e-6)


def test_dot_bf16_to_f32_and_s8_to_s32_wrap():
    from xla_spmd.ir import F32, S8, S32
    lhs = RNG.normal(size=(3, 8)).astype(ml_dtypes.bfloat16)
    rhs = RNG.normal(size=(8, 2)).astype(ml_dtypes.bfloat16)
    b = Builder("e")
    x, y = b.parameter(ArrayShape(DType.named("bf16"), (3, 8))), b.parameter(
        ArrayShape(DType.named("bf16"), (8, 2)))
    root = b.dot(x, y, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,),
                 shape=ArrayShape(F32, (3, 2)))
    got = evaluate(Module.from_entry("m", b.build(root)), [lhs, rhs])
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, lhs.astype(np.float32) @ rhs.astype(np.float32), rtol=1e-6)
    a = np.full((2, 4), 127, np.int8)
    c = np.full((4, 3), -128, np.int8)
    b = Builder("e")
    x, y = b.parameter(ArrayShape(S8, (2, 4))), b.parameter(ArrayShape(S8, (4, 3)))
    root = b.dot(x, y, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,),
                 shape=ArrayShape(S32, (2, 3)))
    got = evaluate(Module.from_entry("m", b.build(root)), [a, c])
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.full((2, 3), 127 * -128 * 4, np.int32))
    big = np.full((1, 4), 2**30, np.int32)
    got = run(lambda b, x, y: b.dot(x, y, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,)),
              big, big.T.copy())
    np.testing.assert_array_equal(got, [[np.int32(0)]])  # 4 * 2**60 wraps to 0


# ---------------------------------------------------------------------------------------------
# convolution


def brute_convolution(lhs, rhs, dn, window, groups, batch_groups, out_dtype):
    """The §12.2 element formula, one output element at a time."""
    n, c = lhs.shape[dn.input_batch], lhs.shape[dn.input_feature]
    o = rhs.shape[dn.kernel_output_feature]
    cg, og, ob, nb = c // groups, o // groups, o // batch_groups, n // batch_groups
    out_spatial = [w.output_size(lhs.shape[d]) for w, d in zip(window.dims, dn.input_spatial)]
    out_shape = [0] * lhs.ndim
    out_shape[dn.output_batch], out_shape[dn.output_feature] = nb, o
    for d, size in zip(dn.output_spatial, out_spatial):
        out_shape[d] = size
    out = np.zeros(out_shape, out_dtype)
    kernel_sizes = [w.size for w in window.dims]
    for b, f in itertools.product(range(nb), range(o)):
        for p in np.ndindex(*out_spatial):
            total = 0.0
            for k in np.ndindex(*kernel_sizes):
                q = []
                for w, pi, ki, d in zip(window.dims, p, k, dn.input_spatial):
                    u = pi * w.stride + ki * w.rhs_dilation - w.padding_low
                    if u % w.lhs_dilation or not 0 <= u // w.lhs_dilation < lhs.shape[d]:
                        break
                    q.append(u // w.lhs_dilation)
                else:
                    kk = [w.size - 1 - ki if w.reversal else ki for w, ki in zip(window.dims, k)]
                    for ci in range(cg):
                        li = [0] * lhs.ndim
                        li[dn.input_batch] = (f // ob) * nb + b
                        li[dn.input_feature] = (f // og) * cg + ci
                        for d, qi in zip(dn.input_spatial, q):
                            li[d] = qi
                        ri = [0] * rhs.ndim
                        ri[dn.kernel_input_feature], ri[dn.kernel_output_feature] = ci, f
                        for d, ki in zip(dn.kernel_spatial, kk):
                            ri[d] = ki
                        total += float(lhs[tuple(li)]) * float(rhs[tuple(ri)])
            oi = [0] * lhs.ndim
            oi[dn.output_batch], oi[dn.output_feature] = b, f
            for d, pi in zip(dn.output_spatial, p):
                oi[d] = pi
            out[tuple(oi)] = total
    return out


def conv(lhs, rhs, labels, window, groups=1, batch_groups=1):
    dn = ConvDimensionNumbers.from_labels(labels)
    got = run(lambda b, x, y: b.convolution(x, y, window=window, dim_labels=dn,
                                            feature_group_count=groups,
                                            batch_group_count=batch_groups), lhs, rhs)
    return got, brute_convolution(lhs, rhs, dn, window, groups, batch_groups, got.dtype)


def place(sizes: dict, labels: str):
    return tuple(sizes[c] for c in labels)


def test_convolution_example_output_size():
    # §12.2: n=5, pad (1,1), kernel 3, rhs_dilation 2, stride 2 -> 2 outputs.
    lhs = RNG.normal(size=(1, 1, 5)).astype(np.float32)
    rhs = RNG.normal(size=(1, 1, 3)).astype(np.float32)
    window = Window.make((3,), (2,), ((1, 1),), None, (2,))
    got, want = conv(lhs, rhs, "bf0_oi0->bf0", window)
    assert got.shape == (1, 1, 2)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    x = np.array([[[1, 2, 3]]], np.float32)
    k = np.array([[[1, 10]]], np.float32)
    got, _ = conv(x, k, "bf0_oi0->bf0", Window.make((2,)))
    np.testing.assert_array_equal(got, [[[21, 32]]])


LABELS = ["b01f_01io->b01f", "bf01_oi01->bf01", "f01b_i01o->01bf", "b10f_o01i->fb01"]


@pytest.mark.parametrize("seed", range(16))
def test_convolution_random_configs(seed):
    rng = np.random.default_rng(seed)
    labels = LABELS[seed % len(LABELS)]
    lhs_labels, rest = labels.split("_")
    rhs_labels = rest.split("->")[0]
    mode = seed % 3  # plain, feature groups, batch groups
    groups = int(rng.integers(2, 4)) if mode == 1 else 1
    batch_groups = int(rng.integers(2, 4)) if mode == 2 else 1
    kernel = [int(v) for v in rng.integers(1, 4, 2)]
    spatial = [int(v) for v in rng.integers(3, 7, 2)]
    cg, og = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    n = batch_groups * int(rng.integers(1, 3))
    lhs_sizes = {"b": n, "f": cg * groups, "0": spatial[0], "1": spatial[1]}
    rhs_sizes = {"i": cg, "o": og * groups * batch_groups, "0": kernel[0], "1": kernel[1]}
    window = Window.make(kernel, [int(v) for v in rng.integers(1, 3, 2)],
                         [tuple(int(v) for v in rng.integers(-1, 3, 2)) for _ in range(2)],
                         [int(v) for v in rng.integers(1, 3, 2)],
                         [int(v) for v in rng.integers(1, 3, 2)],
                         [bool(v) for v in rng.integers(0, 2, 2)])
    lhs = rng.normal(size=place(lhs_sizes, lhs_labels)).astype(np.float32)
    rhs = rng.normal(size=place(rhs_sizes, rhs_labels)).astype(np.float32)
    got, want = conv(lhs, rhs, labels, window, groups, batch_groups)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_convolution_integer_and_bf16():
    lhs = RNG.integers(-3, 4, (2, 3, 5)).astype(np.int32)
    rhs = RNG.integers(-3, 4, (4, 3, 2)).astype(np.int32)
    window = Window.make((2,), (1,), ((-1, 2),), (2,))
    got, want = conv(lhs, rhs, "bf0_oi0->bf0", window)
    np.testing.assert_array_equal(got, want)
    lhs = lhs.astype(ml_dtypes.bfloat16)
    rhs = rhs.astype(ml_dtypes.bfloat16)
    got, want = conv(lhs, rhs, "bf0_oi0->bf0", window)
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


# ---------------------------------------------------------------------------------------------
# convolution plan: blocks of output columns, taps that skip padding and dilation holes


@pytest.mark.parametrize("seed", range(24))
def test_convolution_plan_in_tiny_blocks_is_exact(seed, monkeypatch):
    """Integer-valued floats (every sum exact in any order): with blocks of a few columns
    (batch ranges and rows of the first output dim), strides, padding of both signs, base and
    window dilation, the plan equals the §12.2 element formula exactly."""
    import xla_spmd.backends.reference.contraction as contraction

    monkeypatch.setattr(contraction, "BLOCK_BYTES", int(np.random.default_rng(seed)
                                                            .choice([8, 64, 512])))
    monkeypatch.setattr(contraction, "MIN_BLOCK_COLUMNS", 1)
    rng = np.random.default_rng(100 + seed)
    labels = LABELS[seed % len(LABELS)]
    lhs_labels, rest = labels.split("_")
    rhs_labels = rest.split("->")[0]
    mode = seed % 3
    groups = 2 if mode == 1 else 1
    batch_groups = 2 if mode == 2 else 1
    kernel = [int(v) for v in rng.integers(1, 4, 2)]
    spatial = [int(v) for v in rng.integers(1, 8, 2)]
    cg, og = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    n = batch_groups * int(rng.integers(1, 4))
    lhs_sizes = {"b": n, "f": cg * groups, "0": spatial[0], "1": spatial[1]}
    rhs_sizes = {"i": cg, "o": og * groups * batch_groups, "0": kernel[0], "1": kernel[1]}
    window = Window.make(kernel, [int(v) for v in rng.integers(1, 4, 2)],
                         [tuple(int(v) for v in rng.integers(-1, 4, 2)) for _ in range(2)],
                         [int(v) for v in rng.integers(1, 4, 2)],
                         [int(v) for v in rng.integers(1, 3, 2)],
                         [bool(v) for v in rng.integers(0, 2, 2)])
    lhs = rng.integers(-4, 5, place(lhs_sizes, lhs_labels)).astype(np.float32)
    rhs = rng.integers(-4, 5, place(rhs_sizes, rhs_labels)).astype(np.float32)
    try:
        got, want = conv(lhs, rhs, labels, window, groups, batch_groups)
    except Exception as error:  # noqa: BLE001 - a window larger than the padded input
        pytest.skip(f"no valid output: {error}")
    np.testing.assert_array_equal(got, want)


def test_convolution_plan_runs_of_a_dilated_padded_dim():
    """Tap k of a dim reads the output positions whose input element exists: with
    lhs_dilation 3, stride 2 and padding 2, input element q sits at padded position 2 + 3q."""
    from xla_spmd.backends.reference.contraction import _runs

    (w,) = Window.make((3,), (2,), ((2, 2),), (3,)).dims
    size, out = 4, 7  # padded: 2 + 10 + 2 = 14 positions, (14 - 3) // 2 + 1 outputs
    runs = _runs(size, out, w, dense=False)
    for k, run in enumerate(runs):
        hits = [(p, (p * 2 + k - 2) // 3) for p in range(out)
                if (p * 2 + k - 2) % 3 == 0 and 0 <= (p * 2 + k - 2) // 3 < size]
        if run is None:
            assert hits == []
            continue
        got = [(run.first + j * run.step, run.source + j * run.source_step)
               for j in range(run.count)]
        assert got == hits


def test_convolution_plan_with_an_infinite_kernel_reads_padding_too():
    """inf x 0 is NaN: a kernel holding an infinity makes NaN where a tap reads padding, so
    such a kernel is run over the padded input in full, as the element formula says."""
    lhs = np.array([[[1, 2, 3]]], np.float32)
    rhs = np.array([[[np.inf, 1]]], np.float32)
    got, _ = conv(lhs, rhs, "bf0_oi0->bf0", Window.make((2,), (1,), ((1, 1),)))
    # taps (inf, 1) over [0, 1, 2, 3, 0]: inf*0 + 1 = NaN, then inf, inf, inf + 0 = inf
    np.testing.assert_array_equal(got, [[[np.nan, np.inf, np.inf, np.inf]]])
