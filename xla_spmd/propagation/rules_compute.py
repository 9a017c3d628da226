"""Sharding rules of reductions, windowed ops, dot, convolution, gather/scatter, sort, linalg.

Factor order follows Shardy's builders, so printed rules read alike: dot is batch, lhs
non-contracting, rhs non-contracting, contracting (``([i,j,l],[i,l,k])->([i,j,k])
reduction={l}``); convolution is batch, output feature, input feature, then spatial.
"""

from __future__ import annotations

from xla_spmd.ir import PRED, componentwise_kinds, reducer_kind
from xla_spmd.propagation.factors import FactorType
from xla_spmd.propagation.registry import (  # noqa: F401 (sharding_rule: doctests)
    RULES,
    builder_for,
    is_conservative,
    sharding_rule,
)

PASS = FactorType.PASS_THROUGH
PERM = FactorType.PERMUTATION
NEED = FactorType.NEED_REPLICATION
REDUCTION = FactorType.REDUCTION


@RULES.register("reduce")
def reduce_rule(inst):
    b = builder_for(inst)
    n = len(b.operand_dims) // 2
    x = b.operand_dims[0]
    reduced = set(inst.attrs.dimensions)
    inits = [None] * n
    out = 0
    for d, size in enumerate(x):
        if d in reduced:
            b.add(size, [d] * n + inits, [None] * n, REDUCTION)
        else:
            b.add(size, [d] * n + inits, [out] * n)
            out += 1
    return b.build()


def _trivial(w) -> bool:
    return (w.size, w.stride, w.padding_low, w.padding_high, w.lhs_dilation,
            w.rhs_dilation) == (1, 1, 0, 0, 1, 1)


@RULES.register("reduce-window")
def reduce_window_rule(inst):
    b = builder_for(inst)
    n = len(b.operand_dims) // 2
    out = b.result_dims[0]
    for d, size in enumerate(out):   # sized as the result: the number of windows
        window = inst.attrs.window.dims[d]
        kind = PASS if _trivial(window) else PERM
        b.add(size, [d] * n + [None] * n, [d] * n, kind,
              blocked=kind is PERM and is_conservative())
    return b.build()


@RULES.register("select-and-scatter")
def select_and_scatter_rule(inst):
    b = builder_for(inst)
    source = b.operand_dims[1]
    for d, size in enumerate(inst.shape.dims):
        if _trivial(inst.attrs.window.dims[d]):
            b.add(size, [d, d, None], [d])
        else:   # the source's dim replicated, the operand's permuted to the result
            b.add(source[d], [None, d, None], [None], NEED, blocked=is_conservative())
            b.add(size, [d, None, None], [d], PERM, blocked=is_conservative())
    return b.build()


@RULES.register("dot")
def dot_rule(inst):
    b = builder_for(inst)
    lhs, rhs = b.operand_dims
    a = inst.attrs
    out = 0
    for lb, rb in zip(a.lhs_batch_dims, a.rhs_batch_dims):
        b.add(lhs[lb], [lb, rb], [out])
        out += 1
    for d, size in enumerate(lhs):
        if d not in a.lhs_batch_dims and d not in a.lhs_contracting_dims:
            b.add(size, [d, None], [out])
            out += 1
    for d, size in enumerate(rhs):
        if d not in a.rhs_batch_dims and d not in a.rhs_contracting_dims:
            b.add(size, [None, d], [out])
            out += 1
    for lc, rc in zip(a.lhs_contracting_dims, a.rhs_contracting_dims):
        b.add(lhs[lc], [lc, rc], [None], REDUCTION)
    return b.build()


