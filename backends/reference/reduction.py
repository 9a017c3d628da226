"""Reference evaluation rules: reduce, reduce-window, select-and-scatter, sort, topk, map.

Invariants (op_semantics §11, XLA's evaluator rules):

* reduce folds every reduced element into the init values in row-major order of the reduced
  dims: ``acc = body(acc..., x...)``; zero elements give the init.
* reduce-window folds, from the init, only the window positions that land on real input
  elements (padding and base-dilation holes are skipped), in row-major window order.
* select-and-scatter picks, per source element, the first valid window position that no later
  valid position beats under ``select`` (padding never wins), then scatters sources into the
  picks in row-major source order.
* sort is always stable.

Reducer bodies are called on whole arrays when they are elementwise (every instruction a
scalar elementwise op): folding one reduced position for every output element at once is
exactly the per-element fold, and fast. A body that is a single add/multiply/max/min/and/or
of its two parameters uses numpy's reductions directly (f16/bf16 accumulate in f32).

Worked example (§11): input ``[[1,2],[3,4],[5,6]]``, window ``[2,1]``, strides ``[4,1]``, base
dilations ``[2,1]``, window dilations ``[3,1]``, padding ``[[2,1],[0,0]]``, add with init 0 ->
``[[0,0],[3,4]]``.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from xla_spmd.backends.comparators import recognize_comparator
from xla_spmd.backends.reference.elementwise import apply_binary, total_order_key
from xla_spmd.backends.reference.evaluator import EVALUATE, Context, leaves
from xla_spmd.backends.reference.numeric import compute_dtype, is_float
from xla_spmd.ir import Computation, Instruction, TupleShape
from xla_spmd.ir.reducers import KIND_OPCODES, reducer_kind

# ---------------------------------------------------------------------------------------------
# Reducer bodies: recognising fast forms and applying them to arrays

_FAST_UFUNCS = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
                "minimum": np.minimum, "and": None, "or": None}


def _cached(analysis):
    """Memoise a computation analysis by identity (computations are immutable); the entry
    keeps the computation alive so its id is not reused."""
    results: dict[int, tuple[Computation, object]] = {}

    @functools.wraps(analysis)
    def cached(computation: Computation):
        entry = results.get(id(computation))
        if entry is None or entry[0] is not computation:
            entry = results[id(computation)] = (computation, analysis(computation))
        return entry[1]
    return cached


@_cached
def binary_reducer(computation: Computation) -> str | None:
    """The opcode if `computation` is exactly ``op(p0, p1)`` of a fast commutative op."""
    return KIND_OPCODES.get(reducer_kind(computation))


@_cached
def is_elementwise(computation: Computation) -> bool:
    """True when calling `computation` on arrays equals calling it on each element."""
    for inst in computation.instructions:
        if any(leaf.rank for leaf in inst.shape.leaves()):
            return False
        name = inst.op.name
        if name in ("parameter", "constant", "tuple", "get-tuple-element"):
            continue
        if inst.op.elementwise and not inst.called_computations():
            continue
        if name in ("call", "fusion") and all(is_elementwise(c)
                                              for c in inst.called_computations()):
            continue
        return False
    return True


def _ufunc_apply(name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`name` (a fast reducer opcode) with XLA's semantics, in the dtype of `a`."""
    if name in ("and", "or") and a.dtype == np.bool_:
        return (np.logical_and if name == "and" else np.logical_or)(a, b)
    return apply_binary(name, a, np.asarray(b, dtype=a.dtype))


def _scalar_args(arrays: list, index: tuple) -> list:
    return [np.asarray(a[index]) for a in arrays]


