"""Reference evaluator: dynamic-slice, dynamic-update-slice, gather, scatter (op_semantics §9,
§10), checked by hand and against element-by-element transcriptions of the spec. Every test
runs on the reference evaluator and again on the CPU backend (its indexing kernels)."""

import functools
import itertools
import sys

import numpy as np
import pytest
import ref_helpers
from ref_helpers import evaluate_on, run_op, shape_of  # noqa: F401 (run_op: see backend)

from xla_spmd.backends.reference.evaluator import evaluate
from xla_spmd.ir import F32, S32, ArrayShape, Builder, Module, TupleShape, parse_hlo


@pytest.fixture(autouse=True, params=["reference", "cpu"])
def backend(request, monkeypatch):
    """The backend this module's tests evaluate on (``run_op`` and ``evaluate`` go to it)."""
    module = sys.modules[__name__]
    monkeypatch.setattr(module, "run_op", functools.partial(ref_helpers.run_op,
                                                             backend=request.param))
    monkeypatch.setattr(module, "evaluate",
                        lambda m, arrays: evaluate_on(request.param, m, list(arrays)))
    return request.param


# ---------------------------------------------------------------------------------------------
# Dynamic slices


def test_dynamic_slice_clamps_scalar_starts():
    x = np.arange(20, dtype=np.int32).reshape(4, 5)
    for i, j in [(-1, 0), (3, 4), (1, 2), (100, -100)]:
        result = run_op("dynamic-slice", x, np.array(i, np.int32), np.array(j, np.int32),
                        dynamic_slice_sizes=(2, 3))
        ci, cj = min(max(i, 0), 2), min(max(j, 0), 2)
        np.testing.assert_array_equal(result, x[ci:ci + 2, cj:cj + 3])


def test_dynamic_slice_index_vector_form_and_unsigned():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    result = run_op("dynamic-slice", x, np.array([3, 1], np.int64), dynamic_slice_sizes=(2, 2))
    np.testing.assert_array_equal(result, x[2:4, 1:3])
    big = np.array(2**32 - 1, np.uint32)  # read unsigned: huge, clamps to the end
    result = run_op("dynamic-slice", x, big, np.array(0, np.uint32), dynamic_slice_sizes=(1, 5))
    np.testing.assert_array_equal(result, x[3:4])


def test_dynamic_update_slice_clamps():
    x = np.zeros((4, 4), np.int32)
    update = np.ones((2, 3), np.int32)
    result = run_op("dynamic-update-slice", x, update, np.array(3, np.int32),
                    np.array(-2, np.int32))
    expected = x.copy()
    expected[2:4, 0:3] = 1
    np.testing.assert_array_equal(result, expected)
    assert not x.any()  # the operand is not modified
    empty = run_op("dynamic-update-slice", x, np.zeros((0, 2), np.int32),
                   np.array(9, np.int32), np.array(9, np.int32))
    np.testing.assert_array_equal(empty, x)


# ---------------------------------------------------------------------------------------------
# Gather


def gather_by_element(operand, indices, offset_dims, collapsed, start_map, index_vector_dim,
                      sizes, operand_batching=(), indices_batching=()):
    """op_semantics §10.1, one result element at a time."""
    indices = np.asarray(indices)
    if index_vector_dim == indices.ndim:
        indices = indices[..., None]
    batch_dims = [n for d, n in enumerate(indices.shape) if d != index_vector_dim]
    offset_operand_dims = [d for d in range(operand.ndim)
                           if d not in collapsed and d not in operand_batching]
    rank = len(batch_dims) + len(offset_operand_dims)
    batch_result_dims = [d for d in range(rank) if d not in offset_dims]
    shape = [0] * rank
    for d, n in zip(batch_result_dims, batch_dims):
        shape[d] = n
    for d, od in zip(offset_dims, offset_operand_dims):
        shape[d] = sizes[od]
    result = np.zeros(shape, operand.dtype)
    for r in itertools.product(*map(range, shape)):
        bi = [r[d] for d in batch_result_dims]
        index = list(bi)
        index.insert(index_vector_dim, slice(None))
        vector = indices[tuple(index)]
        full = [0] * operand.ndim
        for k, d in enumerate(start_map):
            full[d] = min(max(int(vector[k]), 0), operand.shape[d] - sizes[d])
        for d, sd in zip(operand_batching, indices_batching):
            full[d] += bi[sd if sd < index_vector_dim else sd - 1]
        for k, d in enumerate(offset_operand_dims):
            full[d] += r[offset_dims[k]]
        result[r] = operand[tuple(full)]
    return result


