"""gather, scatter and dynamic-slice under every combination of sharded operand dims,
sharded index dims and result shardings, on a 2x4 mesh, against the unpartitioned program on
the reference backend (issue 16: ``x[i]`` of a 2-D-sharded array declared a local shape the
op did not have). Indices include negative and out-of-range values, which gather and dynamic-slice
clamp."""

import itertools

import numpy as np
import pytest
from spmd_oracle import check

from xla_spmd.ir import F32, S32, ArrayShape, Builder, Module
from xla_spmd.mesh import make_mesh
from xla_spmd.sharding import TensorSharding

MESH = make_mesh({"x": 2, "y": 4})
AXES = ((), ("x",), ("y",))


def _shardings(rank: int):
    """Every sharding of a rank-`rank` tensor by no axis, x or y per dim (no axis twice)."""
    for dims in itertools.product(AXES, repeat=rank):
        used = [axis for axes in dims for axis in axes]
        if len(used) == len(set(used)):
            yield TensorSharding(MESH, [list(d) for d in dims])


def _name(sharding) -> str:
    return "".join("[" + "".join(sharding.dim_axes(d) and [a.name for a in
                   sharding.dim_axes(d)]) + "]" for d in range(sharding.rank))


# (name, operand dims, index dims, gather attributes, result dims): the forms the frontend
# emits for x[i], x[ids], x[:, ids], x[ids_row, ids_col] and take_along_axis.
GATHERS = [
    ("scalar_row", (8, 12), (1,), dict(offset_dims=(0,), collapsed_slice_dims=(0,),
                                       start_index_map=(0,), index_vector_dim=0,
                                       slice_sizes=(1, 12)), (12,)),
    ("rows", (8, 12), (6, 1), dict(offset_dims=(1,), collapsed_slice_dims=(0,),
                                   start_index_map=(0,), index_vector_dim=1,
                                   slice_sizes=(1, 12)), (6, 12)),
    ("columns", (8, 12), (6, 1), dict(offset_dims=(0,), collapsed_slice_dims=(1,),
                                      start_index_map=(1,), index_vector_dim=1,
                                      slice_sizes=(8, 1)), (8, 6)),
    ("points_window", (8, 12), (4, 2), dict(offset_dims=(1,), collapsed_slice_dims=(0,),
                                            start_index_map=(0, 1), index_vector_dim=1,
                                            slice_sizes=(1, 3)), (4, 3)),
    ("uneven_rows", (7, 10), (5, 1), dict(offset_dims=(1,), collapsed_slice_dims=(0,),
                                          start_index_map=(0,), index_vector_dim=1,
                                          slice_sizes=(1, 10)), (5, 10)),
    ("batched", (8, 12), (8, 3, 1), dict(offset_dims=(), collapsed_slice_dims=(1,),
                                         start_index_map=(1,), index_vector_dim=2,
                                         operand_batching_dims=(0,),
                                         start_indices_batching_dims=(0,),
                                         slice_sizes=(1, 1)), (8, 3)),
]


def _gather_module(operand_dims, index_dims, attrs, result_dims, operand_sharding,
                   index_sharding, result_sharding):
    b = Builder("main")
    operand = b.parameter(ArrayShape(F32, operand_dims), sharding=operand_sharding)
    indices = b.parameter(ArrayShape(S32, index_dims), sharding=index_sharding)
    out = b.gather(operand, indices, shape=ArrayShape(F32, result_dims),
                   sharding=result_sharding, **attrs)
    return Module.from_entry("m", b.build(out))


def _inputs(operand_dims, index_dims, seed):
    rng = np.random.default_rng(seed)
    operand = rng.standard_normal(operand_dims).astype(np.float32)
    indices = rng.integers(-2, max(operand_dims) + 2, index_dims).astype(np.int32)
    return [operand, indices]


@pytest.mark.parametrize("case", GATHERS, ids=[c[0] for c in GATHERS])
def test_gather_every_sharding_combination(case):
    name, operand_dims, index_dims, attrs, result_dims = case
    # Index vector dims (size 1 or 2) stay unsharded; every other index dim takes each option.
    vector_dim = attrs["index_vector_dim"]
    count = 0
    for operand_sharding in _shardings(len(operand_dims)):
        for index_sharding in _shardings(len(index_dims)):
            if vector_dim < len(index_dims) and index_sharding.dim_axes(vector_dim):
                continue
            for result_sharding in [None, *_shardings(len(result_dims))]:
                module = _gather_module(operand_dims, index_dims, attrs, result_dims,
                                        operand_sharding, index_sharding, result_sharding)
                try:
                    check(module, _inputs(operand_dims, index_dims, count), propagate=True)
                except Exception as error:
                    raise AssertionError(
                        f"{name}: operand {_name(operand_sharding)}, indices "
                        f"{_name(index_sharding)}, result "
                        f"{'open' if result_sharding is None else _name(result_sharding)}: "
                        f"{error}") from error
                count += 1
    assert count >= 7 * 3