@RULES.register("convolution")
def convolution_rule(inst):
    """Shardy's convolution rule, factor by factor in its order: the batch groups (lhs batch,
    kernel output feature, output feature), the per-group batch (lhs<->out); per spatial dim
    the number of windows (lhs<->out, permutation) and the window size (lhs<->kernel,
    reduction), the greater first, each capped by what is left of the lhs dim and dropped
    at size 1; the feature groups (lhs feature, kernel output feature, output feature), the
    per-group input feature (lhs<->kernel, reduction), the per-group output feature
    (kernel<->out, when > 1).

    >>> from xla_spmd.ir import ArrayShape, Builder, ConvDimensionNumbers, F32, Window
    >>> b = Builder("m")
    >>> x = b.parameter(ArrayShape(F32, (2, 8, 4)))
    >>> k = b.parameter(ArrayShape(F32, (3, 4, 6)))
    >>> conv = b.convolution(x, k, window=Window.make((3,), (2,), padding=((1, 0),)),
    ...     dim_labels=ConvDimensionNumbers.from_labels("b0f_0io->b0f"))
    >>> print(sharding_rule(conv))  # doctest: +NORMALIZE_WHITESPACE
    #sdy.op_sharding_rule<([i, jk, l], [k, l, m])->([i, j, m])
      {i=2, j=4, k=2, l=4, m=6} reduction={k, l} permutation={j}>
    """
    b = builder_for(inst)
    lhs, rhs = b.operand_dims
    out = inst.shape.dims
    dn = inst.attrs.dim_labels
    groups, batch_groups = inst.attrs.feature_group_count, inst.attrs.batch_group_count
    if batch_groups > 1:
        b.add(batch_groups, [dn.input_batch, dn.kernel_output_feature], [dn.output_feature])
    b.add(out[dn.output_batch], [dn.input_batch, None], [dn.output_batch])
    spatial_dims = () if is_conservative() else \
        zip(dn.input_spatial, dn.kernel_spatial, dn.output_spatial)
    for ls, ks, os in spatial_dims:
        windows, window_size = out[os], rhs[ks]
        remaining = [lhs[ls]]

        def spatial(size, contracting, ls=ls, ks=ks, os=os, remaining=remaining):
            size = min(remaining[0], size)
            if size > 1:
                if contracting:
                    b.add(size, [ls, ks], [None], REDUCTION)
                else:
                    b.add(size, [ls, None], [os], PERM)
                remaining[0] //= size
        if windows >= window_size:
            spatial(windows, False)
            spatial(window_size, True)
        else:
            spatial(window_size, True)
            spatial(windows, False)
    if groups > 1:
        b.add(groups, [dn.input_feature, dn.kernel_output_feature], [dn.output_feature])
    b.add(rhs[dn.kernel_input_feature], [dn.input_feature, dn.kernel_input_feature], [None],
          REDUCTION)
    out_features = out[dn.output_feature] // (batch_groups * groups)
    if out_features > 1:
        b.add(out_features, [None, dn.kernel_output_feature], [dn.output_feature])
    return b.build()


