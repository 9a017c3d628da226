"""One printer per HLO opcode family: an instruction → StableHLO op text (§18, reversed)."""

from __future__ import annotations

import numpy as np

from xla_spmd.ir import F32, ArrayShape, Instruction
from xla_spmd.ir.custom_calls import SDY_CONSTANT, SHARDING_RULE, STABLEHLO_DOT
from xla_spmd.ir.lowered import LOWERED_DIMS, LOWERED_RESULT
from xla_spmd.sharding import TensorSharding
from xla_spmd.stablehlo.exporter import (
    ExportError,
    exported_frontend,
    is_tuple,
    says_something,
    sharding_attr,
)
from xla_spmd.stablehlo.float_text import format_float
from xla_spmd.stablehlo.lexer import escape
from xla_spmd.stablehlo.registry import NAME_HINTS, PRINTERS
from xla_spmd.stablehlo.types import PLAIN_ELEMENTWISE, print_dense, print_type

UNARY_BINARY = frozenset(PLAIN_ELEMENTWISE)
API_NUMBERS = {"API_VERSION_ORIGINAL": 1, "API_VERSION_STATUS_RETURNING": 2,
               "API_VERSION_STATUS_RETURNING_UNIFIED": 3, "API_VERSION_TYPED_FFI": 4}


printer = PRINTERS.register


def refs(fx, operands) -> str:
    return ", ".join(fx.ref(o) for o in operands)


def fn_type(inst: Instruction, operands=None) -> str:
    operands = inst.operands if operands is None else operands
    results = inst.shape.elements if is_tuple(inst) else (inst.shape,)
    result_text = ", ".join(print_type(r) for r in results)
    if len(results) != 1:
        result_text = f"({result_text})"
    return f"({', '.join(print_type(o.shape) for o in operands)}) -> {result_text}"


def attr_dict(inst: Instruction, items=(), with_sharding=True) -> str:
    items = list(items)
    if with_sharding and says_something(inst, scalars=False):
        items.append(f"sdy.sharding = {sharding_attr(inst)}")
    rule = inst.frontend_attribute(SHARDING_RULE)
    if rule is not None:
        items.append(f"sdy.sharding_rule = {rule}")
    frontend = [(k, v) for k, v in exported_frontend(inst)
                if k not in ("mhlo.sharding", SHARDING_RULE)]
    if with_sharding and frontend:
        items.append("mhlo.frontend_attributes = {" + ", ".join(
            f"{k} = {escape(v)}" for k, v in frontend) + "}")
    return " {" + ", ".join(items) + "}" if items else ""


def ints(values) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


def array_attr(values, kind="i64") -> str:
    if kind == "i1":
        return f"array<i1: {', '.join('true' if v else 'false' for v in values)}>" \
            if values else "array<i1>"
    return f"array<i64: {', '.join(str(int(v)) for v in values)}>" if values else "array<i64>"


def dense_2d(rows, width=2) -> str:
    rows = [list(r) for r in rows]
    if not rows:
        return f"dense<> : tensor<0x{width}xi64>"
    body = "[" + ", ".join("[" + ", ".join(str(int(v)) for v in r) + "]" for r in rows) + "]"
    return f"dense<{body}> : tensor<{len(rows)}x{len(rows[0])}xi64>"


# ---------------------------------------------------------------------------------------------
# Elementwise and simple ops


@printer(*UNARY_BINARY)
def _elementwise(fx, inst, indent):
    name = "stablehlo." + inst.opcode.replace("-", "_")
    same = all(o.shape == inst.shape for o in inst.operands)
    sig = print_type(inst.shape) if same else fn_type(inst)
    return f"{name} {refs(fx, inst.operands)}{attr_dict(inst)} : {sig}"


@printer("erf")
def _erf(fx, inst, indent):
    return (f"chlo.erf {fx.ref(inst.operands[0])}{attr_dict(inst)} : "
            f"{print_type(inst.operands[0].shape)} -> {print_type(inst.shape)}")


