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
import math
from dataclasses import dataclass

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
    time), accumulated in tap order; ``xp`` is the operands' array module: numpy runs the
    blocked plan (`ConvolutionPlan`, which the CPU backend runs too), CuPy (the GPU backend)
    the whole padded input one tap at a time (`dense_convolution`)."""
    if xp is np:
        return ConvolutionPlan(inst, work).run(lhs, rhs)
    return dense_convolution(inst, lhs, rhs, work, xp)


def _group_counts(inst: Instruction) -> tuple[int, int]:
    """A convolution's ``(feature_group_count, batch_group_count)``; at most one exceeds 1."""
    groups, batch_groups = inst.attrs.feature_group_count, inst.attrs.batch_group_count
    if groups > 1 and batch_groups > 1:
        raise EvaluationError(f"convolution {inst.name}: feature_group_count={groups} and "
                              f"batch_group_count={batch_groups} cannot both exceed 1")
    return groups, batch_groups


def dense_convolution(inst: Instruction, lhs, rhs, work: np.dtype, xp=np):
    """``convolution`` in dtype ``work`` over the materialised padded, base-dilated input: for
    each tap one GEMM over every output position, added into the total."""
    attrs = inst.attrs
    dn, window = attrs.dim_labels, attrs.window
    groups, batch_groups = _group_counts(inst)
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


BLOCK_BYTES = 1 << 18
"""About the bytes of a `ConvolutionPlan` block's accumulator: small enough to stay in a
core's cache, with the tap's matrix and product, while every tap adds into it."""
MIN_BLOCK_COLUMNS = 256  # a block's columns at least (a narrow GEMM wastes BLAS's kernels)
BLOCK_DEPTH = 16
"""The most channels per group for which a `ConvolutionPlan` runs in blocks: deeper GEMMs
are bound by their arithmetic, not by adding their products into the total, and run best
over every column at once."""