def _gather_scatter_factors(add, x, slices, indices, index_vector_dim, offset_dims,
                            collapsed_dims, input_batching, indices_batching, scatter_kind):
    """Shardy's factors of a gather (`scatter_kind` None) or scatter, walking the slices
    (gather result, scatter updates) dims in order: an offset dim is one factor with the
    input dim when whole, else (scatter) two need-replication factors, (gather, slice of 1)
    a reduction of the input and a need-replication of the slice, (gather) one blocked
    need-replication; a batch dim is one factor with the indices dim (and the input's
    explicit batching dim), for a scatter's implicit one `scatter_kind`. Then the collapsed
    (inserted) dims, then the index vector dim. `add(input, indices, slices, size, kind,
    blocked)` maps one factor."""
    input_dim = 0
    batch_pos = 0
    for slices_dim, slices_size in enumerate(slices):
        if slices_dim in offset_dims:
            while input_dim in collapsed_dims or input_dim in input_batching:
                input_dim += 1
            size = x[input_dim]
            if size == slices_size:
                add(input_dim, None, slices_dim, size, PASS, False)
            elif scatter_kind is not None:
                add(input_dim, None, None, size, NEED, False)
                add(None, None, slices_dim, slices_size, NEED, False)
            elif slices_size == 1:
                add(input_dim, None, None, size, REDUCTION, False)
                add(None, None, slices_dim, slices_size, NEED, False)
            else:
                add(input_dim, None, slices_dim, size, NEED, True)
            input_dim += 1
        else:
            indices_dim = batch_pos if batch_pos < index_vector_dim else batch_pos + 1
            explicit = indices_dim in indices_batching
            input_batch = (input_batching[indices_batching.index(indices_dim)]
                           if explicit else None)
            kind = scatter_kind if scatter_kind is not None and not explicit else PASS
            add(input_batch, indices_dim, slices_dim, slices_size, kind, False)
            batch_pos += 1
    for d in collapsed_dims:
        size = x[d]
        kind = PASS if scatter_kind is not None else (NEED if size == 1 else REDUCTION)
        add(d, None, None, size, kind, False)
    if index_vector_dim < len(indices):
        add(None, index_vector_dim, None, indices[index_vector_dim], NEED, False)


@RULES.register("gather")
def gather_rule(inst):
    """Shardy's gather rule (`_gather_scatter_factors`): collapsed dims are reduction
    factors (a masked local gather, then an all-reduce)."""
    b = builder_for(inst)
    x, indices = b.operand_dims
    a = inst.attrs

    def add(input_dim, indices_dim, slices_dim, size, kind, blocked):
        b.add(size, [input_dim, indices_dim], [slices_dim], kind, blocked=blocked)
    _gather_scatter_factors(add, x, inst.shape.dims, indices, a.index_vector_dim,
                            tuple(a.offset_dims), tuple(a.collapsed_slice_dims),
                            tuple(a.operand_batching_dims),
                            tuple(a.start_indices_batching_dims), None)
    return b.build()


_COMBINERS = ("add", "mul", "max", "min")


def _common_reduction(inst, n: int) -> bool:
    """Whether every output of the scatter's combiner is one same associative, commutative
    op of its two arguments (Shardy's getCommonSupportedReductionOp): add, mul, max, min,
    and/or on predicates."""
    kinds = [reducer_kind(inst.attrs.to_apply)] if n == 1 else \
        componentwise_kinds(inst.attrs.to_apply)
    if not kinds or len(set(kinds)) != 1:
        return False
    logical = kinds[0] in ("and", "or") and inst.operands[0].shape.dtype is PRED
    return kinds[0] in _COMBINERS or logical


@RULES.register("scatter")
def scatter_rule(inst):
    """Shardy's scatter rule (`_gather_scatter_factors`, updates as the slices): inputs and
    results alike; the updates' implicit batch dims are a reduction for a common combiner
    (partial updates, then an all-reduce), else need replication; inserted dims pass
    through inputs<->results."""
    b = builder_for(inst)
    a = inst.attrs
    n = len(b.operand_dims) // 2
    x, indices, update = b.operand_dims[0], b.operand_dims[n], b.operand_dims[n + 1]

    def add(input_dim, indices_dim, slices_dim, size, kind, blocked):
        b.add(size, [input_dim] * n + [indices_dim] + [slices_dim] * n, [input_dim] * n, kind,
              blocked=blocked)
    _gather_scatter_factors(add, x, update, indices, a.index_vector_dim,
                            tuple(a.update_window_dims), tuple(a.inserted_window_dims),
                            tuple(a.input_batching_dims),
                            tuple(a.scatter_indices_batching_dims),
                            REDUCTION if _common_reduction(inst, n) else NEED)
    return b.build()


@RULES.register("sort")
def sort_rule(inst):
    b = builder_for(inst)
    (dim,) = inst.attrs.dimensions
    dims = b.operand_dims[0]
    only = sum(1 for s in dims if s > 1) <= 1
    b.pointwise(dims, {dim: NEED}, blocked=[dim] if only else [])
    return b.build()


