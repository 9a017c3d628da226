"""Definitions of reductions, windowed ops, dot, convolution, gather, scatter, sort, linalg."""

from __future__ import annotations

from xla_spmd.ir.attributes import Precision  # noqa: F401 (documents PRECISION_LIST values)
from xla_spmd.ir.dtypes import C64, C128, F32, F64, S32
from xla_spmd.ir.opdefs import A, K, _array, _check_dims, _fail, tuple_or_single
from xla_spmd.ir.ops import Family, define
from xla_spmd.ir.shapes import ArrayShape, TupleShape


def _split_variadic(name, operands):
    if len(operands) % 2:
        _fail(name, f"needs as many init values as inputs, got {len(operands)} operands")
    half = len(operands) // 2
    inputs = [_array(name, s, "input") for s in operands[:half]]
    inits = [_array(name, s, "init value") for s in operands[half:]]
    for x in inputs[1:]:
        if x.dims != inputs[0].dims:
            _fail(name, f"inputs must share dims: {inputs[0]} vs {x}")
    for init in inits:
        if init.rank:
            _fail(name, f"init value {init} must be a scalar")
    return inputs, inits


def _reducer_result_types(name, attrs, inits, values=None):
    """Element types of the results: the reducer's result types (they may promote).

    The reducer takes (accumulators..., values...) scalars: the init types, then the types of
    the elements being combined (`values`, the inputs' element types; default the inits')."""
    computation = attrs.to_apply
    expected = [ArrayShape(s.dtype, ()) for s in [*inits, *(values or inits)]]
    params = computation.parameter_shapes
    if len(params) != len(expected) or not all(p.same_type(e) for p, e in zip(params, expected)):
        _fail(name, f"reducer {computation.name} takes ({', '.join(map(str, params))}), "
                    f"expected ({', '.join(map(str, expected))})")
    root = computation.root.shape
    leaves = root.elements if isinstance(root, TupleShape) else (root,)
    if len(leaves) != len(inits):
        _fail(name, f"reducer {computation.name} returns {len(leaves)} values, "
                    f"expected {len(inits)}")
    return [leaf.dtype for leaf in leaves]


def _infer_reduce(operands, attrs, declared):
    inputs, inits = _split_variadic("reduce", operands)
    _check_dims("reduce", attrs.dimensions, inputs[0].rank)
    kept = tuple(n for d, n in enumerate(inputs[0].dims) if d not in attrs.dimensions)
    dtypes = _reducer_result_types("reduce", attrs, inits, inputs)
    return tuple_or_single(ArrayShape(t, kept) for t in dtypes)


def _infer_reduce_window(operands, attrs, declared):
    inputs, inits = _split_variadic("reduce-window", operands)
    window = attrs.window
    if window.rank != inputs[0].rank:
        _fail("reduce-window", f"window has {window.rank} dims, input {inputs[0]} has "
                               f"{inputs[0].rank}")
    dims = tuple(w.output_size(n) for w, n in zip(window.dims, inputs[0].dims))
    dtypes = _reducer_result_types("reduce-window", attrs, inits, inputs)
    return tuple_or_single(ArrayShape(t, dims) for t in dtypes)


def _infer_select_and_scatter(operands, attrs, declared):
    operand, source, init = (_array("select-and-scatter", s) for s in operands)
    expected = tuple(w.output_size(n) for w, n in zip(attrs.window.dims, operand.dims))
    if source.dims != expected:
        _fail("select-and-scatter", f"source {source} must have dims {list(expected)}, the "
                                    f"window's output over {operand}")
    return ArrayShape(operand.dtype, operand.dims)


define("reduce", Family.REDUCTION, _infer_reduce, operands=(2, None),
       attrs=(A("dimensions", K.INT_LIST), A("to_apply", K.COMPUTATION)))
define("reduce-window", Family.REDUCTION, _infer_reduce_window, operands=(2, None),
       attrs=(A("window", K.WINDOW), A("to_apply", K.COMPUTATION)))
define("select-and-scatter", Family.REDUCTION, _infer_select_and_scatter, operands=3,
       attrs=(A("window", K.WINDOW), A("select", K.COMPUTATION), A("scatter", K.COMPUTATION)))


