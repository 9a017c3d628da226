"""Kernels of the ops the CPU backend runs outside generated fusions: data movement as numpy
views and copies, dot through BLAS into a preallocated output, and the collectives split
into a start (at the communicator) and a wait.

``KERNELS`` maps an opcode to ``kernel(inst, operands, ctx) -> value`` with the reference
evaluator's calling convention; ``kernel_for(inst)`` says whether one applies to a particular
instruction (dtypes and layouts included). An op with no kernel runs the reference rule and is
counted as a fallback by the executable.

Dot: operands are seen in ``(batch, free, contracting)`` and ``(batch, contracting, free)``
order, converted to the accumulation type (f32 for f16/bf16; integers in their own type, which
numpy's matmul wraps without BLAS) and multiplied by ``numpy.matmul`` into the output buffer:
the reference's computation, with the output preallocated and no copy of an operand already
of the accumulation type (``dot_operand``: a strided view that BLAS reads with the transpose
flag and leading dimension of the reference's copy).

Convolution (``convolution.py``) makes the reference's GEMM per kernel tap on operands of its
layouts; select-and-scatter (``select_scatter.py``) is a vectorised numpy kernel: both
bit-identical to the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from xla_spmd.backends.comparators import recognize_comparator
from xla_spmd.backends.cpu import blas
from xla_spmd.backends.cpu.convolution import conv_kernel
from xla_spmd.backends.cpu.select_scatter import (
    can_select_and_scatter,
    select_and_scatter_kernel,
)
from xla_spmd.backends.reference.collectives import (
    _communicator_op,
    _has_channel,
    _required_group,
)
from xla_spmd.backends.reference.contraction import dot_dimensions
from xla_spmd.backends.reference.evaluator import EVALUATE
from xla_spmd.backends.reference.indexing import _reducer_kind
from xla_spmd.backends.reference.numeric import compute_dtype
from xla_spmd.backends.reference.reduction import _fast_reduce, _key_values, _pack, binary_reducer
from xla_spmd.ir import ArrayShape, Instruction
from xla_spmd.ir.dtypes import PRED

# ---------------------------------------------------------------------------------------------
# Data movement


def _default_layout(shape) -> bool:
    return shape.layout is None or tuple(shape.layout) == tuple(range(shape.rank - 1, -1, -1))


KERNELS = {
    "reshape": lambda inst, ops, ctx: np.reshape(ops[0], inst.shape.dims),
    "bitcast": lambda inst, ops, ctx: np.reshape(ops[0], inst.shape.dims),
    "transpose": lambda inst, ops, ctx: np.transpose(ops[0], inst.attrs.dimensions),
    "slice": lambda inst, ops, ctx: ops[0][tuple(slice(s.start, s.limit, s.stride)
                                                 for s in inst.attrs.slice)],
    "concatenate": lambda inst, ops, ctx: np.concatenate(ops, axis=inst.attrs.dimensions[0]),
    "tuple": lambda inst, ops, ctx: tuple(ops),
    "get-tuple-element": lambda inst, ops, ctx: ops[0][inst.attrs.index],
    "partition-id": lambda inst, ops, ctx: np.array(ctx.partition_id, np.uint32),
    "replica-id": lambda inst, ops, ctx: np.array(ctx.replica_id, np.uint32),
    "copy": lambda inst, ops, ctx: ops[0] if isinstance(ops[0], tuple) else ops[0].copy(),
}


# ---------------------------------------------------------------------------------------------
# Dot


def _size(dims, shape) -> int:
    return int(np.prod([shape[d] for d in dims], dtype=np.int64))


Launch = Callable[[list, Any], object]  # (slot values, the run's Context) -> value
"""A kernel bound to its instruction: ``launch(values, ctx)`` reads its operands from
``values`` at the instruction's ``reads`` (see ``backends/cpu/launch.py``)."""

_asarray, _empty = np.asarray, np.empty