def run_gather(operand, indices, **attrs):
    expected = gather_by_element(operand, indices, attrs["offset_dims"],
                                 attrs["collapsed_slice_dims"], attrs["start_index_map"],
                                 attrs["index_vector_dim"], attrs["slice_sizes"],
                                 attrs.get("operand_batching_dims", ()),
                                 attrs.get("start_indices_batching_dims", ()))
    result = run_op("gather", operand, indices, **attrs)
    np.testing.assert_array_equal(result, expected)
    return result


def test_gather_rows_with_clamping():
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    idx = np.array([[4], [0], [-3], [9]], np.int32)
    result = run_gather(x, idx, offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,),
                        index_vector_dim=1, slice_sizes=(1, 3))
    np.testing.assert_array_equal(result, x[[4, 0, 0, 4]])


def test_gather_windows_offset_dims_first_and_implicit_vector_dim():
    x = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    idx = np.array([[0, 3], [2, 1], [1, 4]], np.int64)
    run_gather(x, idx, offset_dims=(0, 2), collapsed_slice_dims=(1,), start_index_map=(1, 2),
               index_vector_dim=0, slice_sizes=(2, 1, 3))
    run_gather(x, np.array([[2, 0], [1, 1]], np.int32), offset_dims=(2, 3),
               collapsed_slice_dims=(0,), start_index_map=(0,), index_vector_dim=2,
               slice_sizes=(1, 4, 2))


def test_gather_batching_dims():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    idx = np.array([[[1], [2]], [[0], [3]]], np.int32)  # [batch=2, 2, 1]
    run_gather(x, idx, offset_dims=(2,), collapsed_slice_dims=(2,), start_index_map=(2,),
               index_vector_dim=2, slice_sizes=(1, 3, 1), operand_batching_dims=(0,),
               start_indices_batching_dims=(0,))


def test_gather_random_against_spec():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(6, 7, 3)).astype(np.float32)
    idx = rng.integers(-3, 9, size=(4, 2, 2)).astype(np.int32)
    run_gather(x, idx, offset_dims=(2, 3), collapsed_slice_dims=(0,), start_index_map=(0, 1),
               index_vector_dim=2, slice_sizes=(1, 3, 2))
    run_gather(x, idx, offset_dims=(0, 1, 2), collapsed_slice_dims=(), start_index_map=(2, 1),
               index_vector_dim=1, slice_sizes=(6, 2, 2))


def test_gather_empty_indices():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    result = run_op("gather", x, np.zeros((0, 1), np.int32), offset_dims=(1,),
                    collapsed_slice_dims=(0,), start_index_map=(0,), index_vector_dim=1,
                    slice_sizes=(1, 2))
    assert result.shape == (0, 2)


# ---------------------------------------------------------------------------------------------
# Scatter