def _result_dtype(name, lhs, declared):
    if declared is not None:
        return _array(name, declared, "result").dtype
    return lhs.dtype


def _infer_dot(operands, attrs, declared):
    lhs, rhs = (_array("dot", s) for s in operands)
    lb, lc = attrs.lhs_batch_dims, attrs.lhs_contracting_dims
    rb, rc = attrs.rhs_batch_dims, attrs.rhs_contracting_dims
    if len(lb) != len(rb) or len(lc) != len(rc):
        _fail("dot", "lhs and rhs must list as many batch and contracting dims")
    _check_dims("dot", lb + lc, lhs.rank, "lhs batch+contracting dims")
    _check_dims("dot", rb + rc, rhs.rank, "rhs batch+contracting dims")
    for a, b in zip(lb + lc, rb + rc):
        if lhs.dims[a] != rhs.dims[b]:
            _fail("dot", f"lhs dim {a} (size {lhs.dims[a]}) and rhs dim {b} (size "
                         f"{rhs.dims[b]}) are paired but differ")
    if lhs.dtype is not rhs.dtype and declared is None:
        _fail("dot", f"operand types differ: {lhs} vs {rhs}")
    dims = ([lhs.dims[d] for d in lb]
            + [n for d, n in enumerate(lhs.dims) if d not in lb + lc]
            + [n for d, n in enumerate(rhs.dims) if d not in rb + rc])
    return ArrayShape(_result_dtype("dot", lhs, declared), tuple(dims))


define("dot", Family.CONTRACTION, _infer_dot, operands=2,
       attrs=(A("lhs_batch_dims", K.INT_LIST, ()), A("lhs_contracting_dims", K.INT_LIST),
              A("rhs_batch_dims", K.INT_LIST, ()), A("rhs_contracting_dims", K.INT_LIST),
              A("operand_precision", K.PRECISION_LIST, None), A("algorithm", K.RAW, None)))


def _infer_convolution(operands, attrs, declared):
    lhs, rhs = (_array("convolution", s) for s in operands)
    dn, window = attrs.dim_labels, attrs.window
    spatial = len(dn.input_spatial)
    if lhs.rank != spatial + 2 or rhs.rank != spatial + 2 or window.rank != spatial:
        _fail("convolution", f"ranks of {lhs}, {rhs} and the {window.rank}-d window do not "
                             f"match dim_labels {dn.to_labels()}")
    groups, batch_groups = attrs.feature_group_count, attrs.batch_group_count
    features = lhs.dims[dn.input_feature]
    if features != rhs.dims[dn.kernel_input_feature] * groups:
        _fail("convolution", f"input features {features} != kernel input features "
                             f"{rhs.dims[dn.kernel_input_feature]} x feature_group_count {groups}")
    out_features = rhs.dims[dn.kernel_output_feature]
    batch = lhs.dims[dn.input_batch]
    if out_features % groups or out_features % batch_groups or batch % batch_groups:
        _fail("convolution", "group counts must divide the feature and batch sizes")
    for i, w in enumerate(window.dims):
        if w.size != rhs.dims[dn.kernel_spatial[i]]:
            _fail("convolution", f"window size {w.size} of spatial dim {i} != kernel size "
                                 f"{rhs.dims[dn.kernel_spatial[i]]}")
    dims = [0] * (spatial + 2)
    dims[dn.output_batch] = lhs.dims[dn.input_batch] // batch_groups
    dims[dn.output_feature] = out_features
    for i, d in enumerate(dn.output_spatial):
        dims[d] = window.dims[i].output_size(lhs.dims[dn.input_spatial[i]])
    return ArrayShape(_result_dtype("convolution", lhs, declared), tuple(dims))


define("convolution", Family.CONTRACTION, _infer_convolution, operands=2,
       attrs=(A("window", K.WINDOW), A("dim_labels", K.CONV_DIMS),
              A("feature_group_count", K.INT, 1), A("batch_group_count", K.INT, 1),
              A("operand_precision", K.PRECISION_LIST, None)))


def _batch_dims_of(indices: ArrayShape, index_vector_dim: int):
    return [n for d, n in enumerate(indices.dims) if d != index_vector_dim]


