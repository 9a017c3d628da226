"""Definitions of control flow, tuples, random numbers, collectives and custom calls."""

from __future__ import annotations

from xla_spmd.ir.dtypes import F32  # noqa: F401 (the doctests' element type)
from xla_spmd.ir.opdefs import A, K, _array, _declared, _fail
from xla_spmd.ir.ops import Family, Trait, define
from xla_spmd.ir.shapes import TOKEN_SHAPE, ArrayShape, TupleShape


def _signature_check(name, computation, operand_shapes):
    params = computation.parameter_shapes
    if len(params) != len(operand_shapes) or not all(
            p.same_type(o) for p, o in zip(params, operand_shapes)):
        _fail(name, f"computation {computation.name} takes "
                    f"({', '.join(map(str, params))}), given "
                    f"({', '.join(map(str, operand_shapes))})")


def _infer_while(operands, attrs, declared):
    (state,) = operands
    _signature_check("while", attrs.condition, (state,))
    _signature_check("while", attrs.body, (state,))
    if not attrs.body.root.shape.same_type(state):
        _fail("while", f"body {attrs.body.name} returns {attrs.body.root.shape}, the loop "
                       f"state is {state}")
    cond = attrs.condition.root.shape
    if not (isinstance(cond, ArrayShape) and cond.rank == 0 and cond.dtype.is_pred):
        _fail("while", f"condition {attrs.condition.name} must return pred[], got {cond}")
    return state


def _infer_conditional(operands, attrs, declared):
    branches = attrs.branch_computations or (attrs.true_computation, attrs.false_computation)
    if None in branches:
        _fail("conditional", "needs true_computation and false_computation, or "
                             "branch_computations")
    selector = _array("conditional", operands[0], "branch index")
    if selector.rank != 0 or not (selector.dtype.is_pred or selector.dtype.name == "s32"):
        _fail("conditional", f"branch selector must be pred[] or s32[], got {selector}")
    if len(operands) - 1 != len(branches):
        _fail("conditional", f"{len(branches)} branches need {len(branches)} branch operands")
    result = branches[0].root.shape
    for branch, operand in zip(branches, operands[1:]):
        _signature_check("conditional", branch, (operand,))
        if not branch.root.shape.same_type(result):
            _fail("conditional", f"branch {branch.name} returns {branch.root.shape}, "
                                 f"expected {result}")
    return result


def _infer_call(name):
    def infer(operands, attrs, declared):
        computation = attrs.to_apply if name != "fusion" else attrs.calls
        _signature_check(name, computation, operands)
        return computation.root.shape
    return infer


def _infer_map(operands, attrs, declared):
    shapes = [_array("map", s) for s in operands]
    root = attrs.to_apply.root.shape
    return ArrayShape(root.dtype, shapes[0].dims)


define("while", Family.CONTROL, _infer_while, operands=1,
       attrs=(A("condition", K.COMPUTATION), A("body", K.COMPUTATION)))
define("conditional", Family.CONTROL, _infer_conditional, operands=(2, None),
       attrs=(A("true_computation", K.COMPUTATION, None),
              A("false_computation", K.COMPUTATION, None),
              A("branch_computations", K.COMPUTATIONS, None)))
define("call", Family.CONTROL, _infer_call("call"), operands=(0, None),
       attrs=(A("to_apply", K.COMPUTATION), A("is_composite", K.BOOL, False)))
define("fusion", Family.CONTROL, _infer_call("fusion"), operands=(0, None),
       attrs=(A("kind", K.RAW), A("calls", K.COMPUTATION)))
define("map", Family.CONTROL, _infer_map, operands=(1, None),
       attrs=(A("dimensions", K.INT_LIST), A("to_apply", K.COMPUTATION)),
       traits=(Trait.ELEMENTWISE,))

# ---------------------------------------------------------------------------------------------
# Tuples


def _infer_gte(operands, attrs, declared):
    (t,) = operands
    if not isinstance(t, TupleShape) or not 0 <= attrs.index < len(t.elements):
        _fail("get-tuple-element", f"index {attrs.index} out of range for {t}")
    return t.elements[attrs.index]