@printer("compare")
def _compare(fx, inst, indent):
    kind = "" if inst.attrs.type is None else f", {inst.attrs.type.value}"
    return (f"stablehlo.compare  {inst.attrs.direction.value}, {refs(fx, inst.operands)}"
            f"{kind}{attr_dict(inst)} : {fn_type(inst)}")


@printer("select", "clamp", "convert", "bitcast-convert", "reshape", "dynamic-update-slice")
def _plain(fx, inst, indent):
    name = "stablehlo." + inst.opcode.replace("-", "_")
    return f"{name} {refs(fx, inst.operands)}{attr_dict(inst)} : {fn_type(inst)}"


@printer("reduce-precision")
def _reduce_precision(fx, inst, indent):
    a = inst.attrs
    return (f'"stablehlo.reduce_precision"({refs(fx, inst.operands)}) <{{exponent_bits = '
            f"{a.exponent_bits} : i32, mantissa_bits = {a.mantissa_bits} : i32}}>"
            f"{attr_dict(inst)} : {fn_type(inst)}")


@printer("constant")
def _constant(fx, inst, indent):
    value = np.asarray(inst.attrs.literal.value)
    if inst.frontend_attribute(SDY_CONSTANT) is not None:
        plain = inst.replace(frontend_attributes=tuple(
            (k, v) for k, v in inst.frontend_attributes if k != SDY_CONSTANT))
        return f"sdy.constant{attr_dict(plain)} {print_dense(value)} : {print_type(inst.shape)}"
    return f"stablehlo.constant{attr_dict(inst)} {print_dense(value)} : {print_type(inst.shape)}"


@NAME_HINTS.register("constant")
def _constant_name(inst):
    """StableHLO's ConstantOp names its result ``%c`` (integers, booleans) or ``%cst``
    (floats, complex); Shardy's ``sdy.constant`` has no name of its own.

    >>> from xla_spmd.ir import Builder
    >>> import numpy as np
    >>> b = Builder("f")
    >>> [_constant_name(b.constant(np.zeros(2, t))) for t in (np.int32, np.bool_, np.float32)]
    ['c', 'c', 'cst']
    """
    if inst.frontend_attribute(SDY_CONSTANT) is not None or inst.shape.is_tuple:
        return None
    dtype = inst.shape.dtype
    return "c" if dtype.is_integer or dtype.is_pred else "cst"


@printer("iota")
def _iota(fx, inst, indent):
    return (f"stablehlo.iota dim = {inst.attrs.iota_dimension}{attr_dict(inst)} : "
            f"{print_type(inst.shape)}")


@printer("partition-id", "replica-id")
def _ids(fx, inst, indent):
    return f"stablehlo.{inst.opcode.replace('-', '_')}{attr_dict(inst)} : {print_type(inst.shape)}"


@printer("broadcast", "transpose", "reverse")
def _dims_op(fx, inst, indent):
    name = "broadcast_in_dim" if inst.opcode == "broadcast" else inst.opcode
    return (f"stablehlo.{name} {fx.ref(inst.operands[0])}, dims = "
            f"{ints(inst.attrs.dimensions)}{attr_dict(inst)} : {fn_type(inst)}")


@printer("slice")
def _slice(fx, inst, indent):
    parts = ", ".join(f"{s.start}:{s.limit}" + (f":{s.stride}" if s.stride != 1 else "")
                      for s in inst.attrs.slice)
    return f"stablehlo.slice {fx.ref(inst.operands[0])} [{parts}]{attr_dict(inst)} : " \
           f"{fn_type(inst)}"


@printer("dynamic-slice")
def _dynamic_slice(fx, inst, indent):
    return (f"stablehlo.dynamic_slice {refs(fx, inst.operands)}, sizes = "
            f"{ints(inst.attrs.dynamic_slice_sizes)}{attr_dict(inst)} : {fn_type(inst)}")


@printer("concatenate")
def _concatenate(fx, inst, indent):
    return (f"stablehlo.concatenate {refs(fx, inst.operands)}, dim = "
            f"{inst.attrs.dimensions[0]}{attr_dict(inst)} : {fn_type(inst)}")