@RULES.register("topk")
def topk_rule(inst):
    b = builder_for(inst)
    x = b.operand_dims[0]
    for d, size in enumerate(x[:-1]):
        b.add(size, [d], [d, d])
    b.add(x[-1], [len(x) - 1], [None, None], NEED)
    b.add(inst.attrs.k, [None], [len(x) - 1] * 2)
    return b.build()


@RULES.register("fft")
def fft_rule(inst):
    b = builder_for(inst)
    x, out = b.operand_dims[0], inst.shape.dims
    transformed = len(inst.attrs.fft_length)
    for d, size in enumerate(x):
        if d < len(x) - transformed:
            b.add(size, [d], [d])
        elif x[d] == out[d]:
            b.add(size, [d], [d], NEED)
        else:   # the truncated (or expanded) dim of rfft/irfft: one factor, the operand's
            b.add(size, [d], [d], NEED, blocked=True)
    return b.build()


@RULES.register("cholesky")
def cholesky_rule(inst):
    b = builder_for(inst)
    dims = b.operand_dims[0]
    b.pointwise(dims, {d: NEED for d in range(len(dims) - 2, len(dims))})
    return b.build()


@RULES.register("triangular-solve")
def triangular_solve_rule(inst):
    """Shardy's rule: batch dims pointwise; then, for ``op(a) @ x = b`` (left side), a's
    non-contracting dim with b's rows, b's columns with the result's, a's contracting dim
    with the result's rows; for ``x @ op(a) = b`` the mirror image. All but the batch
    need replication."""
    b = builder_for(inst)
    a_dims, b_dims = b.operand_dims
    rank = len(a_dims)
    for d, size in enumerate(a_dims[:-2]):
        b.add(size, [d, d], [d])
    dim1, dim2 = rank - 2, rank - 1
    transposed = (inst.attrs.transpose_a or "NO_TRANSPOSE") in ("TRANSPOSE", "ADJOINT")
    if inst.attrs.left_side:
        non_contracting, contracting = (dim2, dim1) if transposed else (dim1, dim2)
        b.add(a_dims[non_contracting], [non_contracting, dim1], [None], NEED)
        b.add(b_dims[dim2], [None, dim2], [dim2], NEED)
        b.add(a_dims[contracting], [contracting, None], [dim1], NEED)
    else:
        non_contracting, contracting = (dim1, dim2) if transposed else (dim2, dim1)
        b.add(b_dims[dim1], [None, dim1], [dim1], NEED)
        b.add(a_dims[non_contracting], [non_contracting, dim2], [None], NEED)
        b.add(a_dims[contracting], [contracting, None], [dim2], NEED)
    return b.build()


@RULES.register("batch-norm-inference", "batch-norm-training", "batch-norm-grad")
def batch_norm_rule(inst):
    """Shardy's batch_norm_inference rule, one factor per operand dim: the feature dim's
    factor is shared by every 1-D operand and result, the others by the operand-shaped
    tensors alone (``([i, j, k, l], [k], [k], [k], [k])->([i, j, k, l])``). Shardy's registry
    has no rule for training and grad; theirs follow the same scheme, so a batch sharding
    passes from the operand to the output and the per-feature values keep the feature's
    (the partitioner all-reduces their statistics over the batch axes)."""
    b = builder_for(inst)
    feature = inst.attrs.feature_index
    # The operand, and batch-norm-grad's grad_output (operand 4), are operand-shaped.
    shaped = {0, 4} if inst.opcode == "batch-norm-grad" else {0}
    for d, size in enumerate(b.operand_dims[0]):
        vector = 0 if d == feature else None
        operands = [d if k in shaped else vector for k in range(len(b.operand_dims))]
        results = [d] + [vector] * (len(b.result_dims) - 1)
        b.add(size, operands, results)
    return b.build()
