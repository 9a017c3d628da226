"""One converter per StableHLO op family: generic `OpNode` → HLO instructions (§18).

A converter gets the scope, the node and its operand instructions, and returns one
instruction per result (a tuple-shaped instruction is unpacked by `convert_op`).
"""

from __future__ import annotations

import difflib
import functools
import re
from typing import TYPE_CHECKING

import numpy as np

from xla_spmd.errors import ParseError, ShardingError
from xla_spmd.ir import (
    ArrayShape,
    ComparisonDirection,
    ComparisonType,
    ConvDimensionNumbers,
    FftType,
    Literal,
    PadDim,
    Precision,
    RngAlgorithm,
    RngDistribution,
    SliceDim,
    TupleShape,
    Window,
)
from xla_spmd.ir.custom_calls import SDY_CONSTANT, SHARDING_RULE, STABLEHLO_DOT
from xla_spmd.ir.lowered import LOWERED_DIMS, LOWERED_FROM, LOWERED_RESULT
from xla_spmd.sharding import TensorSharding, print_sharding_per_value
from xla_spmd.stablehlo.importer_quant import convert_quantized, is_quantized_op
from xla_spmd.stablehlo.registry import CONVERTERS
from xla_spmd.stablehlo.scope import Scope, free_values, mark_written_open
from xla_spmd.stablehlo.syntax_tree import Dense, OpNode, RawAttr, Symbol
from xla_spmd.stablehlo.types import PLAIN_ELEMENTWISE, DenseLiteralError, parse_dense

if TYPE_CHECKING:
    from xla_spmd.stablehlo.importer import ModuleImporter

converter = CONVERTERS.register


def convert_op(importer: ModuleImporter, scope: Scope, node: OpNode) -> None:
    fn = CONVERTERS.get(node.name)
    if fn is None:
        raise importer.error(node, unknown_op_message(node.name))
    operands = [scope.lookup(v) for v in node.operands]
    if is_quantized_op(importer, node, operands):
        fn = functools.partial(convert_quantized, fn)
    if not node.name.startswith("sdy.") and node.name != "stablehlo.custom_call":
        shardings = op_sharding(importer, node)
    else:
        shardings = None
    try:
        results = fn(importer, scope, node, operands)
    except DenseLiteralError as error:
        literals = [v for v in [*node.attrs.values(), *node.attrs.get("_positional", ())]
                    if isinstance(v, Dense) and v.pos >= 0 and v.value is None]
        pos = literals[0].pos + error.offset if len(literals) == 1 else None
        raise importer.error(node, error.message, pos) from None
    except ParseError as error:
        if error.line is not None:
            raise
        raise importer.error(node, error.message) from None
    except ShardingError as error:
        raise importer.error(node, str(error)) from None
    except (ValueError, KeyError, IndexError, TypeError, ArithmeticError,
            AttributeError) as error:
        raise importer.error(node, malformed_message(node, error)) from None
    rule = node.attrs.get("sdy.sharding_rule")
    target = results if not isinstance(results, list) else (results[0] if results else None)
    if (shardings is not None or rule is not None) and target is not None:
        # set before a multi-result op is unpacked, so its elements read the new op
        changes = {}
        frontend = tuple(target.frontend_attributes)
        if shardings is not None:
            changes["sharding"] = shardings[0] if len(shardings) == 1 else tuple(shardings)
            frontend = mark_written_open(shardings, frontend)
        if rule is not None:   # a user's rule: propagation uses it instead of the built-in
            text = rule.text if isinstance(rule, RawAttr) else str(rule)
            frontend += ((SHARDING_RULE, text),)
        if frontend != target.frontend_attributes:
            changes["frontend_attributes"] = frontend
        new = target.replace(**changes)
        scope.instructions[scope.instructions.index(target)] = new
        results = new if not isinstance(results, list) else [new] + results[1:]
    if isinstance(results, list):
        values = results
    elif len(node.results) > 1 or (isinstance(results.shape, TupleShape)
                                   and len(node.result_types) != 1):
        values = scope.unpack(results)
    else:
        values = [results]
    if len(values) != len(node.results):
        raise importer.error(node, f"produces {len(values)} values but {len(node.results)} "
                                   "result names are bound")
    for name, value in zip(node.results, values):
        scope.define(name, value, node.line)
        if name.endswith("#0") and len(values) == 1:
            scope.define(name[:-2], value, node.line)
    if len(values) == 1 and node.results and not node.results[0].endswith("#0"):
        scope.define(node.results[0] + "#0", values[0], node.line)


