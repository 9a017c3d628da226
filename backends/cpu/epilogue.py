"""Dot epilogues, and large loop fusions split over threads.

An elementwise loop fusion that reads a dot's output is run by the dot's kernel step, on
each part of the output right after BLAS wrote it, instead of as a step of its own that
reads the whole output back from memory.

XLA's backward pass of an MLP is a chain of ``dot -> elementwise`` pairs: the activation
``maximum(dot, 0)``, the gradient masks ``select(x > 0, dot, 0) * ...``, the loss's
``dot - y`` and each weight update ``w - 0.01 * transpose(dot)`` (the transpose folded into
the product, ``kernels.folded_transpose``). As separate steps each fusion is one more pass
over the dot's output (16 MB for a 2048² weight gradient), run on one thread after the
product. As an epilogue it runs in the dot's launch:

* where BLAS's product is split over threads (``blas.rows_matmul``, ``blas.batched_matmul``,
  ``blas.columns_matmul``), each thread runs the fusion on its part of the output as soon as
  its own product is done, while that part is still in its cache, so the fusion runs on
  every thread too (a split by columns: the fusion's form ranged over its last dim, where it
  has one; else by rows once the whole product is done);
* otherwise the fusion runs on the whole output right after the product, in the same launch;
* where the plan writes the fusion over the dot's buffer (``Fusion.inplace``: the dot dies
  there) and nothing else reads the dot, it does so in the dot's launch: each element is
  read before it is overwritten (the fusion reads the dot through its output pointer), so
  no second buffer is allocated.

Why per part and not in smaller blocks: each BLAS call packs all of the other operand, so
blocks that fit L2 cost more packing than the cache saves. The MLP's weight update
(``(2048, 512) @ (512, 2048)`` then ``w - 0.01 * g``) took 33.4 ms of CPU time as a product
and a separate pass, 26.9 ms with the update run on each thread's half right after it, 28.9
ms in blocks of 256 rows and 30.6 ms in blocks of 128 (load 2 on 2 cores).

The dot's values are the same BLAS calls as without the epilogue (the split is the one
``blas`` makes either way, its own bits argument), and the fusion computes every element as
its own step would (its ``_rows`` form is the same loop body over a range of its
outermost loop), so results are bit-identical to the unfused plan and to the reference.

Invariants of an attached pair (``attach``): the dot step is a BLAS kernel step (a dot, or
a transpose folded into one) whose result is its computation type (f32, f64: no rounding
after the product), of at least ``MIN_BYTES``; the fusion is a loop fusion with a ranged
form (``emitter.range_unit``) that reads the dot's value only at its own output index
(``emitter.reads_at_output_index``); every other value the fusion reads is produced before
the dot's step (so it is ready when the dot runs; the fusion's step then only hands on the
value). A fusion the plan writes over an input is an epilogue only where that input is
the dot and no other step reads the dot (it is then written over when the dot runs, not at
the fusion's own step). A dot has at most one epilogue; a fusion that reads several dots is
the epilogue of the last one.

The same ranged forms split a large standalone loop fusion (``SPLIT_MIN_BYTES``: the
transformer block's softmax, GELU and norm chains) over the threads of a device that has all
the cores, one range of rows each (``splits``, ``split_launch``), as XLA:CPU partitions the
outer dims of its loop fusions.

Example (the MLP's first layer): ``dot.1 = dot(x, w0)`` then ``maximum.4 = loop fusion
{constant, broadcast, maximum}(dot.1)`` become one launch: on 2 threads each computes half of
the rows of ``x @ w0`` and then ``maximum`` over those rows; ``dot.1`` is also read by the
backward pass's mask, so ``maximum.4`` gets a buffer of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from xla_spmd.backends.cpu import blas, kernels
from xla_spmd.backends.cpu.emitter import has_column_range, range_unit, reads_at_output_index
from xla_spmd.backends.cpu.fusion import Fusion
from xla_spmd.backends.reference.numeric import compute_dtype
from xla_spmd.ir import ArrayShape

SPLIT_MIN_BYTES = 1 << 20
"""The smallest output (bytes) of a loop fusion run on the BLAS pool's threads, one range
of its rows each (``split_launch``): below it the hand-off costs about what it saves."""

MIN_BYTES = 1 << 18
"""The smallest dot output (bytes) given an epilogue: below it the output stays in cache
between two steps anyway, and a ranged call through ctypes costs more than the step's
launch (the README's small models keep their plans)."""


@dataclass(frozen=True, slots=True)
class Epilogue:
    """A loop fusion run by a dot's kernel step: ``slot`` and ``reads`` are the fusion
    step's (its value, its inputs' slots in ``fusion.inputs`` order), ``operand`` the index in
    ``fusion.inputs`` of the dot's value, ``unit`` the output elements of one step of the
    ranged function's outer loop, ``in_place``: the fusion writes over the dot's buffer (so
    that buffer lives on as the fusion's value after the dot's slot dies at the fusion's
    step: what a buffer planner reusing dead buffers must know); ``columns``: it has a form
    ranged over columns too (its output's last dim is the dot's), compiled only where the
    dot's product may be split by columns (``kernels.may_split_by_columns``)."""

    fusion: Fusion
    slot: int
    reads: tuple[int, ...]
    operand: int
    unit: int
    dot_name: str
    columns: bool = False

    @property
    def in_place(self) -> bool:
        """Whether the fusion writes over the dot's buffer (``Fusion.inplace``)."""
        return self.fusion.inplace == self.operand

    @property
    def axes(self) -> tuple[str, ...]:
        """The ranged forms it is rendered in (``emitter.render_range``)."""
        return ("rows", "columns") if self.columns else ("rows",)


def _is_blas_dot(step) -> bool:
    if step.kind != "kernel" or not isinstance(step.inst.shape, ArrayShape):
        return False
    if step.folded is None and step.inst.op.name != "dot":
        return False
    dtype = step.inst.shape.dtype.numpy
    if dtype is None or compute_dtype(dtype) != np.dtype(dtype):
        return False  # bf16/f16 results are rounded after the product: no epilogue
    return step.inst.shape.byte_size >= MIN_BYTES


def _may_split_by_columns(step) -> bool:
    """Whether BLAS dot step ``step``'s product may be split by columns
    (``kernels.may_split_by_columns``): only then is its epilogue's column form compiled."""
    if step.folded is not None:  # the transpose of the dot, the swapped product
        return kernels.may_split_by_columns(step.folded, transposed=True)
    return kernels.may_split_by_columns(step.inst)


def attach(steps: list, root_slot: int, fusions: list[Fusion]) -> None:
    """Give each dot step of ``steps`` (a schedule, ``program.plan``'s, its buffers
    assigned) the loop fusion to run as its epilogue, where one qualifies (see the module's
    invariants): the dot step's and the fusion step's ``epilogue`` are set to the same
    ``Epilogue``. A fusion the plan writes over another dying input (not a parameter) is
    written over the dot instead where it may be (the dot's buffer is its own, read by the
    fusion alone, at the output's index): then it runs in place in the dot's launch
    (``fusions``, the plan's, is updated with it)."""
    produced = {step.slot: k for k, step in enumerate(steps) if step.kind != "start"}
    readers: dict[int, int] = {}
    for step in steps:
        for slot in set(step.reads):
            readers[slot] = readers.get(slot, 0) + 1
    for step in steps:
        if step.kind != "fusion" or step.fused.kind != "loop" or not step.reads:
            continue
        last = max(step.reads, key=lambda s: produced.get(s, -1))
        position = produced.get(last)
        if position is None:
            continue
        dot = steps[position]
        if dot.epilogue is not None or not _is_blas_dot(dot):
            continue
        if sum(slot == last for slot in step.reads) != 1:
            continue
        operand = step.reads.index(last)
        unit = range_unit(step.fused)
        if unit is None or not reads_at_output_index(step.fused, operand):
            continue
        inplace = step.fused.inplace
        if inplace is not None and inplace != operand and readers.get(last) == 1 and (
                last != root_slot and operand in step.fused.aligned_inputs()
                and step.reads[inplace] in produced):
            # the other input's buffer then simply dies; the dot's is the plan's own (a new
            # output no other value shares) and nothing else reads it. (Not over a donated
            # parameter: writing the result there saves the runtime's copy.)
            fusion = replace(step.fused, inplace=operand)
            fusions[next(i for i, f in enumerate(fusions) if f is step.fused)] = fusion
            step.fusion, inplace = fusion, operand
        if inplace is not None and (inplace != operand or readers.get(last) != 1):
            continue  # written over at the fusion's step, which the dot's step precedes
        dims = step.inst.shape.dims
        columns = (dims[-1:] == dot.inst.shape.dims[-1:] and has_column_range(step.fused)
                   and _may_split_by_columns(dot))
        epilogue = Epilogue(step.fused, step.slot, step.reads, operand, unit,
                            step.fused.inputs[operand].name, columns)
        dot.epilogue = step.epilogue = epilogue


def binder(epilogue: Epilogue, function, columns_function=None) -> Callable:
    """``bind(values, out) -> after``: the epilogue made ready for one launch of its dot,
    whose output buffer is ``out`` (C-contiguous, the dot's shape and dtype); ``values``
    receives the fusion's value at its slot, and ``after(start, stop)`` runs the fusion on
    output elements ``start .. stop-1`` (multiples of ``unit``) through ``function``, the
    ranged function (``emitter.render_range``) compiled; ``after.columns(start, stop)``, on
    columns ``start .. stop-1`` of every row through ``columns_function`` (the form ranged
    over columns, where ``epilogue.columns``; else ``after.columns`` is None)."""
    root = epilogue.fusion.root
    dims, dtype = root.shape.dims, root.shape.dtype.array_dtype
    reads, operand, unit = epilogue.reads, epilogue.operand, epilogue.unit
    slot, in_place = epilogue.slot, epilogue.in_place
    from xla_spmd.backends.cpu.program import output_allocator  # program imports this module
    asarray, allocate = np.asarray, output_allocator(root)  # a large output is recycled

    def bind(values: list, out: np.ndarray) -> Callable[[int, int], None]:
        inputs = [out if k == operand else asarray(values[s], order="C")
                  for k, s in enumerate(reads)]
        result = out.reshape(dims) if in_place else allocate(dims, dtype)
        values[slot] = result
        pointers = [result.ctypes.data] + [a.ctypes.data for a in inputs]

        def after(start: int, stop: int) -> None:
            if stop > start:
                function(*pointers, start // unit, stop // unit)

        def columns(start: int, stop: int) -> None:
            if stop > start:
                assert columns_function is not None  # after.columns is None without it
                columns_function(*pointers, start, stop)
        after.arrays = (result, inputs)  # held while the closure lives
        after.unit, after.pending = unit, False
        after.columns = None if columns_function is None else columns
        return after
    return bind


def splits(step) -> bool:
    """Whether fusion step ``step`` runs split over threads (``split_launch``): a loop fusion
    of at least ``SPLIT_MIN_BYTES`` with a ranged form, not a dot's epilogue."""
    if step.kind != "fusion" or step.epilogue is not None or step.fused.kind != "loop":
        return False
    shape = step.inst.shape
    return shape.byte_size >= SPLIT_MIN_BYTES and range_unit(step.fused) is not None


def split_launch(step, whole: Callable, function) -> Callable:
    """The launch of a loop fusion step that ``splits``: where a split may run
    (``blas.split_threads``), the fusion's ranged form (``function``, rows) runs on one range
    of its rows per thread at once (XLA:CPU partitions its loop fusions' outer dims so too),
    each element computed as the whole function computes it; else ``whole`` (its launch)."""
    fusion, reads = step.fused, step.reads
    root = fusion.root
    dims, dtype = root.shape.dims, root.shape.dtype.array_dtype
    steps = root.shape.num_elements // range_unit(fusion)
    from xla_spmd.backends.cpu.program import output_allocator  # program imports this module
    asarray, allocate, inplace = np.asarray, output_allocator(root), fusion.inplace

    def launch_split(values, ctx):
        parts = blas.split_threads()
        if parts < 2 or steps < 2 * parts:
            return whole(values, ctx)
        inputs = [asarray(values[s], order="C") for s in reads]
        # written over its input where the plan says so (read through the output pointer)
        out = allocate(dims, dtype) if inplace is None else inputs[inplace]
        pointers = [out.ctypes.data] + [a.ctypes.data for a in inputs]
        blas.run_split(lambda i0, i1: function(*pointers, i0, i1),
                       blas.split_bounds(steps, parts))
        return out
    return launch_split