def scatter_by_element(operands, indices, updates, combine, update_window_dims, inserted,
                       to_operand, index_vector_dim, input_batching=(), indices_batching=()):
    """op_semantics §10.2 with XLA's whole-window out-of-bounds rule, sequential order."""
    outputs = [np.array(o) for o in operands]
    indices = np.asarray(indices)
    if index_vector_dim == indices.ndim:
        indices = indices[..., None]
    shape = outputs[0].shape
    rank = len(shape)
    update_shape = updates[0].shape
    scatter_dims = [d for d in range(len(update_shape)) if d not in update_window_dims]
    window_operand_dims = [d for d in range(rank) if d not in inserted
                           and d not in input_batching]
    window_size = [1] * rank
    for od, ud in zip(window_operand_dims, update_window_dims):
        window_size[od] = update_shape[ud]
    for usi in itertools.product(*[range(update_shape[d]) for d in scatter_dims]):
        index = list(usi)
        index.insert(index_vector_dim, slice(None))
        vector = indices[tuple(index)]
        start = [0] * rank
        for k, d in enumerate(to_operand):
            start[d] = int(vector[k])
        for d, sd in zip(input_batching, indices_batching):
            start[d] += usi[sd if sd < index_vector_dim else sd - 1]
        if any(s < 0 or s > n - w for s, n, w in zip(start, shape, window_size)):
            continue
        for window in itertools.product(*[range(update_shape[d]) for d in update_window_dims]):
            target = list(start)
            for od, w in zip(window_operand_dims, window):
                target[od] += w
            u = [0] * len(update_shape)
            for d, i in zip(scatter_dims, usi):
                u[d] = i
            for d, i in zip(update_window_dims, window):
                u[d] = i
            current = [o[tuple(target)] for o in outputs]
            new = combine(*current, *[up[tuple(u)] for up in updates])
            new = new if isinstance(new, tuple) else (new,)
            for o, v in zip(outputs, new):
                o[tuple(target)] = v
    return outputs


def reducer(opcode, dtype, count=1):
    b = Builder(f"reduce_{opcode}")
    scalar = ArrayShape(dtype, ())
    params = [b.parameter(scalar, f"a{i}") for i in range(2 * count)]
    if opcode == "update":
        return b.build(params[1])
    if opcode == "current":
        return b.build(params[0])
    if count == 1:
        return b.build(b.op(opcode, params[0], params[1]))
    results = [b.op(opcode, params[i], params[count + i]) for i in range(count)]
    return b.build(b.op("tuple", *results))


def run_scatter(operands, indices, updates, computation, combine, **attrs):
    builder = Builder("main")
    arrays = list(operands) + [indices] + list(updates)
    params = [builder.parameter(shape_of(a), f"p{i}") for i, a in enumerate(arrays)]
    shape = (TupleShape(tuple(shape_of(o) for o in operands)) if len(operands) > 1
             else None)
    root = builder.op("scatter", *params, to_apply=computation, shape=shape, **attrs)
    result = evaluate(Module.from_entry("m", builder.build(root)), arrays)
    results = list(result) if isinstance(result, tuple) else [result]
    expected = scatter_by_element(operands, indices, updates, combine,
                                  attrs["update_window_dims"], attrs["inserted_window_dims"],
                                  attrs["scatter_dims_to_operand_dims"],
                                  attrs["index_vector_dim"],
                                  attrs.get("input_batching_dims", ()),
                                  attrs.get("scatter_indices_batching_dims", ()))
    for r, e in zip(results, expected):
        np.testing.assert_array_equal(r, e)
    return results


ROWS = dict(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,),
            index_vector_dim=1)

COMBINERS = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
             "minimum": np.minimum, "update": lambda c, u: u, "current": lambda c, u: c,
             "subtract": np.subtract}


@pytest.mark.parametrize("opcode", list(COMBINERS))
def test_scatter_duplicates_and_out_of_bounds(opcode):
    x = np.arange(5, dtype=np.float32)
    idx = np.array([[1], [3], [1], [-1], [5], [1]], np.int32)
    updates = np.array([10, 20, 30, 40, 50, 60], np.float32)
    run_scatter([x], idx, [updates], reducer(opcode, F32), COMBINERS[opcode], **ROWS)


def test_scatter_add_matches_jax_at_add():
    x = np.zeros(4, np.int32)
    idx = np.array([[0], [0], [3], [7]], np.int32)
    (result,) = run_scatter([x], idx, [np.array([1, 2, 3, 4], np.int32)], reducer("add", S32),
                            np.add, **ROWS)
    np.testing.assert_array_equal(result, [3, 0, 0, 3])


def test_scatter_whole_window_is_dropped_when_it_straddles():
    x = np.zeros((4, 6), np.float32)
    idx = np.array([[0, 4], [2, 1], [3, 0], [-1, 2]], np.int32)
    updates = np.ones((4, 2, 3), np.float32)
    (result,) = run_scatter([x], idx, [updates], reducer("add", F32), np.add,
                            update_window_dims=(1, 2), inserted_window_dims=(),
                            scatter_dims_to_operand_dims=(0, 1), index_vector_dim=1)
    expected = np.zeros((4, 6), np.float32)
    expected[2:4, 1:4] = 1  # only the window at (2, 1) fits entirely
    np.testing.assert_array_equal(result, expected)