define("tuple", Family.TUPLE, lambda o, a, d: TupleShape(tuple(o)), operands=(0, None))
define("get-tuple-element", Family.TUPLE, _infer_gte, operands=1, attrs=(A("index", K.INT),))
define("opt-barrier", Family.TUPLE, lambda o, a, d: o[0], operands=1)

# ---------------------------------------------------------------------------------------------
# Random numbers


def _infer_rng_bit_generator(operands, attrs, declared):
    out = _declared("rng-bit-generator", declared)
    if not (isinstance(out, TupleShape) and len(out.elements) == 2
            and out.elements[0].same_type(operands[0])):
        _fail("rng-bit-generator", f"result must be (state {operands[0]}, bits), got {out}")
    return out


define("rng-bit-generator", Family.RANDOM, _infer_rng_bit_generator, operands=1,
       attrs=(A("algorithm", K.RNG_ALGORITHM),), needs_declared_shape=True)
define("rng", Family.RANDOM, lambda o, a, d: _declared("rng", d), operands=2,
       attrs=(A("distribution", K.RNG_DISTRIBUTION),), needs_declared_shape=True,
       traits=(Trait.SIDE_EFFECT, Trait.DISTINCT))

# ---------------------------------------------------------------------------------------------
# Host transfers: infeed reads a value from the device's infeed queue, outfeed writes one to
# its outfeed queue; both are ordered by their token.


def _token(op: str, shape, what: str = "token operand") -> None:
    if not (isinstance(shape, ArrayShape) and shape.is_token):
        _fail(op, f"the {what} must be token[], got {shape}")


def _infer_infeed(operands, attrs, declared):
    """``(data, token[]) infeed(token)``: the data's shape is the declared one's first element.

    >>> from xla_spmd.ir.shapes import TOKEN_SHAPE
    >>> out = TupleShape((ArrayShape(F32, (8, 2)), TOKEN_SHAPE))
    >>> str(_infer_infeed([TOKEN_SHAPE], None, out))
    '(f32[8,2], token[])'
    """
    _token("infeed", operands[0])
    out = _declared("infeed", declared)
    if not (isinstance(out, TupleShape) and len(out.elements) == 2):
        _fail("infeed", f"result must be (data, token[]), got {out}")
    _token("infeed", out.elements[1], "result's second element")
    return out


def _infer_outfeed(operands, attrs, declared):
    _token("outfeed", operands[1], "second operand")
    return TOKEN_SHAPE


define("infeed", Family.CUSTOM, _infer_infeed, operands=1,
       attrs=(A("infeed_config", K.STRING, ""),), needs_declared_shape=True,
       traits=(Trait.SIDE_EFFECT, Trait.DISTINCT))
define("outfeed", Family.CUSTOM, _infer_outfeed, operands=2,
       attrs=(A("outfeed_shape", K.RAW, None), A("outfeed_config", K.STRING, "")),
       traits=(Trait.SIDE_EFFECT, Trait.DISTINCT))

# ---------------------------------------------------------------------------------------------
# Collectives

GROUP_ATTRS = (A("replica_groups", K.REPLICA_GROUPS, None), A("channel_id", K.INT, None),
               A("use_global_device_ids", K.BOOL, False),
               A("constrain_layout", K.BOOL, False))


def group_size(attrs, default: int | None = None) -> int | None:
    """Size of the replica groups of a collective (None when the groups are implicit)."""
    groups = attrs.replica_groups
    if groups is None or not groups.groups:
        return default
    return len(groups.groups[0])


