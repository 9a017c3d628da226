"""Convolution on the CPU backend: one GEMM per kernel tap through BLAS, accumulated in tap
order, every GEMM the reference evaluator's own (so results are bit-identical to it on the
same machine, the contract of the backend's dot: ``kernels.dot_kernel``).

The reference (``backends/reference/contraction.py``) computes a convolution as an im2col one
tap at a time: for each kernel position in row-major order it takes the strided window of the
padded, base-dilated input as a ``(groups, channels_g, batch_g * positions)`` matrix,
multiplies the kernel's ``(groups, out_g, channels_g)`` slice of that tap into it with
``numpy.matmul`` and adds the product into a running total that starts at zero. BLAS sums each
product in its own order, and numpy picks between BLAS and its own loop from the operands'
strides (a non-contiguous matrix operand of a matrix-vector product is not copied: numpy's
loop sums it), so the only way to agree bit for bit is to make the same calls on operands of
the same layout, in the same tap order. A single im2col GEMM over all taps (contracting
``taps × channels`` at once) or a direct generated kernel sums in another order and differs in
the last bits, so neither is used; ``scripts/bench_conv.py`` measures them against this kernel.

What this kernel saves over the reference rule is the per-call planning and copies: the
dimension permutations, the flips, the tap slices and the group reshapes are decided once;
padding and base dilation are one zero-filled buffer written once (the reference pads one
dimension at a time, each a copy); a tap's matrix is one copy into a reused buffer where the
reference's is C-ordered (two copies there: a reshape, then the group transpose; the first
call checks the layout, which depends only on the shapes), else the reference's own steps;
each tap's product goes into one scratch buffer; the result is the total's transposed view
(no final copy) when it is already in the result type. Negative padding (a crop, which leaves
the reference's padded input a view whose strides BLAS may see) takes the reference's own
padding steps.

Example: a 1-d valid cross-correlation of ``[1, 2, 3]`` with kernel ``[1, 10]`` gives
``[21, 32]`` (taps ``1·[1, 2] + 10·[2, 3]``).
"""

from __future__ import annotations

import itertools

import numpy as np

from xla_spmd.backends.reference.contraction import _dilate_and_pad, _finish, _work_dtype
from xla_spmd.errors import EvaluationError
from xla_spmd.ir import Instruction

_asarray = np.asarray


def _padding_plan(window, spatial: tuple[int, ...]):
    """The padded spatial shape and, per spatial dim, where the input's elements land in it:
    ``(destination slice, source slice)``; None where some padding is negative (a crop)."""
    padded, destination, source = [], [], []
    for w, n in zip(window.dims, spatial):
        if w.padding_low < 0 or w.padding_high < 0:
            return None
        dilated = (n - 1) * w.lhs_dilation + 1 if n > 0 else 0
        padded.append(w.padding_low + dilated + w.padding_high)
        destination.append(slice(w.padding_low, w.padding_low + dilated, w.lhs_dilation))
        source.append(slice(None))
    return tuple(padded), tuple(destination), tuple(source)