def _infer_gather(operands, attrs, declared):
    operand, indices = (_array("gather", s) for s in operands)
    if not indices.dtype.is_integer:
        _fail("gather", f"start indices must be integers, got {indices}")
    sizes = attrs.slice_sizes
    collapsed = set(attrs.collapsed_slice_dims) | set(attrs.operand_batching_dims)
    if len(sizes) != operand.rank:
        _fail("gather", f"slice_sizes has {len(sizes)} entries for {operand}")
    for d in collapsed:
        if sizes[d] > 1:
            _fail("gather", f"collapsed/batching dim {d} must have slice size <= 1")
    offsets = [sizes[d] for d in range(operand.rank) if d not in collapsed]
    if len(offsets) != len(attrs.offset_dims):
        _fail("gather", f"offset_dims={list(attrs.offset_dims)} must list {len(offsets)} dims")
    batch = _batch_dims_of(indices, attrs.index_vector_dim)
    rank = len(batch) + len(offsets)
    dims, batch_iter, offset_iter = [], iter(batch), iter(offsets)
    for d in range(rank):
        dims.append(next(offset_iter) if d in attrs.offset_dims else next(batch_iter))
    return ArrayShape(operand.dtype, tuple(dims))


define("gather", Family.INDEXING, _infer_gather, operands=2,
       attrs=(A("offset_dims", K.INT_LIST), A("collapsed_slice_dims", K.INT_LIST),
              A("start_index_map", K.INT_LIST),
              A("operand_batching_dims", K.INT_LIST, ()),
              A("start_indices_batching_dims", K.INT_LIST, ()),
              A("index_vector_dim", K.INT), A("slice_sizes", K.INT_LIST),
              A("indices_are_sorted", K.BOOL, False)))


def _infer_scatter(operands, attrs, declared):
    if len(operands) % 2 == 0:
        _fail("scatter", "needs N inputs, one index array and N updates")
    n = len(operands) // 2
    inputs = [_array("scatter", s) for s in operands[:n]]
    indices = _array("scatter", operands[n], "indices")
    updates = [_array("scatter", s, "updates") for s in operands[n + 1:]]
    if not indices.dtype.is_integer:
        _fail("scatter", f"scatter indices must be integers, got {indices}")
    window = [d for d in range(inputs[0].rank) if d not in attrs.inserted_window_dims
              and d not in attrs.input_batching_dims]
    if len(window) != len(attrs.update_window_dims):
        _fail("scatter", f"update_window_dims={list(attrs.update_window_dims)} must list "
                         f"{len(window)} dims")
    expected_scatter = _batch_dims_of(indices, attrs.index_vector_dim)
    for update in updates:
        scatter_dims = [n for d, n in enumerate(update.dims)
                        if d not in attrs.update_window_dims]
        if scatter_dims != expected_scatter:
            _fail("scatter", f"update {update} scatter dims {scatter_dims} must equal the "
                             f"index dims {expected_scatter}")
    dtypes = _reducer_result_types("scatter", attrs, inputs, updates)
    return tuple_or_single(ArrayShape(t, x.dims) for t, x in zip(dtypes, inputs))


define("scatter", Family.INDEXING, _infer_scatter, operands=(3, None),
       attrs=(A("update_window_dims", K.INT_LIST), A("inserted_window_dims", K.INT_LIST),
              A("scatter_dims_to_operand_dims", K.INT_LIST),
              A("input_batching_dims", K.INT_LIST, ()),
              A("scatter_indices_batching_dims", K.INT_LIST, ()),
              A("index_vector_dim", K.INT), A("indices_are_sorted", K.BOOL, False),
              A("unique_indices", K.BOOL, False), A("to_apply", K.COMPUTATION)))


def _infer_sort(operands, attrs, declared):
    shapes = [_array("sort", s) for s in operands]
    for s in shapes[1:]:
        if s.dims != shapes[0].dims:
            _fail("sort", f"operands must share dims: {shapes[0]} vs {s}")
    (dim,) = attrs.dimensions
    if not 0 <= dim < max(shapes[0].rank, 1):
        _fail("sort", f"dimension {dim} out of range for {shapes[0]}")
    return tuple_or_single(ArrayShape(s.dtype, s.dims) for s in shapes)


