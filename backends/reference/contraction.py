"""Reference evaluation rules: dot and convolution (op_semantics §12.1, §12.2).

Invariants: operands are converted to the result type and accumulated in it (f16, bf16 and f8
results compute in f32 and are rounded once at the end; integers wrap in the result type).
Convolution follows the element formula of §12.2 exactly: for output ``(b, o, p...)``

    out = Σ_{k, c} lhs[(o // Ob)·Nb + b, (o // Og)·Cg + c, q] · rhs[k', c, o]

with ``u = p·stride + k·rhs_dilation - pad_lo``, ``q = u / lhs_dilation`` when that divides and
lies in the input, ``k' = K-1-k`` under window reversal. It is computed by moving operands to
(batch, feature, spatial...) order, materialising the padded, base-dilated input (holes and
padding are zeros), and one batched matmul per block of im2col patches (each output element
one dot product over channels and kernel taps).

Example: a 1-d valid cross-correlation of ``[1, 2, 3]`` with kernel ``[1, 10]`` gives
``[21, 32]``.
"""

from __future__ import annotations

import itertools

import numpy as np

from xla_spmd.backends.reference.evaluator import EVALUATE, Context
from xla_spmd.backends.reference.numeric import compute_dtype
from xla_spmd.errors import EvaluationError
from xla_spmd.ir import Instruction


def _work_dtype(result_dtype: np.dtype) -> np.dtype:
    if np.dtype(result_dtype) == np.bool_:
        return np.dtype(np.int64)
    return compute_dtype(result_dtype)


def _finish(value: np.ndarray, result_dtype: np.dtype) -> np.ndarray:
    if np.dtype(result_dtype) == np.bool_:
        return value != 0
    return value.astype(result_dtype)


def _size(array: np.ndarray, dims) -> int:
    return int(np.prod([array.shape[d] for d in dims], dtype=np.int64))


def dot_dimensions(attrs, lhs_rank: int, rhs_rank: int) -> tuple[list[int], ...]:
    """A dot's operand dims as (lhs batch, free, contracting, rhs batch, contracting, free):
    the order in which both operands are laid out for one batched matmul."""
    lb, lc = list(attrs.lhs_batch_dims), list(attrs.lhs_contracting_dims)
    rb, rc = list(attrs.rhs_batch_dims), list(attrs.rhs_contracting_dims)
    lf = [d for d in range(lhs_rank) if d not in lb + lc]
    rf = [d for d in range(rhs_rank) if d not in rb + rc]
    return lb, lf, lc, rb, rc, rf


@EVALUATE.register("dot")
def dot_rule(inst: Instruction, operands: list, ctx: Context):
    lhs, rhs = operands
    attrs = inst.attrs
    result_dtype = inst.shape.dtype.array_dtype
    work = _work_dtype(result_dtype)
    lb, lf, lc, rb, rc, rf = dot_dimensions(attrs, lhs.ndim, rhs.ndim)
    batch = [lhs.shape[d] for d in lb]
    # (batch, free, contracting) @ (batch, contracting, free): one batched matmul.
    left = np.transpose(lhs, lb + lf + lc).astype(work).reshape(
        [_size(lhs, lb), _size(lhs, lf), _size(lhs, lc)])
    right = np.transpose(rhs, rb + rc + rf).astype(work).reshape(
        [_size(rhs, rb), _size(rhs, rc), _size(rhs, rf)])
    with np.errstate(all="ignore"):
        product = np.matmul(left, right)
    shape = batch + [lhs.shape[d] for d in lf] + [rhs.shape[d] for d in rf]
    return _finish(product.reshape(shape), result_dtype)


def _dilate_and_pad(x: np.ndarray, window, xp) -> np.ndarray:
    """Base-dilate and pad (negative padding crops) the spatial dims of (N, C, spatial...)."""
    for s, w in enumerate(window.dims):
        axis = s + 2
        n = x.shape[axis]
        if w.lhs_dilation > 1 and n > 0:
            shape = list(x.shape)
            shape[axis] = (n - 1) * w.lhs_dilation + 1
            dilated = xp.zeros(shape, dtype=x.dtype)
            index = [slice(None)] * x.ndim
            index[axis] = slice(None, None, w.lhs_dilation)
            dilated[tuple(index)] = x
            x = dilated
        widths = [(0, 0)] * x.ndim
        widths[axis] = (max(w.padding_low, 0), max(w.padding_high, 0))
        x = xp.pad(x, widths)
        index = [slice(None)] * x.ndim
        index[axis] = slice(max(-w.padding_low, 0), x.shape[axis] - max(-w.padding_high, 0))
        x = x[tuple(index)]
    return x


@EVALUATE.register("convolution")
def convolution_rule(inst: Instruction, operands: list, ctx: Context):
    lhs, rhs = operands
    work = _work_dtype(inst.shape.dtype.array_dtype)
    return _finish(convolution(inst, lhs, rhs, work), inst.shape.dtype.array_dtype)


PATCH_BYTES = 64 << 20
"""The most memory one block of convolution patches (im2col columns) takes."""