def fold(ctx: Context, computation: Computation, accs: list, xs: list, dtypes: list,
         mask: np.ndarray | None = None) -> list:
    """``acc = computation(acc..., x...)`` elementwise over same-shape arrays, where `mask`.

    Returns new accumulators (of `dtypes`); where `mask` is False the old ones are kept.
    """
    shape = accs[0].shape
    fast = binary_reducer(computation) if len(accs) == 1 else None
    if fast is not None:
        new = [_ufunc_apply(fast, accs[0], xs[0]).astype(dtypes[0], copy=False)]
    elif is_elementwise(computation):
        with np.errstate(all="ignore"):
            result = leaves(ctx.call(computation, list(accs) + list(xs)))
        new = [np.broadcast_to(np.asarray(r), shape).astype(t) for r, t in zip(result, dtypes)]
    else:
        new = [np.array(a, dtype=t) for a, t in zip(accs, dtypes)]
        indices = np.ndindex(shape) if mask is None else zip(*np.nonzero(mask))
        for index in indices:
            index = tuple(index)
            result = leaves(ctx.call(computation, _scalar_args(accs, index)
                                     + _scalar_args(xs, index)))
            for target, value in zip(new, result):
                target[index] = value
        return new
    if mask is not None:
        new = [np.where(mask, n, a) for n, a in zip(new, accs)]
    return new


def _result_dtypes(inst: Instruction) -> list:
    return [leaf.dtype.numpy for leaf in inst.shape.leaves()]


def _pack(inst: Instruction, results: list):
    return tuple(results) if isinstance(inst.shape, TupleShape) else results[0]


# ---------------------------------------------------------------------------------------------
# reduce


def _fast_reduce(name: str, x: np.ndarray, init: np.ndarray, axes: tuple, dtype) -> np.ndarray:
    work = compute_dtype(dtype)
    xc, ic = x.astype(work), init.astype(work)
    if name in ("add", "multiply"):
        total = (np.add if name == "add" else np.multiply).reduce(xc, axis=axes, dtype=work)
        return _ufunc_apply(name, np.broadcast_to(ic, total.shape), total).astype(dtype)
    if x.size == 0:
        kept = tuple(n for d, n in enumerate(x.shape) if d not in axes)
        return np.broadcast_to(ic, kept).astype(dtype)
    if name in ("and", "or"):
        if xc.dtype == np.bool_:
            ufunc = np.logical_and if name == "and" else np.logical_or
        else:
            ufunc = np.bitwise_and if name == "and" else np.bitwise_or
        reduced = ufunc.reduce(xc, axis=axes)
        return _ufunc_apply(name, np.broadcast_to(ic, reduced.shape), reduced).astype(dtype)
    ufunc = _FAST_UFUNCS[name]
    reduced = ufunc.reduce(xc, axis=axes)
    result = _ufunc_apply(name, np.broadcast_to(ic, reduced.shape), reduced)
    if xc.dtype.kind == "f":
        zero = result == 0
        if np.any(zero):
            if name == "maximum":
                any_positive = np.logical_or.reduce((xc == 0) & ~np.signbit(xc), axis=axes)
                negative = ~(any_positive | ((ic == 0) & ~np.signbit(ic)))
            else:
                negative = np.logical_or.reduce((xc == 0) & np.signbit(xc), axis=axes) | (
                    (ic == 0) & np.signbit(ic))
            result = np.where(zero, np.where(negative, -0.0, 0.0).astype(result.dtype), result)
    return result.astype(dtype)


@EVALUATE.register("reduce")
def reduce_rule(inst: Instruction, operands: list, ctx: Context):
    half = len(operands) // 2
    xs, inits = operands[:half], operands[half:]
    axes = tuple(sorted(inst.attrs.dimensions))
    dtypes = _result_dtypes(inst)
    computation = inst.attrs.to_apply
    fast = binary_reducer(computation) if half == 1 else None
    if fast is not None:
        return _fast_reduce(fast, xs[0], np.asarray(inits[0]), axes, dtypes[0])
    kept = [d for d in range(xs[0].ndim) if d not in axes]
    out_shape = tuple(xs[0].shape[d] for d in kept)
    count = int(np.prod([xs[0].shape[d] for d in axes], dtype=np.int64))
    # Reduced dims last, flattened in row-major order: position k is the k-th element folded.
    flat = [np.transpose(x, kept + list(axes)).reshape(out_shape + (count,)) for x in xs]
    accs = [np.broadcast_to(np.asarray(i).astype(t), out_shape).copy()
            for i, t in zip(inits, dtypes)]
    for k in range(count):
        accs = fold(ctx, computation, accs, [f[..., k] for f in flat], dtypes)
    return _pack(inst, accs)


