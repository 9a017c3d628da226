"""Converters of StableHLO's ``map`` and of its dynamic-shape ops (spec:
dynamic_broadcast_in_dim, dynamic_conv, dynamic_gather, dynamic_iota, dynamic_pad,
dynamic_reshape) into their static forms.

Our IR has static shapes: each op's result type is static (as in every program the
interpreter runs), and the operands that give shapes, sizes or padding must be constants,
read at import time. Each op then is exactly its static counterpart with those values as
attributes (the spec defines each that way); a shape operand that disagrees with the result
type is an error naming it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from xla_spmd.stablehlo.importer_ops import (
    _broadcast_in_dim,
    _convolution,
    _gather,
    _iota,
    _pad,
    _reshape,
    converter,
    result_type,
    scalar_region,
)


def constant_ints(importer, node, value, what: str) -> tuple[int, ...]:
    """The integers of `value`, which must be a constant (its op's `what` operand)."""
    if value.opcode != "constant":
        raise importer.error(node, f"'{node.name}': its {what} operand must be a constant "
                                   f"(dynamic shapes are not supported), got {value.opcode}")
    return tuple(int(v) for v in np.asarray(value.attrs.literal.value).ravel())


def _with_attrs(node, **attrs):
    return dataclasses.replace(node, attrs={**node.attrs, **attrs})


def _check_shape(importer, node, value, what: str) -> None:
    shape = constant_ints(importer, node, value, what)
    dims = result_type(node).dims
    if shape != tuple(dims):
        raise importer.error(node, f"'{node.name}': {what} {list(shape)} differs from the "
                                   f"result shape {list(dims)}")


@converter("stablehlo.dynamic_iota")
def _dynamic_iota(importer, scope, node, operands):
    _check_shape(importer, node, operands[0], "output_shape")
    return _iota(importer, scope, node, [])


@converter("stablehlo.dynamic_reshape")
def _dynamic_reshape(importer, scope, node, operands):
    _check_shape(importer, node, operands[1], "output_shape")
    return _reshape(importer, scope, node, operands[:1])


@converter("stablehlo.dynamic_broadcast_in_dim")
def _dynamic_broadcast_in_dim(importer, scope, node, operands):
    _check_shape(importer, node, operands[1], "output_dimensions")
    return _broadcast_in_dim(importer, scope, node, operands[:1])


@converter("stablehlo.dynamic_pad")
def _dynamic_pad(importer, scope, node, operands):
    low, high, interior = (constant_ints(importer, node, v, w) for v, w in zip(
        operands[2:], ("edge_padding_low", "edge_padding_high", "interior_padding")))
    return _pad(importer, scope, _with_attrs(node, edge_padding_low=low,
                                             edge_padding_high=high,
                                             interior_padding=interior), operands[:2])


@converter("stablehlo.dynamic_gather")
def _dynamic_gather(importer, scope, node, operands):
    sizes = constant_ints(importer, node, operands[2], "slice_sizes")
    return _gather(importer, scope, _with_attrs(node, slice_sizes=sizes), operands[:2])


@converter("stablehlo.dynamic_conv")
def _dynamic_conv(importer, scope, node, operands):
    padding = constant_ints(importer, node, operands[2], "padding")
    pairs = tuple(zip(padding[0::2], padding[1::2]))
    return _convolution(importer, scope, _with_attrs(node, padding=pairs), operands[:2])


@converter("stablehlo.map")
def _map(importer, scope, node, operands):
    rank = result_type(node).rank
    dims = tuple(node.attrs.get("dimensions", range(rank)))
    if dims != tuple(range(rank)):  # the spec allows only 0..rank-1, in order
        raise importer.error(node, f"'stablehlo.map': dimensions {list(dims)} must be "
                                   f"{list(range(rank))}")
    return scope.emit("map", operands, result_type(node), dimensions=dims,
                      to_apply=scalar_region(importer, scope, node))


# ---------------------------------------------------------------------------------------------
# bitcast_convert to and from i1: StableHLO's i1 is one bit (element 0 the least significant),
# our pred (XLA's) one byte, so the bits are packed and unpacked with integer ops.


@converter("stablehlo.uniform_quantize", "stablehlo.uniform_dequantize")
def _uniform_quantization(importer, scope, node, operands):
    # Reached only when no type of the op is quantized (importer_quant lowers the others).
    raise importer.error(node, f"'{node.name}' needs a !quant.uniform operand or result type")