_NO_COPY_RESHAPE = np.lib.NumpyVersion(np.__version__) >= "2.1.0"
"""Whether ``numpy.reshape`` takes ``copy=False`` (else every operand is copied, as the
reference copies it)."""


def dense(x: np.ndarray) -> bool:
    """Whether ``x`` fills its memory with no gap and no overlap, its dims in some order (C,
    Fortran or any permutation of either): then ``x.astype(..., order="K")`` copies it into
    the very same strides (dims of size 1 aside, which no reshape or BLAS call looks at).

    >>> x = np.zeros((3, 4, 5), np.float32)
    >>> dense(x), dense(x.transpose(2, 0, 1)), dense(x[:, :2]), dense(x[:1])
    (True, True, False, True)
    >>> dense(np.broadcast_to(np.zeros(4), (3, 4)))
    False
    """
    step = x.itemsize
    for stride, size in sorted((s, n) for s, n in zip(x.strides, x.shape) if n > 1):
        if stride != step:
            return False
        step *= size
    return True


def dot_operand(x: np.ndarray, order, shape, work) -> np.ndarray:
    """A dot operand as the reference's ``np.transpose(x, order).astype(work)
    .reshape(shape)`` gives it to ``numpy.matmul``, with no copy where that can be a view.

    The reference's ``astype`` keeps the memory order of the transposed view (order K), so
    for a dense ``x`` already of type ``work`` its copy has the view's strides exactly: where
    the reshape keeps it a view, the view of ``x`` itself has the copy's strides, and numpy
    makes the same BLAS call on it (the same transpose flag and leading dimension; matmul
    reads an F-ordered matrix as a transposed one), so the same bits, without the copy.
    Otherwise (a conversion, a reshape that copies, a strided or broadcast ``x``) the
    reference's own expression runs.

    >>> x = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> v = dot_operand(x, (1, 0), (1, 3, 2), np.dtype(np.float32))
    >>> v.shape, np.shares_memory(v, x), bool((v[0] == x.T).all())
    ((1, 3, 2), True, True)
    """
    moved = np.transpose(x, order)
    if _NO_COPY_RESHAPE and x.dtype == work and dense(x):
        try:
            return np.reshape(moved, shape, copy=False)
        except ValueError:  # the reshape copies, the reference's too: into C order
            return moved.reshape(shape)
    return moved.astype(work).reshape(shape)


