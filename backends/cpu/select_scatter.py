"""select-and-scatter (the max-pool gradient) on the CPU backend: a vectorised numpy kernel,
bit-identical to the reference evaluator.

The reference rule (``backends/reference/reduction.py``) walks the window's taps in row-major
order; at each tap, every source position whose window reaches a real operand element there
(padding never wins) takes that element when it has no pick yet or when ``select(picked,
element)`` is false, so under ``select = GE`` ties keep the first position, as XLA's. Then
it folds every source into its pick with ``scatter`` from the init, each target's sources in
row-major source order.

Everything that depends only on the shapes is decided here once: each tap's flat operand
index for every source position and where it is valid, and which positions meet a tap
before any other (they take it unconditionally). Per call a tap costs a gather, one compare
and two masked copies. ``select`` is evaluated as the reference evaluates it: a lone
``compare`` of the two parameters through the reference's compare (either argument order),
any other elementwise body called on whole arrays through the context. The scatter of an
``add`` in a type that computes in itself (f32, f64, integers of 8 bits or more) is one
``numpy.add.at``, which applies the sources in index order (so each target's in row-major
source order: the reference's fold); any other scatter runs the reference's rounds.

Example: a 2×2 max-pool gradient of ``[[1, 5], [3, 5]]`` with source ``[[7]]`` puts 7 at
``(0, 1)``: the first of the two 5s.
"""

from __future__ import annotations

import numpy as np

from xla_spmd.backends.reference.elementwise import compare, default_comparison_type
from xla_spmd.backends.reference.evaluator import Context
from xla_spmd.backends.reference.numeric import compute_dtype
from xla_spmd.backends.reference.reduction import (
    _call_predicate,
    _window_taps,
    binary_reducer,
    is_elementwise,
    scatter_in_rounds,
)
from xla_spmd.ir import Computation, Instruction

_asarray = np.asarray


def _compare_of_parameters(select: Computation):
    """``(direction, kind, swapped)`` when ``select`` is a lone compare of its two
    parameters, else None."""
    root = select.root
    if root.op.name != "compare" or len(select.parameters) != 2:
        return None
    first, second = select.parameters
    if tuple(root.operands) == (first, second):
        swapped = False
    elif tuple(root.operands) == (second, first):
        swapped = True
    else:
        return None
    kind = root.attrs.type or default_comparison_type(first.shape.dtype)
    return root.attrs.direction, kind, swapped


def can_select_and_scatter(inst: Instruction) -> bool:
    """Whether ``select_and_scatter_kernel`` runs ``inst``: an elementwise ``select`` (the
    reference's own condition for calling it on whole arrays)."""
    return is_elementwise(inst.attrs.select)


def select_and_scatter_kernel(inst: Instruction, reads: tuple):
    """``select-and-scatter`` bound to its instruction: ``launch(values, ctx) -> value``."""
    operand_shape = inst.operands[0].shape.dims
    out_shape = inst.operands[1].shape.dims
    dtype = inst.shape.dtype.array_dtype
    size = int(np.prod(operand_shape, dtype=np.int64))
    empty = size == 0 or 0 in out_shape
    taps: list[tuple[np.ndarray, np.ndarray | None, np.ndarray | None]] = []
    picked = np.zeros(int(np.prod(out_shape, dtype=np.int64)), bool)  # has a pick so far
    if not empty:
        for indices, valid in _window_taps(inst.attrs.window, operand_shape, out_shape):
            if not valid.any():
                continue
            flat = np.ravel_multi_index(tuple(np.broadcast_to(i, out_shape) for i in indices),
                                        operand_shape).reshape(-1)
            valid = valid.reshape(-1)
            first = valid & ~picked  # takes the tap whatever select says
            contested = valid & ~first
            taps.append((flat, None if first.all() else first,
                         None if contested.all() else contested))
            picked |= valid
    empty = empty or not taps  # every window over padding only: nothing picked
    all_picked = bool(picked.all())
    predicate = _compare_of_parameters(inst.attrs.select)
    select = inst.attrs.select
    scatter = inst.attrs.scatter
    fast_scatter = (binary_reducer(scatter) == "add" and compute_dtype(dtype) == dtype
                    and dtype.kind in "fiu")
    a, b, c = reads

    def keeps(ctx: Context, current: np.ndarray, value: np.ndarray, mask) -> np.ndarray:
        if predicate is not None:
            direction, kind, swapped = predicate
            x, y = (value, current) if swapped else (current, value)
            return _asarray(compare(x, y, direction, kind), dtype=bool)
        mask = np.ones(current.shape, bool) if mask is None else mask
        return _call_predicate(ctx, select, current, value, mask)

    def launch_select_and_scatter(values, ctx):
        operand, source, init = _asarray(values[a]), _asarray(values[b]), values[c]
        result = np.broadcast_to(_asarray(init), operand_shape).astype(dtype)
        if empty:
            return result
        operand = operand.reshape(-1)
        value = target = None
        for flat, first, contested in taps:
            tap = operand[flat]
            if value is None or target is None:  # the first tap: every pick starts here
                value, target = tap, flat.copy()
                continue
            take = ~keeps(ctx, value, tap, contested)
            if contested is not None:
                take &= contested
            if first is not None:
                take |= first
            np.copyto(value, tap, where=take)
            np.copyto(target, flat, where=take)
        assert target is not None  # not empty: some tap is valid
        sources = source.reshape(-1)
        if not all_picked:
            sources, target = sources[picked], target[picked]
        flat_result = result.reshape(-1)
        if fast_scatter:
            np.add.at(flat_result, target, sources.astype(dtype, copy=False))
            return result
        scatter_in_rounds(ctx, scatter, flat_result, target, sources)
        return result
    return launch_select_and_scatter