def unknown_op_message(name: str) -> str:
    """"unknown check op 'check.x'; expected one of ..." for small dialects; for large ones
    (stablehlo) the closest names only."""
    dialect = name.split(".")[0]
    known = sorted(n for n in CONVERTERS if n.split(".")[0] == dialect)
    if known and len(known) <= 12:
        return f"unknown {dialect} op '{name}'; expected one of {', '.join(known)}"
    close = difflib.get_close_matches(name, list(CONVERTERS), n=3)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown or unsupported op '{name}'{hint}"


def malformed_message(node: OpNode, error: Exception) -> str:
    """What to tell the user when a converter met input it could not read: the op's
    attributes and result types as found, never a Python exception name."""
    if isinstance(error, KeyError):
        key = error.args[0] if error.args else "?"
        detail = (f"missing attribute '{key}'" if isinstance(key, str) and key not in node.attrs
                  and re.fullmatch(r"[a-z_][\w.]*", key) else f"unknown value {key!r}")
    elif isinstance(error, IndexError):
        detail = "too few operands, results, regions or attribute entries"
    else:
        detail = str(error) or "malformed op"
    attrs = ", ".join(sorted(node.attrs)) or "none"
    return (f"cannot read this op: {detail} (operands {len(node.operands)}, results "
            f"{len(node.result_types)}, attributes: {attrs}); expected the form StableHLO "
            "gives this op")


def op_sharding(importer, node: OpNode):
    value = node.attrs.get("sdy.sharding")
    if value is None:
        return None
    if isinstance(value, TensorSharding):
        return (value,)
    return tuple(value)


def result_type(node: OpNode, index: int = 0):
    if index >= len(node.result_types):
        raise ParseError(f"expected at least {index + 1} result type(s) after ':' but found "
                         f"{len(node.result_types)}")
    return node.result_types[index]


def enum_value(enum, value, what: str):
    """``enum[value]``, or a `ParseError` listing the valid words."""
    try:
        return enum[value]
    except (KeyError, TypeError):
        raise ParseError(f"unknown {what} {value!r}; expected one of "
                         f"{', '.join(enum.__members__)}") from None


def single_or_tuple(node: OpNode):
    types = node.result_types
    return types[0] if len(types) == 1 else TupleShape(tuple(types))


# ---------------------------------------------------------------------------------------------
# Elementwise


@converter(*(f"stablehlo.{n.replace('-', '_')}" for n in PLAIN_ELEMENTWISE))
def _elementwise(importer, scope, node, operands):
    return scope.emit(node.name[len("stablehlo."):].replace("_", "-"), operands,
                      result_type(node))


@converter("chlo.erf")
def _erf(importer, scope, node, operands):
    return scope.emit("erf", operands, result_type(node))


@converter("stablehlo.compare")
def _compare(importer, scope, node, operands):
    kind = node.attrs.get("compare_type")
    if "comparison_direction" not in node.attrs:
        raise ParseError("missing comparison direction; expected one of "
                         f"{', '.join(ComparisonDirection.__members__)}")
    direction = enum_value(ComparisonDirection, node.attrs["comparison_direction"],
                           "comparison direction")
    return scope.emit("compare", operands, result_type(node), direction=direction,
                      type=None if kind is None else enum_value(ComparisonType, kind,
                                                                "comparison type"))


@converter("stablehlo.select", "stablehlo.clamp")
def _select(importer, scope, node, operands):
    return scope.emit(node.name[10:], operands, result_type(node))