def dot_kernel(inst: Instruction, reads: tuple, count: int | None = None,
               transposed: Instruction | None = None, epilogue=None) -> Launch:
    """Dot through BLAS (``numpy.matmul`` into a preallocated output), its shapes, orders and
    dtypes decided once: the operands are seen in ``(batch, free, contracting)`` and
    ``(batch, contracting, free)`` order with the layouts of the reference's copies
    (``dot_operand``: no copy where the operand already is one), so BLAS makes the same
    call, with the same transpose flags, and sums in the same order (bit for bit). Runs
    under ``np.errstate`` (``run`` sets it).

    With a device `count` (stacked execution, ``stacked.py``) the operands carry a leading
    device axis and the dot is one matmul over ``(D, batch, m, k) @ (D, batch, k, n)``: the
    device axis stays outermost, so every device's matrices have the layout of its own
    call.

    A large batch of f32 matrices, when BLAS may use several threads, is split over a pool
    of threads instead, each matrix's gemm on one BLAS thread (``blas.batched_matmul``: one
    hand-off per dot rather than one per matrix); one large f32 matrix product by its
    columns where it has more columns than rows, else by its rows, where that gives the same
    bits (``blas.columns_splittable``, ``blas.columns_matmul``, ``blas.rows_splittable``,
    ``blas.rows_matmul``).

    With ``transposed`` (a transpose of ``inst`` that ``folded_transpose`` accepts) the
    kernel computes that transpose instead, as the product with the operands swapped:
    ``C^T = B^T A^T`` written straight into the transposed layout, no pass over ``C``.

    A large output (1 MiB or more) is a buffer of ``program.OUTPUTS``, handed out again only
    once nothing refers to it: the MLP's 1-device step made ~1500 page faults a step in its
    dots' fresh outputs (none after), its CPU time ~5% less.

    With ``epilogue`` (``epilogue.binder``'s ``bind``; only for a result computed in its
    own type) the kernel also runs that loop fusion on its output: on each part of a split
    product (rows, matrices, or columns where the fusion has a form ranged over them) by the
    thread that computed it, right after its product (the part still in its cache), else on
    the whole output after the product."""
    lhs_shape, rhs_shape = (o.shape.dims for o in inst.operands)
    result_dtype = inst.shape.dtype.numpy
    work = compute_dtype(result_dtype)
    lb, lf, lc, rb, rc, rf = dot_dimensions(inst.attrs, len(lhs_shape), len(rhs_shape))
    batch, m, n, k = dot_sizes(inst)
    left_order, right_order = tuple(lb + lf + lc), tuple(rb + rc + rf)
    a, b = reads
    result = inst if transposed is None else transposed
    if transposed is not None:  # (batch, n, k) @ (batch, k, m): the swapped product
        left_order, right_order = tuple(rb + rf + rc), tuple(lb + lc + lf)
        m, n, a, b = n, m, b, a
    lead: tuple[int, ...] = ()
    if count is not None:
        lead = (count,)
        left_order = (0, *(d + 1 for d in left_order))
        right_order = (0, *(d + 1 for d in right_order))
    left_shape, right_shape = (*lead, batch, m, k), (*lead, batch, k, n)
    out_shape, dims = (*lead, batch, m, n), (*lead, *result.shape.dims)
    matmul = np.matmul

    # A large batch of float gemms goes to blas.batched_matmul when BLAS has several threads
    # (one hand-off per dot, not one per matrix: see blas.py); the same gemm per matrix.
    matrices = batch * (count or 1)
    splits = blas.splittable(matrices, m, n, k, work)
    # A large output is a recycled buffer (its pages stay mapped from run to run).
    from xla_spmd.backends.cpu.program import OUTPUTS  # program imports this module
    allocate = OUTPUTS.take

    def launch_dot(values, ctx):
        left = dot_operand(_asarray(values[a]), left_order, left_shape, work)
        right = dot_operand(_asarray(values[b]), right_order, right_shape, work)
        if np.may_share_memory(left, right):
            # numpy's matmul takes a matrix times its own transpose to syrk, which the
            # reference's two copies never reach: copy one, as the reference does.
            right = right.astype(work, order="K")
        out = allocate(dims, work)
        after = None if epilogue is None else epilogue(values, out)
        threads = blas.split_threads()
        parts = min(threads, matrices) if splits else 1
        if parts > 1:
            blas.batched_matmul(left, right, out.reshape(out_shape), parts,
                                after=_aligned(after, m * n, matrices, parts))
        elif (matrices == 1 and threads > 1 and n > m
              and blas.columns_splittable(m, n, k, work, threads)):
            by_columns = None  # the epilogue on each part's columns, right after them
            if after is not None and after.columns is not None and dims[-1] == n:
                by_columns = after.columns
            blas.columns_matmul(left, right, out.reshape(out_shape), threads,
                                after=None if by_columns else _aligned(after, n, m, threads),
                                after_columns=by_columns)
        elif matrices == 1 and threads > 1 and blas.rows_splittable(m, n, k, work, threads):
            blas.rows_matmul(left, right, out.reshape(out_shape), threads,
                             after=_aligned(after, n, m, threads))
        else:
            matmul(left, right, out=out.reshape(out_shape))  # under run()'s errstate
            if after is not None:
                after.pending = True
        if after is not None and after.pending:
            after(0, out.size)
        return out if work == result_dtype else out.astype(result_dtype)
    return launch_dot