def _check_device_ids(name: str, attrs) -> None:
    """XLA's rules for the ids of a collective: replica groups are all empty or all listed,
    and each id appears at most once across them; a collective-permute sends from each
    source once and to each target once. Ids are non-negative."""
    groups = getattr(attrs, "replica_groups", None)
    if groups is not None and groups.explicit is not None:
        listed = groups.explicit
        if any(not g for g in listed) and any(listed):
            _fail(name, f"replica_groups {_groups_text(listed)} mix empty and non-empty "
                        "groups; list every group, or give replica_groups={} for one group "
                        "of all devices")
        first_group: dict[int, int] = {}
        for index, group in enumerate(listed):
            for device in group:
                if device < 0:
                    _fail(name, f"replica_groups {_groups_text(listed)}: id {device} is "
                                "negative")
                if device in first_group:
                    before = _groups_text([listed[first_group[device]]])[1:-1]
                    here = _groups_text([group])[1:-1]
                    where = (f"twice in group {here}" if first_group[device] == index else
                             f"in groups {before} and {here}")
                    _fail(name, f"replica_groups {_groups_text(listed)}: id {device} appears "
                                f"{where}; each id may be in at most one group, once")
                first_group[device] = index
    pairs = getattr(attrs, "source_target_pairs", None)
    if pairs:
        for position, role in ((0, "source"), (1, "target")):
            ids = [pair[position] for pair in pairs]
            repeated = sorted({i for i in ids if ids.count(i) > 1})
            if repeated:
                _fail(name, f"source_target_pairs: {role} {repeated[0]} appears in more than "
                            f"one pair; each device sends at most once and receives at most "
                            "once")
            if min(ids) < 0:
                _fail(name, f"source_target_pairs: {role} {min(ids)} is negative")


def _groups_text(groups) -> str:
    return "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"


def _with_id_checks(name: str, infer):
    def checked(operands, attrs, declared):
        _check_device_ids(name, attrs)
        return infer(operands, attrs, declared)
    return checked


def _leaves(operands):
    return [_array("collective", s) for s in operands]


def _infer_all_reduce(operands, attrs, declared):
    shapes = _leaves(operands)
    return shapes[0] if len(shapes) == 1 else TupleShape(tuple(shapes))


def _spans_partitions(attrs) -> bool:
    """Whether the groups are cross_replica_and_partition: each listed replica group taken
    across every partition, so the group size is a multiple of the listed one that depends on
    the partition count, which the op does not state."""
    return attrs.channel_id is not None and attrs.channel_id > 0 \
        and not attrs.use_global_device_ids


def _infer_resized(name, grow: bool):
    def infer(operands, attrs, declared):
        shapes = _leaves(operands)
        n = group_size(attrs)
        if n is None:
            return _declared(name, declared)
        if declared is not None and _spans_partitions(attrs):
            _check_resized_by_partitions(name, shapes, declared, attrs.dimensions, n, grow)
            return declared
        (dim,) = attrs.dimensions
        out = []
        for s in shapes:
            if not 0 <= dim < s.rank:
                _fail(name, f"dimensions={{{dim}}} is not a dimension of {s}")
            dims = list(s.dims)
            if grow:
                dims[dim] *= n
            elif dims[dim] % n:
                _fail(name, f"dim {dim} of {s} is not divisible by the group size {n}")
            else:
                dims[dim] //= n
            out.append(ArrayShape(s.dtype, tuple(dims)))
        return out[0] if len(out) == 1 else TupleShape(tuple(out))
    return infer


def _check_resized_by_partitions(name, shapes, declared, dimensions, n, grow) -> None:
    """A declared shape of a cross_replica_and_partition collective: dimension ``dim`` is
    resized by the listed group size ``n`` times some partition count."""
    (dim,) = dimensions
    results = declared.elements if isinstance(declared, TupleShape) else (declared,)
    if len(results) != len(shapes):
        _fail(name, f"{len(shapes)} operands but {len(results)} results")
    for s, r in zip(shapes, results):
        ok = (isinstance(r, ArrayShape) and r.dtype == s.dtype and r.rank == s.rank
              and 0 <= dim < s.rank
              and all(a == b for d, (a, b) in enumerate(zip(s.dims, r.dims)) if d != dim))
        big, small = (r.dims[dim], s.dims[dim]) if grow else (s.dims[dim], r.dims[dim])
        if not ok or (big % (small * n) if small else big):
            _fail(name, f"declared {r} is not {s} resized along dimension {dim} by the group "
                        f"size {n} times a partition count")