@dataclass(frozen=True)
class _Run:
    """Where one kernel offset of one spatial dim reads and writes: output positions
    ``p = first + j * step`` take input element ``q = source + j * source_step`` (j < count)."""

    first: int
    step: int
    count: int
    source: int
    source_step: int

    def within(self, start: int, stop: int) -> tuple[slice, slice] | None:
        """(output slice relative to `start`, input slice) of the positions in [start, stop)."""
        low = max(0, -(-(start - self.first) // self.step))
        high = min(self.count, -(-(stop - self.first) // self.step))
        if high <= low:
            return None
        first = self.first + low * self.step - start
        source = self.source + low * self.source_step
        count = high - low
        return (slice(first, first + (count - 1) * self.step + 1, self.step),
                slice(source, source + (count - 1) * self.source_step + 1, self.source_step))


def _runs(size: int, out: int, w, dense: bool) -> list[_Run | None]:
    """Per kernel offset k of a spatial dim of input `size` and output `out`: the output
    positions whose window tap k reads an input element (not padding, not a hole of base
    dilation), as a `_Run`; None where there are none. `dense` (the input already padded and
    dilated): every position, reading ``p * stride + k * rhs_dilation``."""
    runs: list[_Run | None] = []
    stride, dilation = w.stride, (1 if dense else w.lhs_dilation)
    period = dilation // math.gcd(stride, dilation)  # output positions between two hits
    for k in range(w.size):
        offset = k * w.rhs_dilation - (0 if dense else w.padding_low)  # u = p*stride + offset
        # u must be a multiple of the dilation, with 0 <= u / dilation < size
        lowest = max(0, -(offset // stride))  # ceil(-offset / stride)
        highest = min(out - 1, ((size - 1) * dilation - offset) // stride) if size else -1
        first = next((p for p in range(lowest, lowest + period)
                      if (p * stride + offset) % dilation == 0), None)
        if first is None or first > highest:
            runs.append(None)
            continue
        count = (highest - first) // period + 1
        runs.append(_Run(first, period, count, (first * stride + offset) // dilation,
                         period * stride // dilation))
    return runs


class ConvolutionPlan:
    """A convolution's evaluation, planned once from its instruction (the reference rule and
    the CPU backend's kernel run the same plan, so their values agree bit for bit).

    The sum of §12.2 is taken one kernel tap at a time, in row-major tap order, each tap one
    GEMM ``(groups, out_g, channels_g) @ (groups, channels_g, columns)`` of the tap's kernel
    slice with its im2col matrix, added into a total that starts at zero. Two things make it
    fast without changing a value:

    * **Blocks.** The output columns (batch, then spatial positions) are cut into blocks of
      about `BLOCK_BYTES` of accumulator (whole batch elements, or rows of the first output
      spatial dim), and every tap is added into one block before the next block: the
      accumulator stays in cache. An element's sum is the same sequence of the same
      products: BLAS computes each element of a product from its row and column alone.
    * **Holes.** A tap reads only the output positions whose input element exists: positions
      that read padding or a hole of base dilation (lhs_dilation) contribute products of
      zeros, which leave a total unchanged (a total that starts at +0 is never -0), and are
      skipped; each tap's positions and input elements are strided runs (`_Run`), so no
      padded, dilated input is made. Where the kernel holds an infinity or NaN (whose product
      with zero is NaN), the plan reads the padded input in full instead.

    A block whose tap has a single column is computed as two (a zero column beside it): a
    one-column product is a matrix-vector product, which BLAS sums in another order.

    Example: a 1-d valid cross-correlation of ``[1, 2, 3]`` with kernel ``[1, 10]`` gives
    ``[21, 32]`` (taps ``1·[1, 2] + 10·[2, 3]``).
    """

    def __init__(self, inst: Instruction, work: np.dtype):
        attrs = inst.attrs
        dn, window = attrs.dim_labels, attrs.window
        groups, batch_groups = _group_counts(inst)
        self.inst, self.work, self.window = inst, np.dtype(work), window
        lhs_shape, rhs_shape = (o.shape.dims for o in inst.operands)
        self.in_order = (dn.input_batch, dn.input_feature, *dn.input_spatial)
        self.kernel_order = (*dn.kernel_spatial, dn.kernel_output_feature,
                             dn.kernel_input_feature)
        rank = len(dn.input_spatial)
        self.flips = tuple(s for s, w in enumerate(window.dims) if w.reversal)
        self.out_spatial = tuple(inst.shape.dims[d] for d in dn.output_spatial)
        self.spatial = tuple(lhs_shape[d] for d in dn.input_spatial)
        n, c = lhs_shape[dn.input_batch], lhs_shape[dn.input_feature]
        o = rhs_shape[dn.kernel_output_feature]
        self.g = g = max(groups, batch_groups)
        self.batch_groups = batch_groups
        self.batch_g, self.channels_g, self.out_g = n // batch_groups, c // groups, o // g
        self.n, self.c, self.o = n, c, o
        self.taps = list(itertools.product(*(range(w.size) for w in window.dims)))
        order = (dn.output_batch, dn.output_feature, *dn.output_spatial)
        self.out_order = tuple(int(d) for d in np.argsort(order))
        self.empty = (inst.shape.num_elements == 0 or not self.taps or self.channels_g == 0
                      or n == 0)
        self.runs = {dense: [_runs(size, out, w, dense) for size, out, w in zip(
            self._sizes(dense), self.out_spatial, window.dims)] for dense in (False, True)}
        # Blocks: ranges of the batch (per group) and of the first output spatial dim.
        item = self.work.itemsize
        m = int(np.prod(self.out_spatial, dtype=np.int64))
        per_batch = g * self.out_g * m * item
        budget = max(BLOCK_BYTES, MIN_BLOCK_COLUMNS * g * self.out_g * item)
        if (len(self.taps) <= 1 or self.channels_g > BLOCK_DEPTH
                or per_batch * self.batch_g <= budget):
            self.blocks = [(0, self.batch_g, 0, self.out_spatial[0] if rank else 1)]
        elif per_batch <= budget or not rank:
            nb = max(1, budget // per_batch)
            self.blocks = [(b, min(b + nb, self.batch_g), 0,
                            self.out_spatial[0] if rank else 1)
                           for b in range(0, self.batch_g, nb)]
        else:
            rows = max(1, budget // (per_batch // max(1, self.out_spatial[0])))
            self.blocks = [(b, b + 1, r, min(r + rows, self.out_spatial[0]))
                           for b in range(self.batch_g)
                           for r in range(0, self.out_spatial[0], rows)]

    def _sizes(self, dense: bool) -> tuple[int, ...]:
        """The spatial sizes the taps read: the input's, or (dense) the padded input's."""
        if not dense:
            return self.spatial
        return tuple(max(w.padding_low, 0) + ((n - 1) * w.lhs_dilation + 1 if n else 0)
                     + max(w.padding_high, 0) - max(-w.padding_low, 0)
                     - max(-w.padding_high, 0)
                     for w, n in zip(self.window.dims, self.spatial))

    def run(self, lhs, rhs) -> np.ndarray:
        """The convolution of `lhs` and `rhs` in the plan's work dtype, in the result's
        dimension order (a transposed view)."""
        work, g, batch_g = self.work, self.g, self.batch_g
        if self.empty:
            shape = (batch_g, self.o, *self.out_spatial)
            return np.zeros(shape, work).transpose(self.out_order)
        x = np.asarray(lhs).transpose(self.in_order).astype(work, copy=False)
        kernel = np.asarray(rhs).transpose(self.kernel_order).astype(work)
        if self.flips:
            kernel = np.flip(kernel, axis=self.flips)
        # (*taps, g, out_g, channels_g): each tap's matrix contiguous
        kernel = np.ascontiguousarray(kernel).reshape(
            (*kernel.shape[:-2], g, self.out_g, self.channels_g))
        dense = kernel.dtype.kind in "fc" and not np.isfinite(kernel).all()
        if dense:
            x = _dilate_and_pad(x, self.window, np)
        runs = self.runs[dense]
        if self.batch_groups > 1:  # (g, batch_g, c, spatial...)
            x = x.reshape((g, batch_g, self.c, *x.shape[2:]))
        else:  # (n, g, channels_g, spatial...)
            x = x.reshape((self.n, g, self.channels_g, *x.shape[2:]))
        total = np.zeros((g, self.out_g, batch_g, *self.out_spatial), work)
        with np.errstate(all="ignore"):
            for b0, b1, r0, r1 in self.blocks:
                self._block(x, kernel, runs, total, b0, b1, r0, r1)
        result = total.reshape((self.o, batch_g, *self.out_spatial)).swapaxes(0, 1)
        return result.transpose(self.out_order)

    def _block(self, x, kernel, runs, total, b0, b1, r0, r1) -> None:
        """Every tap added into the block of batch [b0, b1) and first-dim rows [r0, r1)."""
        g, nb = self.g, b1 - b0
        rank = len(self.out_spatial)
        block_spatial = ((r1 - r0, *self.out_spatial[1:]) if rank else ())
        acc = np.zeros((g, self.out_g, nb, *block_spatial), self.work)
        most = max(2, nb * math.prod(block_spatial))  # a tap's columns at most
        matrices = np.empty(g * self.channels_g * most, self.work)  # reused by every tap
        products = np.empty(g * self.out_g * most, self.work)
        for tap in self.taps:
            out_index, in_index = [], []
            for d, k in enumerate(tap):
                run = runs[d][k]
                start, stop = (r0, r1) if d == 0 else (0, self.out_spatial[d])
                where = run.within(start, stop) if run is not None else None
                if where is None:
                    break
                out_index.append(where[0])
                in_index.append(where[1])
            else:
                if self.batch_groups > 1:
                    window = x[(slice(None), slice(b0, b1), slice(None), *in_index)]
                    cols = window.transpose(0, 2, 1, *range(3, window.ndim))
                else:
                    window = x[(slice(b0, b1), slice(None), slice(None), *in_index)]
                    cols = window.transpose(1, 2, 0, *range(3, window.ndim))
                columns = nb * math.prod(cols.shape[3:])
                width = max(columns, 2)  # two columns: a product BLAS computes as the others
                matrix = matrices[:g * self.channels_g * width].reshape(
                    g, self.channels_g, width)
                if columns == 1:
                    matrix[..., 1] = 0
                    matrix[..., 0] = cols.reshape(g, self.channels_g)
                else:  # the tap's im2col matrix: one copy, C-ordered
                    np.copyto(matrix.reshape(cols.shape), cols)
                product = np.matmul(kernel[tap], matrix, out=products[
                    :g * self.out_g * width].reshape(g, self.out_g, width))[..., :columns]
                target = acc[(slice(None), slice(None), slice(None), *out_index)]
                target += product.reshape(target.shape)
        total[(slice(None), slice(None), slice(b0, b1), slice(r0, r1))[:3 + (rank > 0)]] = acc