def conv_kernel(inst: Instruction, reads: tuple):
    """``convolution`` bound to its instruction: ``launch(values, ctx) -> value`` (see
    ``kernels.Launch``), the reference's GEMMs on operands of the reference's layouts."""
    attrs = inst.attrs
    dn, window = attrs.dim_labels, attrs.window
    groups, batch_groups = attrs.feature_group_count, attrs.batch_group_count
    if groups > 1 and batch_groups > 1:
        raise EvaluationError(f"convolution {inst.name}: feature_group_count={groups} and "
                              f"batch_group_count={batch_groups} cannot both exceed 1")
    lhs_shape, rhs_shape = (o.shape.dims for o in inst.operands)
    result_dtype = inst.shape.dtype.array_dtype
    work = _work_dtype(result_dtype)
    in_order = (dn.input_batch, dn.input_feature, *dn.input_spatial)
    kernel_order = (dn.kernel_output_feature, dn.kernel_input_feature, *dn.kernel_spatial)
    flips = tuple(s + 2 for s, w in enumerate(window.dims) if w.reversal)
    out_spatial = tuple(inst.shape.dims[d] for d in dn.output_spatial)
    n, c = lhs_shape[dn.input_batch], lhs_shape[dn.input_feature]
    o = rhs_shape[dn.kernel_output_feature]
    kernel_in = rhs_shape[dn.kernel_input_feature]
    g = max(groups, batch_groups)
    m = int(np.prod(out_spatial, dtype=np.int64))
    batch_g, channels_g, out_g = n // batch_groups, c // groups, o // g
    kernel_shape = (g, out_g, kernel_in, *(rhs_shape[d] for d in dn.kernel_spatial))
    spatial = tuple(lhs_shape[d] for d in dn.input_spatial)
    plan = _padding_plan(window, spatial)
    taps = []
    for offsets in itertools.product(*(range(w.size) for w in window.dims)):
        index = [slice(None), slice(None)]
        for w, k, size in zip(window.dims, offsets, out_spatial):
            start = k * w.rhs_dilation
            index.append(slice(start, start + (size - 1) * w.stride + 1, w.stride)
                         if size else slice(0, 0))
        taps.append(((Ellipsis, *offsets), tuple(index)))
    order = (dn.output_batch, dn.output_feature, *dn.output_spatial)
    out_order = tuple(int(d) for d in np.argsort(order))
    total_shape = (g, out_g, batch_g * m)
    result_shape = (o, batch_g, *out_spatial)
    grouped_batch = (g, batch_g, c, m)
    grouped_feature = (n, g, channels_g, m)
    tap_shape = (g, channels_g, batch_g * m)
    a, b = reads
    if plan is not None:
        padded_shape = (n, c, *plan[0])
        interior = (slice(None), slice(None), *plan[1])
        pads = any(w.padding_low or w.padding_high or w.lhs_dilation > 1
                   for w in window.dims)
    empty = inst.shape.num_elements == 0 or not taps or channels_g == 0 or n == 0
    same_dtype = work == result_dtype
    # A tap's window (n, c, *out_spatial) split into groups and moved to the reference's
    # (g, channels, batch, *out_spatial) order: a view, copied once into a buffer.
    if batch_groups > 1:
        split_shape = (g, batch_g, c, *out_spatial)
    else:
        split_shape = (n, g, channels_g, *out_spatial)
    gather_order = (0, 2, 1, *range(3, 3 + len(out_spatial))) if batch_groups > 1 else (
        1, 2, 0, *range(3, 3 + len(out_spatial)))
    gathered_shape = tuple(split_shape[d] for d in gather_order)
    direct: list[bool | None] = [None]  # the reference's taps C-ordered (first call decides)

    def _reference_cols(window_view: np.ndarray) -> np.ndarray:
        """A tap's matrix as the reference makes it (a view or a copy, its strides)."""
        cols = window_view.reshape(n, c, m)
        if batch_groups > 1:
            cols = cols.reshape(grouped_batch).transpose(0, 2, 1, 3)
        else:
            cols = cols.reshape(grouped_feature).transpose(1, 2, 0, 3)
        return cols.reshape(tap_shape)

    def launch_convolution(values, ctx):
        lhs, rhs = _asarray(values[a]), _asarray(values[b])
        if empty:
            return _finish(np.zeros(inst.shape.dims, work), result_dtype)
        x = lhs.transpose(in_order)
        if plan is None:
            padded = _dilate_and_pad(x.astype(work), window, np)
        elif pads:
            padded = np.zeros(padded_shape, work)
            padded[interior] = x
        else:
            padded = x.astype(work)  # a C-ordered copy, as the reference's padding makes
        kernel = rhs.transpose(kernel_order).astype(work)
        if flips:
            kernel = np.flip(kernel, axis=flips)
        kernel = kernel.reshape(kernel_shape)
        total = np.zeros(total_shape, work)
        scratch = buffer = None
        for tap, index in taps:
            window_view = padded[index]
            if direct[0] is None:  # the first call: how the reference lays its taps out
                direct[0] = _reference_cols(window_view).flags.c_contiguous
            if direct[0]:
                # The reference's copies of the taps are C-ordered: one copy to that layout.
                if buffer is None:
                    buffer = np.empty(gathered_shape, work)
                np.copyto(buffer, window_view.reshape(split_shape).transpose(gather_order))
                cols = buffer.reshape(tap_shape)
            else:
                cols = _reference_cols(window_view)
            if scratch is None:
                product = scratch = np.matmul(kernel[tap], cols)
            else:
                product = np.matmul(kernel[tap], cols, out=scratch)
            total += product
        result = total.reshape(result_shape).swapaxes(0, 1).transpose(out_order)
        return result if same_dtype else _finish(result, result_dtype)
    return launch_convolution