@printer("pad")
def _pad(fx, inst, indent):
    p = inst.attrs.padding
    return (f"stablehlo.pad {refs(fx, inst.operands)}, low = {ints(d.low for d in p)}, "
            f"high = {ints(d.high for d in p)}, interior = {ints(d.interior for d in p)}"
            f"{attr_dict(inst)} : {fn_type(inst)}")


@printer("get-dimension-size")
def _get_dimension_size(fx, inst, indent):
    return (f'"stablehlo.get_dimension_size"({refs(fx, inst.operands)}) <{{dimension = '
            f"{inst.attrs.dimensions[0]} : i64}}>{attr_dict(inst)} : {fn_type(inst)}")


@printer("tuple")
def _tuple(fx, inst, indent):
    return f"stablehlo.tuple {refs(fx, inst.operands)}{attr_dict(inst)} : " \
           f"{print_type(inst.shape)}"


@printer("get-tuple-element")
def _get_tuple_element(fx, inst, indent):
    (source,) = inst.operands
    if source in fx.elements:
        fx.names[inst] = fx.elements[source][inst.attrs.index]
        return None
    if source in fx.multi:
        fx.names[inst] = f"{fx.names[source]}#{inst.attrs.index}"
        return None
    if getattr(source, "opcode", None) in ("call", "custom-call") and source not in fx.names:
        return None  # part of a manual computation, printed with it
    return (f"stablehlo.get_tuple_element {fx.ref(source)}[{inst.attrs.index}]"
            f"{attr_dict(inst)} : {fn_type(inst)}")


@printer("opt-barrier")
def _opt_barrier(fx, inst, indent):
    (packed,) = inst.operands
    values = packed.operands if packed.opcode == "tuple" else (packed,)
    # MLIR's form: the attribute dictionary before the operands
    attrs = attr_dict(inst, with_sharding=inst not in fx.edge_owners)
    return (f"stablehlo.optimization_barrier{attrs} {refs(fx, values)} : "
            f"{', '.join(print_type(v.shape) for v in values)}")


@printer("after-all")
def _after_all(fx, inst, indent):
    return f"stablehlo.after_all {refs(fx, inst.operands)}{attr_dict(inst)} : !stablehlo.token"


@printer("copy")
def _copy(fx, inst, indent):
    if isinstance(inst.sharding, TensorSharding):
        return (f"sdy.reshard {fx.ref(inst.operands[0])} <{inst.sharding.body_text()}> : "
                f"{print_type(inst.shape)}")
    return f'"mhlo.copy"({fx.ref(inst.operands[0])}){attr_dict(inst)} : {fn_type(inst)}'


# ---------------------------------------------------------------------------------------------
# Contractions, indexing


def _precision(attrs) -> str | None:
    if attrs.operand_precision is None:
        return None
    return "[" + ", ".join(p.name for p in attrs.operand_precision) + "]"


@printer("dot")
def _dot(fx, inst, indent):
    a = inst.attrs
    parts = [refs(fx, inst.operands)]
    lhs = inst.operands[0].shape
    if inst.frontend_attribute(STABLEHLO_DOT) is not None and not a.lhs_batch_dims and \
            tuple(a.lhs_contracting_dims) == (lhs.rank - 1,) and \
            tuple(a.rhs_contracting_dims) == (0,) and a.algorithm is None:
        # written as stablehlo.dot: printed back so
        plain = inst.replace(frontend_attributes=tuple(
            (k, v) for k, v in inst.frontend_attributes if k != STABLEHLO_DOT))
        precision = f", precision = {_precision(a)}" if _precision(a) else ""
        return f"stablehlo.dot {parts[0]}{precision}{attr_dict(plain)} : {fn_type(inst)}"
    if a.lhs_batch_dims or a.rhs_batch_dims:
        parts.append(f"batching_dims = {ints(a.lhs_batch_dims)} x {ints(a.rhs_batch_dims)}")
    parts.append(f"contracting_dims = {ints(a.lhs_contracting_dims)} x "
                 f"{ints(a.rhs_contracting_dims)}")
    if _precision(a):
        parts.append(f"precision = {_precision(a)}")
    if a.algorithm is not None:
        parts.append(f"algorithm = {a.algorithm}")
    return f"stablehlo.dot_general {', '.join(parts)}{attr_dict(inst)} : {fn_type(inst)}"