def dot_sizes(inst: Instruction, transposed: bool = False) -> tuple[int, int, int, int]:
    """``(batch, m, n, k)`` of dot ``inst`` as ``dot_kernel`` computes it: ``batch``
    ``(m, k) @ (k, n)`` products; ``transposed``: its transpose, the swapped product (``m``
    and ``n`` exchanged).

    >>> from xla_spmd.ir import parse_hlo
    >>> m = parse_hlo('''HloModule m
    ... ENTRY %e (a: f32[2,3,4], b: f32[2,4,5]) -> f32[2,3,5] {
    ...   %a = f32[2,3,4] parameter(0)
    ...   %b = f32[2,4,5] parameter(1)
    ...   ROOT %d = f32[2,3,5] dot(%a, %b), lhs_batch_dims={0}, rhs_batch_dims={0},
    ...       lhs_contracting_dims={2}, rhs_contracting_dims={1}
    ... }''')
    >>> dot_sizes(m.entry.root), dot_sizes(m.entry.root, transposed=True)
    ((2, 3, 5, 4), (2, 5, 3, 4))
    """
    lhs_shape, rhs_shape = (o.shape.dims for o in inst.operands)
    lb, lf, lc, _, _, rf = dot_dimensions(inst.attrs, len(lhs_shape), len(rhs_shape))
    batch, m, k = (_size(d, lhs_shape) for d in (lb, lf, lc))
    n = _size(rf, rhs_shape)
    return (batch, n, m, k) if transposed else (batch, m, n, k)


def may_split_by_columns(inst: Instruction, transposed: bool = False) -> bool:
    """Whether ``dot_kernel`` may split dot ``inst``'s product (its transpose's, with
    ``transposed``) by columns on some number of threads: one matrix with more columns than
    rows, ``blas.columns_splittable`` on 2 threads (the fewest parts, which every other count
    of parts asks more than). Decided from the shapes alone, before the threads are known."""
    batch, m, n, k = dot_sizes(inst, transposed)
    work = compute_dtype(inst.shape.dtype.numpy)
    return batch == 1 and n > m and blas.columns_splittable(m, n, k, work, 2)


def _aligned(after, unit: int, count: int, parts: int):
    """``after`` for a product split into ``parts`` parts of ``count`` items of ``unit``
    output elements each (``blas.split_bounds``), as ``after(i0, i1)`` over items: where some
    part's bounds are not whole steps of the epilogue's ranged loop, None, and ``after`` is
    marked ``pending`` (run on the whole output once the product is done)."""
    if after is None:
        return None
    bounds = blas.split_bounds(count, parts)
    after.pending = any(b * unit % after.unit for b in bounds)
    if after.pending:
        return None
    return lambda i0, i1: after(i0 * unit, i1 * unit)


FOLD_MIN_MNK = 100 ** 3
"""The smallest product ``m·n·k`` whose transpose ``folded_transpose`` computes as the
swapped product. OpenBLAS serves smaller ones (up to 100³, by its SkylakeX permit; 64³ on
ARM SVE) with small-matrix kernels whose sums depend on which side is transposed; its
packed gemm sums every element over k in the same order either way: ``C^T = B^T A^T`` gave
the bits of ``A B`` for all 5416 products tried above 100³ (sizes 2..1000, every transpose
flag, 1 and 2 threads; OpenBLAS 0.3.31 SkylakeX)."""

FOLD_CORES = ("skylakex",)
"""The OpenBLAS cores (``blas.core``) on which that was checked: elsewhere no transpose is
folded."""