DYNAMIC_SLICES = [((8, 12), (1, 12)), ((8, 12), (4, 12)), ((8, 12), (3, 5)), ((7, 10), (2, 10))]
STARTS = [(3, 0), (-2, 4), (9, 11), (0, -5)]  # clamped into range, as XLA does


@pytest.mark.parametrize("dims,sizes", DYNAMIC_SLICES, ids=str)
def test_dynamic_slice_every_sharding_combination(dims, sizes):
    rng = np.random.default_rng(0)
    operand = rng.standard_normal(dims).astype(np.float32)
    for operand_sharding in _shardings(2):
        for result_sharding in [None, *_shardings(2)]:
            for start in STARTS:
                b = Builder("main")
                x = b.parameter(ArrayShape(F32, dims), sharding=operand_sharding)
                i = b.parameter(ArrayShape(S32, ()))
                j = b.parameter(ArrayShape(S32, ()))
                out = b.dynamic_slice(x, i, j, dynamic_slice_sizes=sizes,
                                      shape=ArrayShape(F32, sizes), sharding=result_sharding)
                module = Module.from_entry("m", b.build(out))
                try:
                    check(module, [operand, np.int32(start[0]), np.int32(start[1])],
                          propagate=True)
                except Exception as error:
                    raise AssertionError(
                        f"dynamic-slice {sizes} of {dims} at {start}: operand "
                        f"{_name(operand_sharding)}, result "
                        f"{'open' if result_sharding is None else _name(result_sharding)}: "
                        f"{error}") from error


def _combiner(op: str):
    rb = Builder(f"combine_{op}")
    p, q = rb.parameter(ArrayShape(F32, ())), rb.parameter(ArrayShape(F32, ()))
    return rb.build(q if op == "set" else rb.op(op, p, q))


# (name, operand dims, index dims, update dims, scatter attributes): x.at[ids].op(u) by rows,
# by columns, and at points with a window. Updates whose window would leave the operand are
# skipped, which out-of-range indices exercise.
SCATTERS = [
    ("rows", (8, 12), (6, 1), (6, 12), dict(update_window_dims=(1,), inserted_window_dims=(0,),
                                           scatter_dims_to_operand_dims=(0,),
                                           index_vector_dim=1)),
    ("columns", (8, 12), (6, 1), (8, 6), dict(update_window_dims=(0,), inserted_window_dims=(1,),
                                             scatter_dims_to_operand_dims=(1,),
                                             index_vector_dim=1)),
    ("points_window", (8, 12), (4, 2), (4, 3), dict(update_window_dims=(1,),
                                                   inserted_window_dims=(0,),
                                                   scatter_dims_to_operand_dims=(0, 1),
                                                   index_vector_dim=1)),
]


@pytest.mark.parametrize("combiner", ["add", "set", "maximum"])
@pytest.mark.parametrize("case", SCATTERS, ids=[c[0] for c in SCATTERS])
def test_scatter_every_sharding_combination(case, combiner):
    """Scatter with out-of-range indices (their updates are skipped) under every sharding of
    operand, indices and updates. ``add`` and ``maximum`` draw repeated indices too; ``set``
    draws distinct ones, since XLA leaves the winner of a repeated index unspecified."""
    name, operand_dims, index_dims, update_dims, attrs = case
    vector_dim = attrs["index_vector_dim"]
    rng = np.random.default_rng(len(name))
    count = 0
    for operand_sharding in _shardings(len(operand_dims)):
        for index_sharding in _shardings(len(index_dims)):
            if index_sharding.dim_axes(vector_dim):
                continue
            for update_sharding in _shardings(len(update_dims)):
                b = Builder("main")
                operand = b.parameter(ArrayShape(F32, operand_dims), sharding=operand_sharding)
                indices = b.parameter(ArrayShape(S32, index_dims), sharding=index_sharding)
                updates = b.parameter(ArrayShape(F32, update_dims), sharding=update_sharding)
                out = b.scatter(operand, indices, updates, to_apply=_combiner(combiner),
                                **attrs)
                module = Module.from_entry("m", b.build(out))
                points = index_dims[0]
                if combiner == "set":  # distinct rows/columns/points, some out of range
                    span = max(operand_dims) + 4
                    flat = rng.permutation(span ** index_dims[1])[:points]
                    ids = np.stack(np.unravel_index(flat, (span,) * index_dims[1]), axis=1) - 2
                else:
                    ids = rng.integers(-2, max(operand_dims) + 2, index_dims)
                args = [rng.standard_normal(operand_dims).astype(np.float32),
                        ids.astype(np.int32).reshape(index_dims),
                        rng.standard_normal(update_dims).astype(np.float32)]
                try:
                    check(module, args, propagate=True)
                except Exception as error:
                    raise AssertionError(
                        f"{name} {combiner}: operand {_name(operand_sharding)}, indices "
                        f"{_name(index_sharding)}, updates {_name(update_sharding)}: {error}"
                    ) from error
                count += 1
    assert count >= 7 * 3