def _conv_numbers(labels) -> str:
    lhs_rhs, out = labels.to_labels().split("->")
    lhs, rhs = lhs_rhs.split("_")
    return "x".join("[" + ", ".join(part) + "]" for part in (lhs, rhs)) + \
        "->[" + ", ".join(out) + "]"


@printer("convolution")
def _convolution(fx, inst, indent):
    a = inst.attrs
    w = a.window.dims
    window = (f"stride = {ints(d.stride for d in w)}, pad = ["
              + ", ".join(f"[{d.padding_low}, {d.padding_high}]" for d in w)
              + f"], lhs_dilate = {ints(d.lhs_dilation for d in w)}, rhs_dilate = "
              f"{ints(d.rhs_dilation for d in w)}, reverse = ["
              + ", ".join("true" if d.reversal else "false" for d in w) + "]")
    items = [f"batch_group_count = {a.batch_group_count} : i64",
             f"feature_group_count = {a.feature_group_count} : i64"]
    if a.operand_precision is not None:
        items.append("precision_config = [" + ", ".join(
            f"#stablehlo<precision {p.name}>" for p in a.operand_precision) + "]")
    return (f"stablehlo.convolution({refs(fx, inst.operands)}) dim_numbers = "
            f"{_conv_numbers(a.dim_labels)}, window = {{{window}}}{attr_dict(inst, items)} : "
            f"{fn_type(inst)}")


def _dims_struct(kind: str, fields) -> str:
    body = ", ".join(f"{k} = {ints(v)}" if isinstance(v, tuple) else f"{k} = {v}"
                     for k, v in fields if not (isinstance(v, tuple) and not v))
    return f"#stablehlo.{kind}<{body}>"


@printer("gather")
def _gather(fx, inst, indent):
    a = inst.attrs
    numbers = _dims_struct("gather", [
        ("offset_dims", a.offset_dims), ("collapsed_slice_dims", a.collapsed_slice_dims),
        ("operand_batching_dims", a.operand_batching_dims),
        ("start_indices_batching_dims", a.start_indices_batching_dims),
        ("start_index_map", a.start_index_map), ("index_vector_dim", a.index_vector_dim)])
    props = (f"dimension_numbers = {numbers}, indices_are_sorted = "
             f"{'true' if a.indices_are_sorted else 'false'}, slice_sizes = "
             f"{array_attr(a.slice_sizes)}")
    return f'"stablehlo.gather"({refs(fx, inst.operands)}) <{{{props}}}>{attr_dict(inst)} : ' \
           f"{fn_type(inst)}"


@printer("scatter")
def _scatter(fx, inst, indent):
    a = inst.attrs
    numbers = _dims_struct("scatter", [
        ("update_window_dims", a.update_window_dims),
        ("inserted_window_dims", a.inserted_window_dims),
        ("input_batching_dims", a.input_batching_dims),
        ("scatter_indices_batching_dims", a.scatter_indices_batching_dims),
        ("scatter_dims_to_operand_dims", a.scatter_dims_to_operand_dims),
        ("index_vector_dim", a.index_vector_dim)])
    props = (f"indices_are_sorted = {'true' if a.indices_are_sorted else 'false'}, "
             f"scatter_dimension_numbers = {numbers}, unique_indices = "
             f"{'true' if a.unique_indices else 'false'}")
    region = fx.scalar_region(a.to_apply, indent)
    return (f'"stablehlo.scatter"({refs(fx, inst.operands)}) <{{{props}}}> ({region})'
            f"{attr_dict(inst)} : {fn_type(inst)}")


# ---------------------------------------------------------------------------------------------
# Reductions, sort


def _simple_binary(computation) -> str | None:
    """The op name when `computation` is ``root = op(p0, p1)`` on scalars."""
    root = computation.root
    params = computation.parameters
    if (len(params) == 2 and len(computation.instructions) == 3
            and root.opcode in UNARY_BINARY and root.operands == params):
        return "stablehlo." + root.opcode.replace("-", "_")
    return None