@converter("stablehlo.convert", "stablehlo.bitcast_convert")
def _convert(importer, scope, node, operands):
    out = result_type(node)
    (x,) = operands
    if node.name == "stablehlo.convert" and x.shape.dtype.is_complex \
            and not out.dtype.is_complex:
        # §8: complex -> real drops the imaginary part; HLO convert cannot, so XLA inserts
        # `real` before the convert (none needed when the real part already has that type).
        x = scope.emit("real", (x,), ArrayShape(x.shape.dtype.real_type, x.shape.dims))
        if x.shape.dtype == out.dtype:
            return x
        return scope.emit("convert", (x,), out)
    if node.name == "stablehlo.bitcast_convert" and (x.shape.dtype.name == "pred") != (
            out.dtype.name == "pred"):
        return _bitcast_bits(importer, scope, x, out)
    return scope.emit(node.name[10:].replace("_", "-"), operands, out)


@converter("stablehlo.reduce_precision")
def _reduce_precision(importer, scope, node, operands):
    attrs = node.attrs
    if "format" in attrs:
        match = re.fullmatch(r"e(\d+)m(\d+)", attrs["format"])
        if match is None:
            raise importer.error(node, f"format {attrs['format']!r} is not eNmM (exponent and "
                                       "mantissa bits)")
        exponent, mantissa = match.groups()
    else:
        exponent, mantissa = attrs["exponent_bits"], attrs["mantissa_bits"]
    return scope.emit("reduce-precision", operands, result_type(node),
                      exponent_bits=int(exponent), mantissa_bits=int(mantissa))


@converter("stablehlo.constant", "sdy.constant")
def _constant(importer, scope, node, operands):
    value = node.attrs["value"]
    shape = result_type(node)
    if not isinstance(value, Dense):
        raise importer.error(node, "expected a dense<...> value")
    array = value.value if value.value is not None else parse_dense(value.body, shape)
    if array.shape != shape.dims or not array.flags.writeable:
        array = np.broadcast_to(array, shape.dims)  # a splat stays one value, however large
    else:
        array = np.array(array)
    frontend = ((SDY_CONSTANT, "true"),) if node.name == "sdy.constant" else ()
    return scope.emit("constant", (), shape, literal=Literal(array), frontend=frontend)


@converter("stablehlo.iota")
def _iota(importer, scope, node, operands):
    return scope.emit("iota", (), result_type(node),
                      iota_dimension=int(node.attrs["iota_dimension"]))


# ---------------------------------------------------------------------------------------------
# Shape ops


@converter("stablehlo.broadcast_in_dim")
def _broadcast_in_dim(importer, scope, node, operands):
    (x,) = operands
    out = result_type(node)
    written = dims = list(node.attrs["broadcast_dimensions"])
    # Size-1 operand dims expanded to a larger result dim: drop them first (reshape); unsorted
    # dims: transpose. The chain prints back as the one op (xla_spmd.ir.lowered).
    keep = [i for i, d in enumerate(dims) if not (x.shape.dims[i] == 1 and out.dims[d] != 1)]
    if len(keep) == len(dims) and dims == sorted(dims):
        return scope.emit("broadcast", (x,), out, dimensions=tuple(dims))
    mark = ((LOWERED_FROM, f"broadcast_in_dim {importer.fresh('lowered')}"),)
    if len(keep) != len(dims):
        x = scope.emit("reshape", (x,), ArrayShape(x.shape.dtype,
                                                   tuple(x.shape.dims[i] for i in keep)),
                       frontend=mark)
        dims = [dims[i] for i in keep]
    if dims != sorted(dims):
        order = sorted(range(len(dims)), key=lambda i: dims[i])
        x = scope.emit("transpose", (x,), dimensions=tuple(order), frontend=mark)
        dims = sorted(dims)
    return scope.emit("broadcast", (x,), out, dimensions=tuple(dims), frontend=mark + (
        (LOWERED_RESULT, "0/1"), (LOWERED_DIMS, ",".join(map(str, written)))))


@converter("stablehlo.reshape")
def _reshape(importer, scope, node, operands):
    return scope.emit("reshape", operands, result_type(node))