# ---------------------------------------------------------------------------------------------
# reduce-window


def _window_taps(window, in_shape, out_shape):
    """For each window position (row-major): per-dim input indices and validity of every
    output position, as open-mesh arrays ready to broadcast over the output."""
    per_dim = []
    for d, (w, n, m) in enumerate(zip(window.dims, in_shape, out_shape)):
        options = []
        for k in range(w.size):
            u = np.arange(m) * w.stride + k * w.rhs_dilation - w.padding_low
            valid = (u % w.lhs_dilation == 0) & (u >= 0) & (u // w.lhs_dilation < n)
            index = np.where(valid, u // w.lhs_dilation, 0)
            view = [1] * len(in_shape)
            view[d] = m
            options.append((index.reshape(view), valid.reshape(view)))
        per_dim.append(options)
    for combo in itertools.product(*per_dim):
        indices = tuple(c[0] for c in combo)
        valid = functools.reduce(np.logical_and, (c[1] for c in combo),
                                 np.ones((1,) * len(in_shape), dtype=bool))
        yield indices, np.broadcast_to(valid, out_shape)


@EVALUATE.register("reduce-window")
def reduce_window_rule(inst: Instruction, operands: list, ctx: Context):
    half = len(operands) // 2
    xs, inits = operands[:half], operands[half:]
    dtypes = _result_dtypes(inst)
    out_shape = inst.shape.leaves()[0].dims
    computation = inst.attrs.to_apply
    fast = binary_reducer(computation) if half == 1 else None
    work = [compute_dtype(t) if fast else t for t in dtypes]
    accs = [np.broadcast_to(np.asarray(i).astype(t), out_shape).copy()
            for i, t in zip(inits, work)]
    if 0 in out_shape or 0 in xs[0].shape:
        return _pack(inst, [a.astype(t) for a, t in zip(accs, dtypes)])
    for indices, valid in _window_taps(inst.attrs.window, xs[0].shape, out_shape):
        if not valid.any():
            continue
        taps = [np.broadcast_to(x[indices], out_shape).astype(t) for x, t in zip(xs, work)]
        accs = fold(ctx, computation, accs, taps, work, valid)
    return _pack(inst, [a.astype(t) for a, t in zip(accs, dtypes)])


# ---------------------------------------------------------------------------------------------
# select-and-scatter


def _call_predicate(ctx, computation, a, b, mask):
    if is_elementwise(computation):
        with np.errstate(all="ignore"):
            return np.broadcast_to(np.asarray(ctx.call(computation, [a, b]), dtype=bool),
                                   a.shape)
    result = np.zeros(a.shape, dtype=bool)
    for index in zip(*np.nonzero(mask)):
        result[index] = bool(ctx.call(computation, [np.asarray(a[index]),
                                                    np.asarray(b[index])]))
    return result


@EVALUATE.register("select-and-scatter")
def select_and_scatter_rule(inst: Instruction, operands: list, ctx: Context):
    operand, source, init = operands
    window = inst.attrs.window
    out_shape = source.shape
    rank = operand.ndim
    picked_value = np.zeros(out_shape, dtype=operand.dtype)
    picked_index = np.zeros(out_shape + (rank,), dtype=np.int64)
    has_pick = np.zeros(out_shape, dtype=bool)
    if source.size and operand.size:
        for indices, valid in _window_taps(window, operand.shape, out_shape):
            if not valid.any():
                continue
            value = np.broadcast_to(operand[indices], out_shape)
            keeps = _call_predicate(ctx, inst.attrs.select, picked_value, value,
                                    valid & has_pick)
            take = valid & (~has_pick | ~keeps)
            picked_value = np.where(take, value, picked_value)
            position = np.stack([np.broadcast_to(i, out_shape) for i in indices], axis=-1)
            picked_index = np.where(take[..., None], position, picked_index)
            has_pick |= valid
    result = np.broadcast_to(np.asarray(init), operand.shape).astype(inst.shape.dtype.numpy)
    sources = source[has_pick]
    targets: np.ndarray = np.asarray(np.ravel_multi_index(
        tuple(picked_index[has_pick].T), operand.shape)) if rank else np.zeros(
        len(sources), dtype=np.int64)
    flat = result.reshape(-1)
    scatter_in_rounds(ctx, inst.attrs.scatter, flat, targets, sources)
    return flat.reshape(operand.shape)


def scatter_in_rounds(ctx: Context, scatter: Computation, flat: np.ndarray,
                      targets: np.ndarray, sources: np.ndarray) -> None:
    """Fold ``sources`` into ``flat[targets]`` with ``scatter``, in place, in rounds: round
    r applies every target's r-th source (row-major order), so the targets of one round are
    distinct and each target sees its sources in order."""
    order = np.argsort(targets, kind="stable")
    ranks = np.empty(len(targets), dtype=np.int64)
    sorted_targets = targets[order]
    starts = np.searchsorted(sorted_targets, sorted_targets, side="left")
    ranks[order] = np.arange(len(targets)) - starts
    for r in range(int(ranks.max()) + 1 if len(ranks) else 0):
        chosen = ranks == r
        where = targets[chosen]
        (updated,) = fold(ctx, scatter, [flat[where]], [sources[chosen]], [flat.dtype])
        flat[where] = updated


# ---------------------------------------------------------------------------------------------
# sort, topk


def _key_order(ctx: Context, computation: Computation, arrays: list,
               axis: int) -> np.ndarray | None:
    """The stable sort order for a recognised lexicographic comparator (numpy's lexsort of
    each key's values), or None when the comparator is not one or its keys hold NaNs under a
    FLOAT compare (no strict weak order)."""
    keys = recognize_comparator(computation)
    if keys is None:
        return None
    columns = []
    for key in reversed(keys):  # np.lexsort takes the major key last
        values = _key_values(ctx, computation, key, arrays[key.operand])
        if values is None:
            return None
        # Dense ranks: equal keys tie, and a descending key is an ascending negated rank.
        _, rank = np.unique(values, return_inverse=True)
        rank = rank.reshape(values.shape)
        columns.append(-rank if key.descending else rank)
    moved = [np.moveaxis(c, axis, -1) for c in columns]
    return np.moveaxis(np.lexsort(moved, axis=-1), -1, axis)


def _key_values(ctx: Context, computation: Computation, key, operand: np.ndarray):
    """The key expression evaluated on every element of `operand`, as sortable values."""
    values = {id(key.parameter): operand}
    needed = _reached(key.expression)
    for inst in computation.instructions:
        if id(inst) in values or id(inst) not in needed:
            continue
        args = [values[id(o)] for o in inst.operands]
        if inst.op.name == "bitcast-convert":  # the rule reshapes to the scalar shape
            values[id(inst)] = np.asarray(args[0]).view(inst.shape.dtype.array_dtype)
        else:
            with np.errstate(all="ignore"):
                values[id(inst)] = np.broadcast_to(EVALUATE.lookup(inst.op.name)(
                    inst, args, ctx), operand.shape)
    result = np.asarray(values[id(key.expression)])
    if result.dtype.kind == "c":
        return None
    if is_float(result.dtype):
        kind = key.comparison.value if key.comparison is not None else "FLOAT"
        if kind == "TOTALORDER":
            return total_order_key(result)
        result = result.astype(np.float64)
        if np.isnan(result).any():
            return None
    return result


def _reached(root: Instruction) -> set[int]:
    """The ids of `root` and every instruction it reads."""
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen.add(id(node))
            stack.extend(node.operands)
    return seen


def _argsort_stable(keys: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    if not descending:
        return np.argsort(keys, axis=axis, kind="stable")
    n = keys.shape[axis]
    reversed_keys = np.flip(keys, axis=axis)
    order = np.argsort(reversed_keys, axis=axis, kind="stable")
    return np.flip(n - 1 - order, axis=axis)


_PAIRWISE_LIMIT = 1 << 24  # elements of the (slices, n, n) comparison table


def _sort_pairwise(ctx: Context, computation: Computation, arrays: list,
                   axis: int) -> np.ndarray | None:
    """Stable order from one vectorised call of the comparator on every pair of a slice.

    For a strict weak order, element i lands at ``#{j: cmp(j, i)} + #{j < i: tie(i, j)}``;
    a comparator that is no strict weak order gives colliding positions (returns None).
    """
    moved = [np.moveaxis(a, axis, -1) for a in arrays]
    n = moved[0].shape[-1]
    table = moved[0].shape + (n,)
    args = []
    for m in moved:
        args.extend((np.broadcast_to(m[..., :, None], table), np.broadcast_to(m[..., None, :],
                                                                              table)))
    with np.errstate(all="ignore"):
        less = np.broadcast_to(np.asarray(ctx.call(computation, args), dtype=bool), table)
    before = np.swapaxes(less, -1, -2)  # [i, j]: j goes before i
    earlier = np.tri(n, n, -1, dtype=bool)  # [i, j]: j < i
    position = before.sum(axis=-1) + (~less & ~before & earlier).sum(axis=-1)
    if not np.array_equal(np.sort(position, axis=-1),
                          np.broadcast_to(np.arange(n), position.shape)):
        return None
    order = np.empty_like(position)
    np.put_along_axis(order, position, np.broadcast_to(np.arange(n), position.shape), axis=-1)
    return np.moveaxis(order, -1, axis)


def _sort_general(ctx: Context, computation: Computation, arrays: list, axis: int) -> np.ndarray:
    moved = [np.moveaxis(a, axis, -1) for a in arrays]
    n = moved[0].shape[-1]
    order = np.empty(moved[0].shape, dtype=np.int64)
    for prefix in np.ndindex(moved[0].shape[:-1]):
        rows = [m[prefix] for m in moved]

        def compare(i, j, rows=rows):
            if bool(ctx.call(computation, _pair_args(rows, i, j))):
                return -1
            if bool(ctx.call(computation, _pair_args(rows, j, i))):
                return 1
            return 0

        order[prefix] = sorted(range(n), key=functools.cmp_to_key(compare))
    return np.moveaxis(order, -1, axis)


def _pair_args(rows, i, j):
    args = []
    for row in rows:
        args.extend((np.asarray(row[i]), np.asarray(row[j])))
    return args


@EVALUATE.register("sort")
def sort_rule(inst: Instruction, operands: list, ctx: Context):
    (axis,) = inst.attrs.dimensions
    computation = inst.attrs.to_apply
    first = operands[0]
    if first.ndim == 0 or first.shape[axis] <= 1:
        return _pack(inst, [np.array(o) for o in operands])
    order = _key_order(ctx, computation, operands, axis)
    if order is None and is_elementwise(computation) \
            and first.size * first.shape[axis] <= _PAIRWISE_LIMIT:
        order = _sort_pairwise(ctx, computation, operands, axis)
    if order is None:
        order = _sort_general(ctx, computation, operands, axis)
    return _pack(inst, [np.take_along_axis(o, order, axis=axis) for o in operands])


def top_k(x: np.ndarray, k: int, largest: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The k largest (or smallest) along the last dim, sorted, ties by lower index; floats in
    TOTALORDER (NaN above +inf)."""
    key = total_order_key(x) if is_float(x.dtype) else x
    order = _argsort_stable(key, x.ndim - 1, largest)[..., :k]
    return np.take_along_axis(x, order, axis=-1), order


@EVALUATE.register("topk")
def topk_rule(inst: Instruction, operands: list, ctx: Context):
    values, indices = top_k(operands[0], inst.attrs.k, inst.attrs.largest)
    return values, indices.astype(np.int32)


# ---------------------------------------------------------------------------------------------
# map


@EVALUATE.register("map")
def map_rule(inst: Instruction, operands: list, ctx: Context):
    computation = inst.attrs.to_apply
    dtype = inst.shape.dtype.numpy
    shape = inst.shape.dims
    if is_elementwise(computation):
        with np.errstate(all="ignore"):
            result = ctx.call(computation, list(operands))
        return np.broadcast_to(np.asarray(result), shape).astype(dtype)
    result = np.empty(shape, dtype=dtype)
    for index in np.ndindex(shape):
        result[index] = ctx.call(computation, _scalar_args(operands, index))
    return result