@printer("reduce")
def _reduce(fx, inst, indent):
    a = inst.attrs
    half = len(inst.operands) // 2
    simple = _simple_binary(a.to_apply) if half == 1 else None
    groups = ", ".join(f"({fx.ref(x)} init: {fx.ref(i)})"
                       for x, i in zip(inst.operands[:half], inst.operands[half:]))
    if simple is not None:
        fx.arg_counter += 0
        return (f"stablehlo.reduce{groups} applies {simple} across dimensions = "
                f"{ints(a.dimensions)}{attr_dict(inst)} : {fn_type(inst)}")
    # MLIR's pretty form: the reducer's arguments in (element, accumulator) pairs
    params = a.to_apply.parameters
    names = [fx.new_arg() for _ in params]
    pairs = " ".join(f"({names[i]}: {print_type(params[i].shape)}, {names[i + half]}: "
                     f"{print_type(params[i + half].shape)})" for i in range(half))
    lines = fx.region(a.to_apply, indent + "  ", names)
    return (f"stablehlo.reduce{groups} across dimensions = {ints(a.dimensions)}"
            f"{attr_dict(inst)} : {fn_type(inst)}\n{indent} reducer{pairs} {{\n"
            + "\n".join(lines) + f"\n{indent}}}")


def _window_props(window, with_dilations=True) -> str:
    d = window.dims
    props = [f"padding = {dense_2d([(w.padding_low, w.padding_high) for w in d])}",
             f"window_dimensions = {array_attr(w.size for w in d)}",
             f"window_strides = {array_attr(w.stride for w in d)}"]
    if with_dilations:
        props = [f"base_dilations = {array_attr(w.lhs_dilation for w in d)}"] + props + \
                [f"window_dilations = {array_attr(w.rhs_dilation for w in d)}"]
    return ", ".join(props)


@printer("reduce-window")
def _reduce_window(fx, inst, indent):
    a = inst.attrs
    region = fx.scalar_region(a.to_apply, indent)
    return (f'"stablehlo.reduce_window"({refs(fx, inst.operands)}) <{{'
            f"{_window_props(a.window)}}}> ({region}){attr_dict(inst)} : {fn_type(inst)}")


@printer("map")
def _map(fx, inst, indent):
    region = fx.scalar_region(inst.attrs.to_apply, indent)
    dims = ", ".join(str(d) for d in inst.attrs.dimensions)
    return (f'"stablehlo.map"({refs(fx, inst.operands)}) <{{dimensions = array<i64: {dims}>}}> '
            f"({region}){attr_dict(inst)} : {fn_type(inst)}")


@printer("select-and-scatter")
def _select_and_scatter(fx, inst, indent):
    a = inst.attrs
    select = fx.scalar_region(a.select, indent)
    scatter = fx.scalar_region(a.scatter, indent)
    return (f'"stablehlo.select_and_scatter"({refs(fx, inst.operands)}) <{{'
            f"{_window_props(a.window, False)}}}> ({select}, {scatter}){attr_dict(inst)} : "
            f"{fn_type(inst)}")


@printer("sort")
def _sort(fx, inst, indent):
    a = inst.attrs
    region = fx.scalar_region(a.to_apply, indent)
    return (f'"stablehlo.sort"({refs(fx, inst.operands)}) <{{dimension = {a.dimensions[0]} : '
            f"i64, is_stable = {'true' if a.is_stable else 'false'}}}> ({region})"
            f"{attr_dict(inst)} : {fn_type(inst)}")


@printer("topk")
def _topk(fx, inst, indent):
    (x,) = inst.operands
    if not inst.attrs.largest:
        raise ExportError(f"{inst.name}: chlo.top_k only takes the largest elements")
    results = ", ".join(print_type(e) for e in inst.shape.elements)
    return (f"chlo.top_k({fx.ref(x)}, k = {inst.attrs.k}){attr_dict(inst)} : "
            f"{print_type(x.shape)} -> ({results})")