define("sort", Family.SORT, _infer_sort, operands=(1, None),
       attrs=(A("dimensions", K.INT_LIST), A("is_stable", K.BOOL, False),
              A("to_apply", K.COMPUTATION)))


def _infer_topk(operands, attrs, declared):
    x = _array("topk", operands[0])
    dims = x.dims[:-1] + (attrs.k,)
    return TupleShape((ArrayShape(x.dtype, dims), ArrayShape(S32, dims)))


define("topk", Family.SORT, _infer_topk, operands=1,
       attrs=(A("k", K.INT), A("largest", K.BOOL, True)))


def _infer_fft(operands, attrs, declared):
    x = _array("fft", operands[0])
    lengths, kind = attrs.fft_length, attrs.fft_type.value
    if kind == "RFFT":
        dtype = C64 if x.dtype is F32 else C128
        return ArrayShape(dtype, x.dims[:-1] + (lengths[-1] // 2 + 1,))
    if kind == "IRFFT":
        dtype = F32 if x.dtype is C64 else F64
        return ArrayShape(dtype, x.dims[:-1] + (lengths[-1],))
    return ArrayShape(x.dtype, x.dims)


define("fft", Family.LINALG, _infer_fft, operands=1,
       attrs=(A("fft_type", K.FFT_TYPE), A("fft_length", K.INT_LIST)))
define("cholesky", Family.LINALG, lambda o, a, d: ArrayShape(o[0].dtype, o[0].dims),
       operands=1, attrs=(A("lower", K.BOOL, False),))
define("triangular-solve", Family.LINALG, lambda o, a, d: ArrayShape(o[1].dtype, o[1].dims),
       operands=2, attrs=(A("left_side", K.BOOL, False), A("lower", K.BOOL, False),
                          A("unit_diagonal", K.BOOL, False), A("transpose_a", K.RAW, None)))


# ---------------------------------------------------------------------------------------------
# Batch normalization (op_semantics.md BatchNorm*, the StableHLO spec's batch_norm_*): the
# operand is normalized over every dim but `feature_index`; the 1-D operands and results hold
# one value per feature. The operands' names, per op (`xla_spmd.ir.batch_norm` names its
# expansions' parameters by them); grad_output is operand-shaped, the others but the first 1-D.
BATCH_NORM_OPERANDS = {
    "batch-norm-inference": ("operand", "scale", "offset", "mean", "variance"),
    "batch-norm-training": ("operand", "scale", "offset"),
    "batch-norm-grad": ("operand", "scale", "mean", "variance", "grad_output"),
}


def _infer_batch_norm(name):
    def infer(operands, attrs, declared):
        x = _array(name, operands[0])
        if not x.dtype.is_float:
            _fail(name, f"operand must be of a floating-point type, got {x}")
        if not 0 <= attrs.feature_index < x.rank:
            _fail(name, f"feature_index={attrs.feature_index} must be in [0, {x.rank}) "
                        f"for the operand {x}")
        features = x.dims[attrs.feature_index]
        vector = ArrayShape(x.dtype, (features,))
        for label, shape in zip(BATCH_NORM_OPERANDS[name][1:], operands[1:]):
            if label == "grad_output":
                continue
            shape = _array(name, shape, label)
            if shape != vector:
                _fail(name, f"{label} must be {vector} (one {x.dtype} per feature: dim "
                            f"{attrs.feature_index} of the operand {x} has {features}), "
                            f"got {shape}")
        if name == "batch-norm-grad":
            grad = _array(name, operands[4], "grad_output")
            if grad != ArrayShape(x.dtype, x.dims):
                _fail(name, f"grad_output must have the operand's shape {x}, got {grad}")
        if name == "batch-norm-inference":
            return ArrayShape(x.dtype, x.dims)
        return TupleShape((ArrayShape(x.dtype, x.dims), vector, vector))
    return infer


for _name, _labels in BATCH_NORM_OPERANDS.items():
    define(_name, Family.NORMALIZATION, _infer_batch_norm(_name), operands=len(_labels),
           attrs=(A("epsilon", K.FLOAT), A("feature_index", K.INT)))