def folded_transpose(inst: Instruction, users: Mapping, root: Instruction
                     ) -> Instruction | None:
    """The dot whose transpose ``inst`` is, where the CPU backend computes that transpose
    as the dot with its operands swapped (``dot_kernel(..., transposed=inst)``): ``inst``
    moves the dot's free dims past each other (batch dims first, the rhs's free dims, then
    the lhs's: the swapped dot's own order), every user of the dot is such a transpose (the
    dot itself is never computed; ``users`` maps each instruction to its users, ``root`` is
    the computation's root, never folded away), the product is an f32 gemm (an f32, bf16
    or f16 result) of at least ``FOLD_MIN_MNK`` on an OpenBLAS core of ``FOLD_CORES``,
    ``m, n > 1``.
    Else None.

    XLA's backward pass makes these: the weight gradient ``transpose(dot(dy, x))``."""
    if inst.op.name != "transpose" or inst.operands[0].op.name != "dot":
        return None
    dot = inst.operands[0]
    if kernel_for(dot) is None or compute_dtype(dot.shape.dtype.numpy) != np.float32:
        return None
    lhs_shape, rhs_shape = (o.shape.dims for o in dot.operands)
    lb, lf, lc, rb, rc, rf = dot_dimensions(dot.attrs, len(lhs_shape), len(rhs_shape))
    m, k, n = _size(lf, lhs_shape), _size(lc, lhs_shape), _size(rf, rhs_shape)
    swapped = (*range(len(lb)), *range(len(lb) + len(lf), dot.shape.rank),
               *range(len(lb), len(lb) + len(lf)))
    if (tuple(inst.attrs.dimensions) != swapped or m < 2 or n < 2 or m * n * k < FOLD_MIN_MNK
            or blas.core() not in FOLD_CORES):
        return None
    if dot is root or any(user.op.name != "transpose"
                          or tuple(user.attrs.dimensions) != swapped for user in users[dot]):
        return None
    return dot


def reduce_kernel(inst: Instruction, reads: tuple) -> Launch:
    """A reduce with a plain binary reducer: numpy's ufunc reduction (pairwise for sums), the
    reference's own kernel (so sums agree bit for bit), reducer and axes decided once."""
    name = binary_reducer(inst.attrs.to_apply)
    assert name is not None  # chosen only for a binary reducer
    axes = tuple(sorted(inst.attrs.dimensions))
    dtype = inst.shape.dtype.array_dtype
    a, b = reads
    if name in ("add", "multiply") and dtype.kind == "f" and compute_dtype(dtype) == dtype:
        # _fast_reduce's steps for a float type computed in itself: its copy of the data
        # (skipped when that copy would have the same layout), numpy's reduction, then the
        # initial value combined first.
        ufunc = np.add if name == "add" else np.multiply

        def launch_float(values, ctx):
            x = values[a]
            if not (type(x) is np.ndarray and x.dtype == dtype and x.flags.c_contiguous):
                x = _asarray(x).astype(dtype)
            return _asarray(ufunc(values[b], ufunc.reduce(x, axis=axes, dtype=dtype)))
        return launch_float

    def launch_reduce(values, ctx):
        return _fast_reduce(name, _asarray(values[a]), _asarray(values[b]), axes, dtype)
    return launch_reduce


def broadcast_kernel(inst: Instruction, reads: tuple) -> Launch:
    """Broadcast into a new C-contiguous array, as the reference's rule makes it (a broadcast
    step is only what a dot, a reduce, a fallback or the root reads: one that a fusion reads
    is fused). Not a stride-0 view: numpy's matmul and sums choose their BLAS call and
    summation order by the operand's strides, so a dot or a float sum over the view gave
    other bits than the reference's over its copy (``dot(broadcast(v), w)`` off by an ulp,
    ``reduce(broadcast(v), add)`` by more). The reference's own expression: a 0-d result
    stays 0-d, and an array numpy already calls contiguous (a size-1 dim's stride may be 0)
    is not copied, there as here."""
    dims = inst.attrs.dimensions
    placed = [1] * inst.shape.rank
    order = tuple(sorted(range(len(dims)), key=lambda i: dims[i]))
    for i in order:
        placed[dims[i]] = inst.shape.dims[dims[i]]
    placed, shape = tuple(placed), inst.shape.dims
    (a,) = reads
    broadcast_to = np.broadcast_to
    if order == tuple(range(len(order))):
        return lambda values, ctx: _asarray(
            broadcast_to(_asarray(values[a]).reshape(placed), shape), order="C")
    return lambda values, ctx: _asarray(broadcast_to(
        _asarray(values[a]).transpose(order).reshape(placed), shape), order="C")