@printer("rng-bit-generator")
def _rng_bit_generator(fx, inst, indent):
    name = inst.attrs.algorithm.name
    return (f"stablehlo.rng_bit_generator {fx.ref(inst.operands[0])}, algorithm = {name}"
            f"{attr_dict(inst)} : {fn_type(inst)}")


@NAME_HINTS.register("rng-bit-generator")
def _rng_bit_generator_names(inst):
    """StableHLO names rng_bit_generator's results ``%output_state, %output``."""
    return ("output_state", "output")


@printer("fft")
def _fft(fx, inst, indent):
    a = inst.attrs
    return (f'"stablehlo.fft"({fx.ref(inst.operands[0])}) <{{fft_length = '
            f"{array_attr(a.fft_length)}, fft_type = #stablehlo<fft_type {a.fft_type.value}>}}>"
            f"{attr_dict(inst)} : {fn_type(inst)}")


@printer("cholesky")
def _cholesky(fx, inst, indent):
    lower = "true" if inst.attrs.lower else "false"
    return (f'"stablehlo.cholesky"({fx.ref(inst.operands[0])}) <{{lower = {lower}}}>'
            f"{attr_dict(inst)} : {fn_type(inst)}")


@printer("triangular-solve")
def _triangular_solve(fx, inst, indent):
    a = inst.attrs
    flag = {True: "true", False: "false"}
    props = (f"left_side = {flag[bool(a.left_side)]}, lower = {flag[bool(a.lower)]}, "
             f"transpose_a = #stablehlo<transpose {a.transpose_a or 'NO_TRANSPOSE'}>, "
             f"unit_diagonal = {flag[bool(a.unit_diagonal)]}")
    return (f'"stablehlo.triangular_solve"({refs(fx, inst.operands)}) <{{{props}}}>'
            f"{attr_dict(inst)} : {fn_type(inst)}")


# ---------------------------------------------------------------------------------------------
# Collectives


def _group_props(a, with_global=True) -> list[str]:
    props = []
    if getattr(a, "channel_id", None) is not None:
        props.append(f"channel_handle = #stablehlo.channel_handle<handle = {a.channel_id}, "
                     "type = 1>")
    groups = a.replica_groups.groups if a.replica_groups is not None else ()
    width = max((len(g) for g in groups), default=0)
    padded = [list(g) + [-1] * (width - len(g)) for g in groups]
    props.append(f"replica_groups = {dense_2d(padded, 0)}")
    if with_global and getattr(a, "use_global_device_ids", False):
        props.append("use_global_device_ids")
    return props


@printer("all-reduce", "reduce-scatter")
def _all_reduce(fx, inst, indent):
    a = inst.attrs
    props = _group_props(a)
    if inst.opcode == "reduce-scatter":
        props.append(f"scatter_dimension = {a.dimensions[0]} : i64")
    region = fx.scalar_region(a.to_apply, indent)
    name = inst.opcode.replace("-", "_")
    return (f'"stablehlo.{name}"({refs(fx, inst.operands)}) <{{{", ".join(sorted(props))}}}> '
            f"({region}){attr_dict(inst)} : {fn_type(inst)}")


@printer("all-gather")
def _all_gather(fx, inst, indent):
    a = inst.attrs
    props = [f"all_gather_dim = {a.dimensions[0]} : i64"] + _group_props(a)
    return (f'"stablehlo.all_gather"({refs(fx, inst.operands)}) <{{{", ".join(props)}}}>'
            f"{attr_dict(inst)} : {fn_type(inst)}")


@printer("all-to-all")
def _all_to_all(fx, inst, indent):
    a = inst.attrs
    if a.dimensions is None:
        return _tuple_all_to_all(fx, inst, indent)
    dim = a.dimensions[0]
    count = len(a.replica_groups.groups[0]) if a.replica_groups and \
        a.replica_groups.groups else 1
    # HLO's array all-to-all concatenates along its split dim; the one StableHLO op of a
    # chain the importer made (xla_spmd.ir.lowered) names its concat dim
    written = inst.frontend_attribute(LOWERED_DIMS) if inst.frontend_attribute(
        LOWERED_RESULT) else None
    concat = int(written) if written and written.isdigit() else dim
    props = _group_props(a, False) + [f"concat_dimension = {concat} : i64",
                                      f"split_count = {count} : i64",
                                      f"split_dimension = {dim} : i64"]
    return (f'"stablehlo.all_to_all"({refs(fx, inst.operands)}) <{{{", ".join(props)}}}>'
            f"{attr_dict(inst)} : {fn_type(inst)}")


