"""Quantized element types (``!quant.uniform``) lowered at import to integer and float ops,
with the StableHLO spec's semantics (§ "Quantization" of docs/spec.md):

* a quantized tensor is its storage integers: ``bitcast_convert`` to or from the storage type
  is the identity;
* ``dequantize(x) = convert(x - zero_point, expressed) * scale`` (per tensor, or per slice of
  the quantization dimension);
* ``quantize(x) = convert(round_nearest_even(clamp(min, x / scale + zero_point, max)))``;
* ``uniform_quantize`` quantizes a float tensor or requantizes a quantized one,
  ``uniform_dequantize`` dequantizes, and every other op on quantized tensors is
  ``dequantize_op_quantize``: its quantized operands are dequantized, the op runs on the
  expressed type, and its quantized results are quantized.

Worked example: ``!quant.uniform<i8:f32, 0.5:-20>`` stores 15.0 as ``15 / 0.5 - 20 = 10``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import numpy as np

from xla_spmd.errors import ParseError
from xla_spmd.ir import ArrayShape, DType, Literal


@dataclass(frozen=True)
class Quantization:
    """The parameters of a ``!quant.uniform`` element type."""

    storage: DType
    storage_min: int
    storage_max: int
    expressed: DType
    axis: int | None
    scales: tuple[float, ...]
    zero_points: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class QuantizedShape(ArrayShape):
    """A tensor type whose elements are quantized: its storage shape plus the parameters.
    Only the importer sees it; instructions get the storage (or expressed) shape."""

    quantization: Quantization | None = None


_UNIFORM = re.compile(r"\s*(u?i\d+)\s*(?:<\s*(-?\d+)\s*:\s*(-?\d+)\s*>)?\s*:\s*(\w+)\s*"
                      r"(?::\s*(\d+))?\s*,\s*(.*?)\s*$", re.S)
_PARAM = re.compile(r"\s*([-+0-9.eE]+)\s*(?::\s*(-?\d+))?\s*$")


def parse_quantization(body: str, element_type) -> Quantization:
    """``i8:f32:0, {0.1:-30, 0.5:-20}`` (the text inside ``!quant.uniform<...>``)."""
    match = _UNIFORM.fullmatch(body)
    if match is None:
        raise ParseError(f"expected !quant.uniform<storage[<min:max>]:expressed[:axis], "
                         f"scale[:zero_point] or {{...}}>, got <{body}>")
    storage_name, low, high, expressed, axis, params = match.groups()
    if storage_name.startswith("u"):
        storage_name = "ui" + storage_name[1:]
    storage = element_type(storage_name)
    info = np.iinfo(storage.numpy)
    items = params[1:-1].split(",") if params.startswith("{") else [params]
    scales, zero_points = [], []
    for item in items:
        found = _PARAM.fullmatch(item)
        if found is None:
            raise ParseError(f"expected scale[:zero_point] in !quant.uniform, got {item!r}")
        scales.append(float(found.group(1)))
        zero_points.append(int(found.group(2) or 0))
    return Quantization(storage, int(low) if low else int(info.min),
                        int(high) if high else int(info.max), element_type(expressed),
                        int(axis) if axis is not None else None, tuple(scales),
                        tuple(zero_points))


def plain(shape):
    """The storage shape of a quantized type (any other shape as it is)."""
    if isinstance(shape, QuantizedShape):
        return ArrayShape(shape.dtype, shape.dims)
    return shape


def _per_element(q: Quantization, values, dims, dtype) -> np.ndarray:
    """Scales or zero points broadcast over a tensor of `dims`."""
    array = np.asarray(values, dtype=dtype)
    if q.axis is None:
        return np.full(dims, array[0], dtype)
    shape = [1] * len(dims)
    shape[q.axis] = dims[q.axis]
    return np.broadcast_to(array.reshape(shape), dims).copy()


def _constant(scope, array: np.ndarray, dtype: DType):
    return scope.emit("constant", (), ArrayShape(dtype, array.shape),
                      literal=Literal(np.asarray(array, dtype.numpy)))


def dequantize(scope, x, q: Quantization):
    dims = x.shape.dims
    shape = ArrayShape(q.expressed, dims)
    zero = _constant(scope, _per_element(q, q.zero_points, dims, q.storage.numpy), q.storage)
    shifted = scope.emit("subtract", (x, zero))
    scale = _constant(scope, _per_element(q, q.scales, dims, q.expressed.numpy), q.expressed)
    return scope.emit("multiply", (scope.emit("convert", (shifted,), shape), scale))


def quantize(scope, x, q: Quantization):
    dims = x.shape.dims
    expressed = x.shape.dtype
    scale = _constant(scope, _per_element(q, q.scales, dims, expressed.numpy), expressed)
    zero = _constant(scope, _per_element(q, q.zero_points, dims, expressed.numpy), expressed)
    scaled = scope.emit("add", (scope.emit("divide", (x, scale)), zero))
    low = _constant(scope, np.array(q.storage_min), expressed)
    high = _constant(scope, np.array(q.storage_max), expressed)
    clamped = scope.emit("clamp", (low, scaled, high))
    rounded = scope.emit("round-nearest-even", (clamped,))
    return scope.emit("convert", (rounded,), ArrayShape(q.storage, dims))


def is_quantized_op(importer, node, operands) -> bool:
    return any(isinstance(t, QuantizedShape) for t in node.result_types) or any(
        id(o) in importer.quantized for o in operands)


def convert_quantized(fn, importer, scope, node, operands):
    """`node` (whose operands or results are quantized) as dequantize -> op -> quantize."""
    quant_in = [importer.quantized.get(id(o), (None, None))[1] for o in operands]
    quant_out = [t.quantization if isinstance(t, QuantizedShape) else None
                 for t in node.result_types]
    if node.name == "stablehlo.bitcast_convert" and (quant_in[0] or quant_out[0]):
        # A quantized tensor is its storage integers: a new value, with or without the type.
        results = [scope.emit("bitcast-convert", (operands[0],), plain(node.result_types[0]))]
    elif node.name == "stablehlo.uniform_dequantize":
        results = [dequantize(scope, operands[0], quant_in[0])]
    elif node.name == "stablehlo.uniform_quantize":
        x = operands[0] if quant_in[0] is None else dequantize(scope, operands[0], quant_in[0])
        assert quant_out[0] is not None  # the verifier: uniform_quantize makes a quantized type
        results = [quantize(scope, x, quant_out[0])]
    else:
        floats = [o if q is None else dequantize(scope, o, q)
                  for o, q in zip(operands, quant_in)]
        types = [ArrayShape(q.expressed, t.dims) if q is not None else t
                 for t, q in zip(node.result_types, quant_out)]
        value = fn(importer, scope, dataclasses.replace(node, result_types=types), floats)
        values = value if isinstance(value, list) else (
            scope.unpack(value) if len(types) > 1 else [value])
        results = [v if q is None else quantize(scope, v, q) for v, q in zip(values, quant_out)]
    for value, q in zip(results, quant_out):
        if q is not None:
            importer.quantized[id(value)] = (value, q)
    return results if len(results) != 1 else results[0]