def convolution(inst: Instruction, lhs, rhs, work: np.dtype, xp=np):
    """``convolution`` in dtype ``work``, as one GEMM per group over im2col patches: each
    output position's input window (channels major, kernel taps minor) is one column, so
    every output element is one dot product of length channels x taps, however few the
    channels (an image's 3 colours against a 7x7 kernel is one GEMM of depth 147, not 49 of
    depth 3). Patches are copied a kernel tap at a time, or a window at a time where there
    are fewer output positions than taps (a weight gradient), in blocks of batch elements
    and output rows of at most `PATCH_BYTES`. ``xp`` is the operands' array module (numpy
    here, CuPy on the GPU backend)."""
    attrs = inst.attrs
    dn, window = attrs.dim_labels, attrs.window
    groups, batch_groups = attrs.feature_group_count, attrs.batch_group_count
    if groups > 1 and batch_groups > 1:
        raise EvaluationError(f"convolution {inst.name}: feature_group_count={groups} and "
                              f"batch_group_count={batch_groups} cannot both exceed 1")
    x = xp.transpose(lhs, (dn.input_batch, dn.input_feature) + dn.input_spatial).astype(work)
    kernel = xp.transpose(rhs, (dn.kernel_output_feature, dn.kernel_input_feature)
                          + dn.kernel_spatial).astype(work)
    flips = tuple(s + 2 for s, w in enumerate(window.dims) if w.reversal)
    if flips:
        kernel = xp.flip(kernel, axis=flips)
    out_spatial = tuple(inst.shape.dims[d] for d in dn.output_spatial)
    n, c = x.shape[:2]
    o = kernel.shape[0]
    g = max(groups, batch_groups)
    padded = _dilate_and_pad(x, window, xp)
    spatial = padded.shape[2:]
    # Groups: lhs (g, batch_g, channels_g, ...) against kernel (g, out_g, channels_g, taps).
    batch_g, channels_g, out_g = n // batch_groups, c // groups, o // g
    if batch_groups > 1:
        padded = padded.reshape((g, batch_g, c) + spatial)
    else:
        padded = padded.reshape((n, g, channels_g) + spatial).swapaxes(0, 1)
    taps = list(itertools.product(*(range(w.size) for w in window.dims)))
    depth = channels_g * len(taps)
    weights = xp.ascontiguousarray(kernel).reshape((g, out_g, depth))
    total = xp.empty((g, out_g, batch_g) + out_spatial, dtype=work)
    for (b0, b1), (r0, r1) in _patch_blocks(batch_g, out_spatial, g * depth,
                                            np.dtype(work).itemsize):
        block = (r1 - r0,) + out_spatial[1:] if out_spatial else ()
        patches = xp.empty((g, channels_g, len(taps), b1 - b0) + block, dtype=work)
        positions = int(np.prod(block, dtype=np.int64))
        if positions < len(taps):  # few outputs, large windows: copy a window at a time
            for where in itertools.product(*(range(n) for n in block)):
                index = [slice(None), slice(b0, b1), slice(None)]
                for axis, (w, q) in enumerate(zip(window.dims, where)):
                    start = (q + (r0 if axis == 0 else 0)) * w.stride
                    index.append(slice(start, start + (w.size - 1) * w.rhs_dilation + 1,
                                       w.rhs_dilation))
                view = xp.moveaxis(padded[tuple(index)], 1, -1)  # (g, channels, taps, batch)
                patches[(Ellipsis,) + where] = view.reshape(patches.shape[:4])
        for t, offsets in enumerate(taps if positions >= len(taps) else ()):
            index = [slice(None), slice(b0, b1), slice(None)]
            for axis, (w, k, size) in enumerate(zip(window.dims, offsets, out_spatial)):
                lo, hi = (r0, r1) if axis == 0 else (0, size)
                start = k * w.rhs_dilation + lo * w.stride
                index.append(slice(start, start + (hi - lo - 1) * w.stride + 1, w.stride)
                             if hi > lo else slice(0, 0))
            patches[:, :, t] = padded[tuple(index)].swapaxes(1, 2)
        columns = patches.reshape((g, depth, -1))
        with np.errstate(all="ignore"):
            product = xp.matmul(weights, columns)
        where = (slice(None), slice(None), slice(b0, b1)) + (
            (slice(r0, r1),) if out_spatial else ())
        total[where] = product.reshape((g, out_g, b1 - b0) + block)
    # (g, out_g, batch_g, spatial) -> (batch, feature, spatial) -> the output's layout.
    result = total.reshape((o, batch_g) + out_spatial).swapaxes(0, 1)
    order = (dn.output_batch, dn.output_feature) + dn.output_spatial
    return xp.transpose(result, tuple(int(d) for d in np.argsort(order)))


def _patch_blocks(batch: int, out_spatial: tuple[int, ...], depth: int, itemsize: int):
    """(batch range, first output spatial dim's range) of each block of patches: whole batch
    elements while they fit `PATCH_BYTES`, else one element in runs of output rows.

    >>> list(_patch_blocks(3, (4, 4), 1 << 21, 4))
    [((0, 1), (0, 2)), ((0, 1), (2, 4)), ((1, 2), (0, 2)), ((1, 2), (2, 4)), ((2, 3), (0, 2)), ((2, 3), (2, 4))]
    """  # noqa: E501
    rows = out_spatial[0] if out_spatial else 1
    row_bytes = max(1, depth * itemsize * int(np.prod(out_spatial[1:], dtype=np.int64)))
    element = row_bytes * rows
    if element <= PATCH_BYTES or rows <= 1:
        step = max(1, PATCH_BYTES // max(element, 1))
        for b0 in range(0, batch, step):
            yield (b0, min(batch, b0 + step)), (0, rows)
        return
    run = max(1, PATCH_BYTES // row_bytes)
    for b0 in range(batch):
        for r0 in range(0, rows, run):
            yield (b0, b0 + 1), (r0, min(rows, r0 + run))