def _tuple_all_to_all(fx, inst, indent) -> list[str]:
    """HLO's tuple all-to-all (operand j goes to rank j, result j comes from rank j) has no
    StableHLO form (a variadic ``stablehlo.all_to_all`` splits each operand); it is the array
    all-to-all of the operands stacked on a new major dim: reshape each to ``[1, ...]``,
    concatenate, all_to_all on dim 0, then slice row j and reshape it back for result j."""
    shapes = {o.shape for o in inst.operands}
    if len(shapes) != 1:
        raise ExportError(f"{inst.name}: a tuple all-to-all needs operands of one shape to "
                          f"have a StableHLO form, got {sorted(map(str, shapes))}")
    (shape,) = shapes
    count = len(inst.operands)
    row = print_type(ArrayShape(shape.dtype, (1,) + tuple(shape.dims)))
    stacked = print_type(ArrayShape(shape.dtype, (count,) + tuple(shape.dims)))
    element = print_type(shape)
    statements, rows = [], []
    for operand in inst.operands:
        rows.append(fx.new_value())
        statements.append(f"{rows[-1]} = stablehlo.reshape {fx.ref(operand)} : ({element}) -> "
                          f"{row}")
    concatenated, exchanged = fx.new_value(), fx.new_value()
    statements.append(f"{concatenated} = stablehlo.concatenate {', '.join(rows)}, dim = 0 : "
                      f"({', '.join([row] * count)}) -> {stacked}")
    props = _group_props(inst.attrs, False) + [
        "concat_dimension = 0 : i64", f"split_count = {count} : i64",
        "split_dimension = 0 : i64"]
    statements.append(f'{exchanged} = "stablehlo.all_to_all"({concatenated}) '
                      f'<{{{", ".join(props)}}}> : ({stacked}) -> {stacked}')
    names = []
    for j in range(count):
        bounds = ", ".join([f"{j}:{j + 1}"] + [f"0:{d}" for d in shape.dims])
        sliced, result = fx.new_value(), fx.new_value()
        statements.append(f"{sliced} = stablehlo.slice {exchanged} [{bounds}] : ({stacked}) -> "
                          f"{row}")
        statements.append(f"{result} = stablehlo.reshape {sliced} : ({row}) -> {element}")
        names.append(result)
    fx.elements[inst] = names
    return [indent + statement for statement in statements]


@printer("collective-permute")
def _collective_permute(fx, inst, indent):
    a = inst.attrs
    props = []
    if a.channel_id is not None:
        props.append(f"channel_handle = #stablehlo.channel_handle<handle = {a.channel_id}, "
                     "type = 1>")
    props.append(f"source_target_pairs = {dense_2d(a.source_target_pairs)}")
    return (f'"stablehlo.collective_permute"({refs(fx, inst.operands)}) <{{'
            f'{", ".join(props)}}}>{attr_dict(inst)} : {fn_type(inst)}')


@printer("collective-broadcast")
def _collective_broadcast(fx, inst, indent):
    props = _group_props(inst.attrs, False)
    return (f'"stablehlo.collective_broadcast"({refs(fx, inst.operands)}) <{{'
            f'{", ".join(props)}}}>{attr_dict(inst)} : {fn_type(inst)}')


@printer("batch-norm-inference", "batch-norm-training", "batch-norm-grad")
def _batch_norm(fx, inst, indent):
    a = inst.attrs
    name = "stablehlo." + inst.opcode.replace("-", "_")
    return (f'"{name}"({refs(fx, inst.operands)}) <{{epsilon = '
            f"{format_float(np.float32(a.epsilon), F32)} : f32, feature_index = "
            f"{a.feature_index} : i64}}>{attr_dict(inst)} : {fn_type(inst)}")