def test_scatter_window_dims_interleaved():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(5, 4, 3)).astype(np.float32)
    idx = rng.integers(0, 4, size=(2, 3, 2)).astype(np.int32)
    updates = rng.normal(size=(2, 4, 3, 2)).astype(np.float32)  # window dims 1, 3
    run_scatter([x], idx, [updates], reducer("add", F32), np.add,
                update_window_dims=(1, 3), inserted_window_dims=(1,),
                scatter_dims_to_operand_dims=(1, 0), index_vector_dim=2)
    run_scatter([x], idx, [updates], reducer("subtract", F32), np.subtract,
                update_window_dims=(1, 3), inserted_window_dims=(1,),
                scatter_dims_to_operand_dims=(1, 0), index_vector_dim=2)


def test_scatter_batching_dims():
    x = np.zeros((2, 5), np.float32)
    idx = np.array([[1, 1], [4, 0]], np.int32)  # [batch, k], scalar index per element
    updates = np.arange(1, 5, dtype=np.float32).reshape(2, 2)
    run_scatter([x], idx, [updates], reducer("add", F32), np.add,
                update_window_dims=(), inserted_window_dims=(1,),
                scatter_dims_to_operand_dims=(1,), index_vector_dim=2,
                input_batching_dims=(0,), scatter_indices_batching_dims=(0,))


def test_variadic_scatter_calls_the_computation():
    a, b = np.zeros(3, np.float32), np.ones(3, np.float32)
    idx = np.array([[0], [2], [0]], np.int32)
    ua, ub = np.array([1, 2, 3], np.float32), np.array([4, 5, 6], np.float32)

    def combine(c0, c1, u0, u1):
        return c0 + u0, c1 * u1
    builder = Builder("pair")
    p = [builder.parameter(ArrayShape(F32, ()), f"a{i}") for i in range(4)]
    computation = builder.build(builder.op("tuple", builder.add(p[0], p[2]),
                                           builder.multiply(p[1], p[3])))
    run_scatter([a, b], idx, [ua, ub], computation, combine, **ROWS)


def test_scatter_pred_or_and_integer_max():
    x = np.array([False, False, True])
    idx = np.array([[0], [1], [0]], np.int32)
    from xla_spmd.ir import PRED
    run_scatter([x], idx, [np.array([True, False, False])], reducer("or", PRED),
                np.logical_or, **ROWS)
    y = np.array([5, -5, 0], np.int32)
    run_scatter([y], idx, [np.array([1, 3, 9], np.int32)], reducer("maximum", S32),
                np.maximum, **ROWS)


def test_scatter_bf16_add_rounds_each_step():
    from xla_spmd.ir import BF16
    x = np.zeros(2, BF16.numpy)
    idx = np.array([[0], [0], [0], [1]], np.int32)
    updates = np.array([256, 1, 1, 3], BF16.numpy)
    (result,) = run_scatter([x], idx, [updates], reducer("add", BF16), np.add, **ROWS)
    np.testing.assert_array_equal(result.astype(np.float32), [256, 3])


def test_scatter_into_a_transposed_operand():
    """The operand of a scatter in another memory layout (a transpose's view): the updates
    land in the result, at row-major positions of the transposed shape."""
    module = parse_hlo("""HloModule m
add {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT sum = f32[] add(lhs, rhs)
}
ENTRY e {
  p = f32[2,3] parameter(0)
  t = f32[3,2] transpose(p), dimensions={1,0}
  i = s32[1,1] constant({{1}})
  u = f32[1,2] constant({{10, 20}})
  ROOT r = f32[3,2] scatter(t, i, u), update_window_dims={1}, inserted_window_dims={0},
    scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}""")
    got = np.asarray(evaluate(module, [np.arange(6, dtype=np.float32).reshape(2, 3)]))
    np.testing.assert_array_equal(got, [[0, 3], [11, 24], [2, 5]])