def _as_kernel(builder):
    """A kernel builder with the reference calling convention ``(inst, operands, ctx)``."""
    return lambda inst, operands, ctx: builder(inst, tuple(range(len(operands))))(
        list(operands), ctx)


KERNELS.update(broadcast=_as_kernel(broadcast_kernel), dot=_as_kernel(dot_kernel),
               reduce=_as_kernel(reduce_kernel), convolution=_as_kernel(conv_kernel))
KERNELS["select-and-scatter"] = _as_kernel(select_and_scatter_kernel)


# ---------------------------------------------------------------------------------------------
# Sort


def sort_kernel(inst: Instruction, reads: tuple) -> Launch:
    """Sort with a recognised comparator (lexicographic LT/GT over keys, any payloads: the
    top-k pattern, argsort by an iota payload; ``backends/comparators.py``), its keys found
    once: each call evaluates the keys on their operands, ranks them and takes numpy's
    stable ``lexsort`` order, the reference's own steps (so the same permutation). Keys
    holding NaN under a FLOAT compare order nothing strictly: that call runs the reference
    rule, counted as a fallback run (``ctx.count_fallback``)."""
    keys = recognize_comparator(inst.attrs.to_apply)
    assert keys is not None  # kernel_for picks it only for a recognised comparator
    (axis,) = inst.attrs.dimensions
    computation = inst.attrs.to_apply

    def launch_sort(values, ctx):
        operands = [_asarray(values[s]) for s in reads]
        first = operands[0]
        if first.ndim == 0 or first.shape[axis] <= 1:
            return _pack(inst, [np.array(o) for o in operands])
        columns = []
        for key in reversed(keys):  # np.lexsort takes the major key last
            keyed = _key_values(ctx, computation, key, operands[key.operand])
            if keyed is None:
                count = getattr(ctx, "count_fallback", None)
                if count is not None:
                    count("sort")
                return EVALUATE.lookup("sort")(inst, operands, ctx)
            _, rank = np.unique(keyed, return_inverse=True)
            rank = rank.reshape(keyed.shape)
            columns.append(-rank if key.descending else rank)
        moved = [np.moveaxis(c, axis, -1) for c in columns]
        order = np.moveaxis(np.lexsort(moved, axis=-1), -1, axis)
        return _pack(inst, [np.take_along_axis(o, order, axis=axis) for o in operands])
    return launch_sort


KERNELS["sort"] = _as_kernel(sort_kernel)


# The indexing ops run through precomputed launches (``indexing.LAUNCHES``); the reference
# rule is their kernel with the reference calling convention.
INDEXING = ("gather", "scatter", "dynamic-slice", "dynamic-update-slice")
KERNELS.update({name: EVALUATE.lookup(name) for name in INDEXING})