@converter("stablehlo.transpose")
def _transpose(importer, scope, node, operands):
    return scope.emit("transpose", operands, result_type(node),
                      dimensions=tuple(node.attrs["permutation"]))


@converter("stablehlo.reverse")
def _reverse(importer, scope, node, operands):
    return scope.emit("reverse", operands, result_type(node),
                      dimensions=tuple(node.attrs["dimensions"]))


@converter("stablehlo.slice")
def _slice(importer, scope, node, operands):
    a = node.attrs
    strides = a.get("strides") or (1,) * len(a["start_indices"])
    return scope.emit("slice", operands, result_type(node), slice=tuple(
        SliceDim(s, l, t) for s, l, t in zip(a["start_indices"], a["limit_indices"], strides)))


@converter("stablehlo.dynamic_slice")
def _dynamic_slice(importer, scope, node, operands):
    return scope.emit("dynamic-slice", operands, result_type(node),
                      dynamic_slice_sizes=tuple(node.attrs["slice_sizes"]))


@converter("stablehlo.dynamic_update_slice")
def _dynamic_update_slice(importer, scope, node, operands):
    return scope.emit("dynamic-update-slice", operands, result_type(node))


@converter("stablehlo.concatenate")
def _concatenate(importer, scope, node, operands):
    return scope.emit("concatenate", operands, result_type(node),
                      dimensions=(int(node.attrs["dimension"]),))


@converter("stablehlo.pad")
def _pad(importer, scope, node, operands):
    a = node.attrs
    interior = a.get("interior_padding") or (0,) * len(a["edge_padding_low"])
    return scope.emit("pad", operands, result_type(node), padding=tuple(
        PadDim(lo, hi, it) for lo, hi, it in zip(a["edge_padding_low"], a["edge_padding_high"],
                                                 interior)))


@converter("stablehlo.get_dimension_size")
def _get_dimension_size(importer, scope, node, operands):
    return scope.emit("get-dimension-size", operands, result_type(node),
                      dimensions=(int(node.attrs["dimension"]),))


@converter("stablehlo.tuple")
def _tuple(importer, scope, node, operands):
    return [scope.emit("tuple", operands)]


@converter("stablehlo.get_tuple_element")
def _get_tuple_element(importer, scope, node, operands):
    return scope.emit("get-tuple-element", operands, index=int(node.attrs["index"]))


@converter("stablehlo.optimization_barrier")
def _optimization_barrier(importer, scope, node, operands):
    packed = scope.emit("tuple", operands)
    barrier = scope.emit("opt-barrier", (packed,))
    return scope.unpack(barrier)


@converter("stablehlo.after_all", "stablehlo.create_token")
def _after_all(importer, scope, node, operands):
    return scope.emit("after-all", operands)


@converter("stablehlo.partition_id", "stablehlo.replica_id")
def _ids(importer, scope, node, operands):
    return scope.emit(node.name[10:].replace("_", "-"), (), result_type(node))


# ---------------------------------------------------------------------------------------------
# Indexing


@converter("stablehlo.gather")
def _gather(importer, scope, node, operands):
    dims = node.attrs["dimension_numbers"]
    return scope.emit(
        "gather", operands, result_type(node),
        offset_dims=tuple(dims.get("offset_dims", ())),
        collapsed_slice_dims=tuple(dims.get("collapsed_slice_dims", ())),
        start_index_map=tuple(dims.get("start_index_map", ())),
        operand_batching_dims=tuple(dims.get("operand_batching_dims", ())),
        start_indices_batching_dims=tuple(dims.get("start_indices_batching_dims", ())),
        index_vector_dim=int(dims["index_vector_dim"]),
        slice_sizes=tuple(node.attrs["slice_sizes"]),
        indices_are_sorted=bool(node.attrs.get("indices_are_sorted", False)))


def scalar_region(importer, scope, node, index=0, base="region"):
    return importer.region(node.regions[index], base, "scalar", outer=scope)