def _infer_all_to_all(operands, attrs, declared):
    shapes = _leaves(operands)
    if attrs.dimensions and len(shapes) == 1:
        (dim,) = attrs.dimensions
        n = group_size(attrs)
        if n is not None and shapes[0].dims[dim] % n:
            _fail("all-to-all", f"dim {dim} of {shapes[0]} is not divisible by group size {n}")
    return shapes[0] if len(shapes) == 1 else TupleShape(tuple(shapes))


def _infer_permute(operands, attrs, declared):
    return _leaves(operands)[0]


REDUCER = (A("to_apply", K.COMPUTATION),)
define("all-reduce", Family.COLLECTIVE,
       _with_id_checks("all-reduce", _infer_all_reduce), operands=(1, None),
       attrs=GROUP_ATTRS + REDUCER)
define("all-gather", Family.COLLECTIVE,
       _with_id_checks("all-gather", _infer_resized("all-gather", True)), operands=(1, None),
       attrs=GROUP_ATTRS + (A("dimensions", K.INT_LIST),))
define("reduce-scatter", Family.COLLECTIVE,
       _with_id_checks("reduce-scatter", _infer_resized("reduce-scatter", False)),
       operands=(1, None), attrs=GROUP_ATTRS + (A("dimensions", K.INT_LIST),) + REDUCER)
# XLA's all-to-all has no use_global_device_ids: with a channel its ids are partition ids.
define("all-to-all", Family.COLLECTIVE,
       _with_id_checks("all-to-all", _infer_all_to_all), operands=(1, None),
       attrs=(A("replica_groups", K.REPLICA_GROUPS, None), A("channel_id", K.INT, None),
              A("constrain_layout", K.BOOL, False), A("dimensions", K.INT_LIST, None)))
define("collective-permute", Family.COLLECTIVE,
       _with_id_checks("collective-permute", _infer_permute), operands=1,
       attrs=(A("source_target_pairs", K.INT_PAIRS), A("channel_id", K.INT, None)))
define("collective-broadcast", Family.COLLECTIVE,
       _with_id_checks("collective-broadcast", _infer_permute), operands=1,
       attrs=(A("replica_groups", K.REPLICA_GROUPS, None), A("channel_id", K.INT, None)))


def _infer_async_done(operands, attrs, declared):
    return _declared("async done", declared)


# XLA's asynchronous pairs: the -start carries the collective's attributes; its result
# shape is implementation-specific (tuples of buffers), so it is taken as declared.
for _base in ("all-reduce", "all-gather", "collective-permute"):
    from xla_spmd.ir.ops import OPS as _OPS
    define(f"{_base}-start", Family.ASYNC,
           _with_id_checks(f"{_base}-start", _infer_async_done), operands=(1, None),
           attrs=_OPS[_base].attrs, needs_declared_shape=True)
    define(f"{_base}-done", Family.ASYNC, _infer_async_done, operands=1,
           needs_declared_shape=True)
define("async-start", Family.ASYNC, _infer_async_done, operands=(0, None),
       attrs=(A("calls", K.COMPUTATION),), needs_declared_shape=True)
define("async-done", Family.ASYNC, _infer_async_done, operands=1, needs_declared_shape=True,
       attrs=(A("calls", K.COMPUTATION, None),))  # XLA prints the wrapped computation here too
define("copy-start", Family.ASYNC, _infer_async_done, operands=1, needs_declared_shape=True)
define("copy-done", Family.ASYNC, _infer_async_done, operands=1, needs_declared_shape=True)

# ---------------------------------------------------------------------------------------------
# Custom calls: opaque, result shape as declared.

# Custom calls with a sharding rule are pointwise markers and constraints: shardings pass
# through them. Their side effect is the custom_call_has_side_effect attribute.
define("custom-call", Family.CUSTOM, lambda o, a, d: _declared("custom-call", d),
       operands=(0, None), needs_declared_shape=True, traits=(Trait.PASS_THROUGH,),
       attrs=(A("custom_call_target", K.STRING),
              A("custom_call_has_side_effect", K.BOOL, False),
              A("api_version", K.RAW, None),
              A("called_computations", K.COMPUTATIONS, None),
              A("output_to_operand_aliasing", K.RAW, None),
              A("operand_layout_constraints", K.RAW, None),
              A("custom_call_schedule", K.RAW, None)))