def kernel_for(inst: Instruction):
    """The kernel that runs ``inst``, or None (the reference rule runs it)."""
    name = inst.op.name
    if name == "bitcast" and not (_default_layout(inst.shape)
                                  and _default_layout(inst.operands[0].shape)):
        return None
    if name in ("dot", "convolution"):
        dtype = inst.shape.dtype
        if dtype is PRED or dtype.is_complex or dtype.numpy is None or dtype.bits < 8:
            return None
    if name == "copy" and isinstance(inst.shape, ArrayShape) and inst.shape.dtype.bits < 8:
        return None
    if name == "reduce" and (len(inst.operands) != 2
                             or binary_reducer(inst.attrs.to_apply) is None):
        return None
    if name == "select-and-scatter" and not can_select_and_scatter(inst):
        return None  # a select called per element: the reference's loop
    if name == "sort" and recognize_comparator(inst.attrs.to_apply) is None:
        return None  # a comparator called on pairs: the reference's sort
    if name == "scatter" and (len(inst.operands) != 3 or inst.operands[0].shape.dtype
                              != inst.operands[2].shape.dtype
                              or _reducer_kind(inst.attrs.to_apply) is None):
        return None  # a reducer called per element: the reference's loop
    return KERNELS.get(name)


# ---------------------------------------------------------------------------------------------
# Collectives: start at the communicator now, wait later

ASYNC_COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                     "collective-permute")


_VARIADIC = ("all-reduce", "all-gather", "reduce-scatter")


def can_start(inst: Instruction) -> bool:
    """Whether ``inst`` runs as start/wait pairs: array operands, one array result each
    (several operands only for all-reduce, all-gather and reduce-scatter)."""
    if inst.op.name not in ASYNC_COLLECTIVES or not inst.operands:
        return False
    if any(not isinstance(o.shape, ArrayShape) for o in inst.operands):
        return False
    if len(inst.operands) > 1:
        return inst.op.name in _VARIADIC and all(
            isinstance(s, ArrayShape) for s in getattr(inst.shape, "elements", ()))
    if not isinstance(inst.shape, ArrayShape):
        return False
    return inst.op.name != "all-to-all" or bool(inst.attrs.dimensions)


class _Handles:
    """The handles of a collective's operands; ``wait()`` gives the tuple of results."""

    def __init__(self, handles: list):
        self.handles = handles

    def wait(self) -> tuple:
        return tuple(handle.wait() for handle in self.handles)


def start(inst: Instruction, operands: list, ctx, groups: dict):
    """Start collective ``inst``; returns a handle whose ``wait()`` gives the result (groups
    and reductions as the reference evaluator forms them; ``groups`` caches each device's
    group of ``inst``)."""
    if len(operands) > 1:
        return _Handles([_start_one(inst, x, ctx, groups) for x in operands])
    return _start_one(inst, operands[0], ctx, groups)


def _group(inst: Instruction, ctx, groups: dict) -> list[int]:
    """The device's group, from ``groups`` (device -> group) once computed: expanding iota
    replica groups costs more than a small collective."""
    group = groups.get(ctx.device_id)
    if group is None:
        group = groups[ctx.device_id] = _required_group(inst, ctx, inst.op.name)
    return group


def _start_one(inst: Instruction, operand: np.ndarray, ctx, groups: dict):
    name, attrs, communicator = inst.op.name, inst.attrs, ctx.communicator
    # keeps 0-d arrays 0-d; a device array (CuPy, for a communicator that takes them) is
    # passed as it is, made contiguous by its backend
    x = operand if hasattr(operand, "__cuda_array_interface__") else np.asarray(operand,
                                                                                 order="C")
    if name == "collective-permute":
        partitions = ctx.num_partitions
        if _has_channel(attrs):
            def device(i):
                return ctx.replica_id * partitions + i
        else:
            def device(i):
                return i * partitions + ctx.partition_id
        pairs = [(device(s), device(t)) for s, t in attrs.source_target_pairs]
        return communicator.collective_permute_start(x, pairs)
    group = _group(inst, ctx, groups)
    if name == "all-reduce":
        return communicator.all_reduce_start(x, group, _communicator_op(inst, ctx))
    (dim,) = attrs.dimensions
    if name == "all-gather":
        return communicator.all_gather_start(x, group, dim)
    if name == "reduce-scatter":
        return communicator.reduce_scatter_start(x, group, dim, _communicator_op(inst, ctx))
    return communicator.all_to_all_start(x, group, dim, dim)