@converter("stablehlo.scatter")
def _scatter(importer, scope, node, operands):
    dims = node.attrs["scatter_dimension_numbers"]
    return scope.emit(
        "scatter", operands, single_or_tuple(node),
        update_window_dims=tuple(dims.get("update_window_dims", ())),
        inserted_window_dims=tuple(dims.get("inserted_window_dims", ())),
        scatter_dims_to_operand_dims=tuple(dims.get("scatter_dims_to_operand_dims", ())),
        input_batching_dims=tuple(dims.get("input_batching_dims", ())),
        scatter_indices_batching_dims=tuple(dims.get("scatter_indices_batching_dims", ())),
        index_vector_dim=int(dims["index_vector_dim"]),
        indices_are_sorted=bool(node.attrs.get("indices_are_sorted", False)),
        unique_indices=bool(node.attrs.get("unique_indices", False)),
        to_apply=scalar_region(importer, scope, node))


# ---------------------------------------------------------------------------------------------
# Reductions and windows


def _applies(importer, scope, node, operands):
    """The computation of ``applies stablehlo.add``: two scalars of the init's type."""
    opname = node.attrs["_applies"]
    init = operands[len(operands) // 2].shape
    inner = Scope(importer, importer.computation_name("region"))
    inner.node = node
    a, b = inner.parameter(init), inner.parameter(init)
    name = opname[len("stablehlo."):] if opname.startswith("stablehlo.") else opname
    root = inner.emit(name.replace("_", "-"), (a, b), init)
    return inner.build(root)


@converter("stablehlo.reduce")
def _reduce(importer, scope, node, operands):
    body = (_applies(importer, scope, node, operands) if "_applies" in node.attrs
            else scalar_region(importer, scope, node))
    return scope.emit("reduce", operands, single_or_tuple(node),
                      dimensions=tuple(node.attrs["dimensions"]), to_apply=body)


def _padding_pairs(value, rank):
    if value is None:
        return ((0, 0),) * rank
    if isinstance(value, Dense):
        array = value.value if value.value is not None else None
        return tuple((int(lo), int(hi)) for lo, hi in np.asarray(array).reshape(rank, 2))
    return tuple((int(lo), int(hi)) for lo, hi in value)


def _window(attrs, rank, sizes=None):
    return Window.make(
        sizes or attrs["window_dimensions"], attrs.get("window_strides"),
        _padding_pairs(attrs.get("padding"), rank),
        attrs.get("base_dilations") or attrs.get("lhs_dilation"),
        attrs.get("window_dilations") or attrs.get("rhs_dilation"),
        attrs.get("window_reversal"))


@converter("stablehlo.reduce_window")
def _reduce_window(importer, scope, node, operands):
    rank = operands[0].shape.rank
    return scope.emit("reduce-window", operands, single_or_tuple(node),
                      window=_window(node.attrs, rank),
                      to_apply=scalar_region(importer, scope, node))


@converter("stablehlo.select_and_scatter")
def _select_and_scatter(importer, scope, node, operands):
    rank = operands[0].shape.rank
    select = scalar_region(importer, scope, node, 0)
    scatter = scalar_region(importer, scope, node, 1)
    return scope.emit("select-and-scatter", operands, result_type(node),
                      window=_window(node.attrs, rank), select=select, scatter=scatter)


@converter("stablehlo.sort")
def _sort(importer, scope, node, operands):
    rank = operands[0].shape.rank
    dim = int(node.attrs.get("dimension", -1))
    return scope.emit("sort", operands, single_or_tuple(node),
                      dimensions=(dim + rank if dim < 0 else dim,),
                      is_stable=bool(node.attrs.get("is_stable", False)),
                      to_apply=scalar_region(importer, scope, node))


@converter("chlo.top_k")
def _top_k(importer, scope, node, operands):
    return scope.emit("topk", operands, single_or_tuple(node), k=int(node.attrs["k"]),
                      largest=True)


# ---------------------------------------------------------------------------------------------
# Contractions


def _precision(node):
    value = node.attrs.get("precision_config")
    if not value:
        return None
    return tuple(enum_value(Precision, str(v).upper(), "precision") for v in value)


def _algorithm(node):
    value = node.attrs.get("algorithm")
    if value is None:
        return None
    return value.text if isinstance(value, RawAttr) else str(value)


@converter("stablehlo.dot_general")
def _dot_general(importer, scope, node, operands):
    dims = node.attrs.get("dot_dimension_numbers", {})
    return scope.emit("dot", operands, result_type(node),
                      lhs_batch_dims=tuple(dims.get("lhs_batching_dimensions", ())),
                      rhs_batch_dims=tuple(dims.get("rhs_batching_dimensions", ())),
                      lhs_contracting_dims=tuple(dims.get("lhs_contracting_dimensions", ())),
                      rhs_contracting_dims=tuple(dims.get("rhs_contracting_dimensions", ())),
                      operand_precision=_precision(node), algorithm=_algorithm(node))


@converter("stablehlo.dot")
def _dot(importer, scope, node, operands):
    lhs = operands[0].shape
    return scope.emit("dot", operands, result_type(node), lhs_contracting_dims=(lhs.rank - 1,),
                      rhs_contracting_dims=(0,), operand_precision=_precision(node),
                      frontend=((STABLEHLO_DOT, "true"),))


def conv_dimension_numbers(text: str) -> ConvDimensionNumbers:
    """``[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`` or the ``raw`` keyword form."""
    if text.strip().startswith("raw"):
        fields = {k: v for k, v in re.findall(r"(\w+)\s*=\s*(\[[^\]]*\]|\d+)", text)}

        def ints(key):
            return tuple(int(x) for x in re.findall(r"\d+", fields[key]))
        return ConvDimensionNumbers(
            ints("input_batch_dimension")[0], ints("input_feature_dimension")[0],
            ints("input_spatial_dimensions"), ints("kernel_input_feature_dimension")[0],
            ints("kernel_output_feature_dimension")[0], ints("kernel_spatial_dimensions"),
            ints("output_batch_dimension")[0], ints("output_feature_dimension")[0],
            ints("output_spatial_dimensions"))
    parts = re.findall(r"\[([^\]]*)\]", text)
    lhs, rhs, out = ("".join(p.replace(",", " ").split()) for p in parts)
    return ConvDimensionNumbers.from_labels(f"{lhs}_{rhs}->{out}")


@converter("stablehlo.convolution")
def _convolution(importer, scope, node, operands):
    a = node.attrs
    numbers = a["dimension_numbers"]
    dim_labels = conv_dimension_numbers(numbers.text if isinstance(numbers, RawAttr)
                                        else str(numbers))
    kernel = operands[1].shape
    sizes = [kernel.dims[d] for d in dim_labels.kernel_spatial]
    window = _window(a, len(sizes), sizes)
    return scope.emit("convolution", operands, result_type(node), window=window,
                      dim_labels=dim_labels,
                      feature_group_count=int(a.get("feature_group_count", 1)),
                      batch_group_count=int(a.get("batch_group_count", 1)),
                      operand_precision=_precision(node))


@converter("stablehlo.fft")
def _fft(importer, scope, node, operands):
    return scope.emit("fft", operands, result_type(node),
                      fft_type=enum_value(FftType, node.attrs["fft_type"], "fft type"),
                      fft_length=tuple(node.attrs["fft_length"]))


@converter("stablehlo.cholesky")
def _cholesky(importer, scope, node, operands):
    return scope.emit("cholesky", operands, result_type(node),
                      lower=bool(node.attrs.get("lower", False)))


@converter("stablehlo.triangular_solve")
def _triangular_solve(importer, scope, node, operands):
    a = node.attrs
    return scope.emit("triangular-solve", operands, result_type(node),
                      left_side=bool(a.get("left_side", False)), lower=bool(a.get("lower")),
                      unit_diagonal=bool(a.get("unit_diagonal", False)),
                      transpose_a=a.get("transpose_a"))


# ---------------------------------------------------------------------------------------------
# Random numbers


@converter("stablehlo.rng_bit_generator")
def _rng_bit_generator(importer, scope, node, operands):
    name = {"THREE_FRY": "THREE_FRY", "PHILOX": "PHILOX"}.get(node.attrs["rng_algorithm"],
                                                              "DEFAULT")
    return scope.emit("rng-bit-generator", operands, single_or_tuple(node),
                      algorithm=RngAlgorithm[name])


@converter("stablehlo.rng")
def _rng(importer, scope, node, operands):
    return scope.emit("rng", operands[:2], result_type(node),
                      distribution=enum_value(RngDistribution, node.attrs["rng_distribution"],
                                              "rng distribution"))


def sharding_text(shardings) -> str:
    return print_sharding_per_value(tuple(shardings))


def symbol_name(value) -> str:
    return value.name if isinstance(value, Symbol) else str(value)


__all__ = ["CONVERTERS", "convert_op", "free_values"]


def _bitcast_bits(importer, scope, x, out):
    """``bitcast_convert`` of pred[..., N] to an N-bit type, or of one to pred[..., N]."""
    from xla_spmd.ir import PRED, ArrayShape, Builder, DType

    packing = x.shape.dtype is PRED
    wide = out if packing else x.shape
    bits = wide.dtype.bits
    if (packing and x.shape.dims != wide.dims + (bits,)) or \
            (not packing and out.dims != wide.dims + (bits,)):
        raise importer.error(scope.node, f"bitcast_convert: {x.shape} and {out} are not i1 "
                                         f"bits of one {bits}-bit value each")
    unsigned = DType.named(f"u{bits}")
    lanes = ArrayShape(unsigned, wide.dims + (bits,))
    shifts = scope.emit("iota", (), lanes, iota_dimension=len(wide.dims))
    if packing:
        ones = scope.emit("convert", (x,), lanes)
        moved = scope.emit("shift-left", (ones, shifts), lanes)
        zero = scope.emit("constant", (), ArrayShape(unsigned, ()),
                          literal=_scalar_literal(0, unsigned))
        # Named as the importer names a region, so the exported text reads back the same.
        b = Builder(importer.computation_name("region"))
        left = b.parameter(ArrayShape(unsigned, ()), importer.fresh("Arg_0"))
        right = b.parameter(ArrayShape(unsigned, ()), importer.fresh("Arg_1"))
        reducer = b.build(b.op("or", left, right, name=importer.fresh("or")))
        word = scope.emit("reduce", (moved, zero), ArrayShape(unsigned, wide.dims),
                          dimensions=(len(wide.dims),), to_apply=reducer)
        return word if unsigned == out.dtype else scope.emit("bitcast-convert", (word,), out)
    word = x if x.shape.dtype == unsigned else scope.emit(
        "bitcast-convert", (x,), ArrayShape(unsigned, wide.dims))
    spread = scope.emit("broadcast", (word,), lanes, dimensions=tuple(range(len(wide.dims))))
    lowest = scope.emit("shift-right-logical", (spread, shifts), lanes)
    one = scope.emit("broadcast", (scope.emit("constant", (), ArrayShape(unsigned, ()),
                                              literal=_scalar_literal(1, unsigned)),),
                     lanes, dimensions=())
    return scope.emit("compare", (scope.emit("and", (lowest, one), lanes), one), out,
                      direction=_eq())


def _scalar_literal(value, dtype):
    from xla_spmd.ir import Literal

    return Literal(np.array(value, dtype=dtype.numpy))


def _eq():
    from xla_spmd.ir import ComparisonDirection

    return ComparisonDirection.EQ


@converter("stablehlo.batch_norm_inference", "stablehlo.batch_norm_training",
           "stablehlo.batch_norm_grad")
def _batch_norm(importer, scope, node, operands):
    attrs = node.attrs
    for name in ("epsilon", "feature_index"):
        if name not in attrs:
            raise importer.error(node, f"{node.name} needs the attribute '{name}'")
    opcode = node.name[len("stablehlo."):].replace("_", "-")
    return scope.emit(opcode, operands, single_or_tuple(node),
                      epsilon=float(attrs["epsilon"]),
                      feature_index=int(attrs["feature_index"]))
