"""Reference evaluation rules: dot and convolution (op_semantics §12.1, §12.2).

Invariants: operands are converted to the result type and accumulated in it (f16, bf16 and f8
results compute in f32 and are rounded once at the end; integers wrap in the result type).
Convolution follows the element formula of §12.2 exactly: for output ``(b, o, p...)``

    out = Σ_{k, c} lhs[(o // Ob)·Nb + b, (o // Og)·Cg + c, q] · rhs[k', c, o]

with ``u = p·stride + k·rhs_dilation - pad_lo``, ``q = u / lhs_dilation`` when that divides and
lies in the input, ``k' = K-1-k`` under window reversal. It is computed by moving operands to
(batch, feature, spatial...) order, materialising the padded, base-dilated input (holes and
padding are zeros), and accumulating one batched matmul per kernel position.

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


def convolution(inst: Instruction, lhs, rhs, work: np.dtype, xp=np):
    """``convolution`` in dtype ``work``, as one GEMM per kernel tap (im2col a tap at a
    time), accumulated in tap order; ``xp`` is the operands' array module (numpy here, CuPy on
    the GPU backend)."""
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
    m = int(np.prod(out_spatial, dtype=np.int64))
    padded = _dilate_and_pad(x, window, xp)
    # Groups: lhs (g, batch_g, channels_g, ...) against kernel (g, out_g, channels_g).
    batch_g, channels_g, out_g = n // batch_groups, c // groups, o // g
    total = xp.zeros((g, out_g, batch_g * m), dtype=work)
    kernel = kernel.reshape((g, out_g) + kernel.shape[1:])
    with np.errstate(all="ignore"):
        for offsets in itertools.product(*(range(w.size) for w in window.dims)):
            index = [slice(None), slice(None)]
            for w, k, size in zip(window.dims, offsets, out_spatial):
                start = k * w.rhs_dilation
                index.append(slice(start, start + (size - 1) * w.stride + 1, w.stride)
                             if size else slice(0, 0))
            taps = padded[tuple(index)].reshape(n, c, m)
            if batch_groups > 1:
                taps = taps.reshape(g, batch_g, c, m).transpose(0, 2, 1, 3)
            else:
                taps = taps.reshape(n, g, channels_g, m).transpose(1, 2, 0, 3)
            taps = taps.reshape(g, channels_g, batch_g * m)
            total += xp.matmul(kernel[(Ellipsis,) + tuple(offsets)], taps)
    # (g, out_g, batch_g, spatial) -> (batch, feature, spatial) -> the output's layout.
    result = total.reshape((o, batch_g) + out_spatial).swapaxes(0, 1)
    order = (dn.output_batch, dn.output_feature) + dn.output_spatial
    return xp.transpose(result, tuple(int(d) for d in np.argsort(order)))
