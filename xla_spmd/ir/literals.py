"""HLO literal text ⇄ numpy: the value inside ``constant(...)``.

Spelling follows XLA's ``Literal::PrintWithoutShapeOneline`` (op_semantics §3.2):

* floats use the shortest of ``%.{digits10}g`` and ``%.{max_digits10}g`` that reads back to
  the same value (f32 6/9, f64 15/17, f16 3/5, bf16 2/4 significant digits); specials are
  ``inf``, ``-inf``, ``nan``, ``-nan`` and ``nan(0x<payload>)`` for a non-default NaN payload;
* integers are decimal; ``pred`` scalars are ``true``/``false``, array elements ``1``/``0``;
* complex elements are ``(re, im)``; tuples ``( a, b )``;
* rank 1 arrays are ``{1, 2, 3}``; rank ≥ 2 nest one brace level per dimension with spaces,
  ``{ { 1, 2 }, { 3, 4 } }``, and rank ≥ 4 adds ``/*i0=1*/`` index comments (skipped on read).

>>> import numpy as np
>>> from xla_spmd.ir.shapes import ArrayShape
>>> from xla_spmd.ir.dtypes import F32
>>> shape = ArrayShape(F32, (2, 2))
>>> text = format_literal(Literal(np.array([[1, 0.1], [1e10, -np.inf]], np.float32)))
>>> text
'{ { 1, 0.1 }, { 1e+10, -inf } }'
>>> parse_literal(text, shape) == Literal(np.array([[1, 0.1], [1e10, -np.inf]], np.float32))
True
"""

from __future__ import annotations

import math
import re

import ml_dtypes
import numpy as np

from xla_spmd.errors import ParseError
from xla_spmd.ir.attributes import Literal
from xla_spmd.ir.dtypes import DType, Kind
from xla_spmd.ir.shapes import ArrayShape, TupleShape

_TOKEN_RE = re.compile(r"\s+|/\*.*?\*/|[{}(),]|[-+]?nan\(0x[0-9a-fA-F]+\)|[^\s{}(),/]+",
                       re.DOTALL)
_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_IEEE = ("f16", "bf16", "f32", "f64")


# ---------------------------------------------------------------------------------------------
# Printing


def _float_format(dtype: DType) -> tuple[int, int, int]:
    """(mantissa bits, digits10, max_digits10) of a float type, as std::numeric_limits."""
    mantissa = int(ml_dtypes.finfo(dtype.numpy).nmant)
    digits = mantissa + 1
    return (mantissa, int(math.floor((digits - 1) * math.log10(2))),
            int(math.ceil(digits * math.log10(2) + 1)))


def format_float(value, dtype: DType) -> str:
    """One float element as XLA prints it (`RoundTripFpToString`)."""
    x = np.asarray(value, dtype=dtype.numpy)
    mantissa, digits10, max_digits10 = _float_format(dtype)
    as_double = float(x)
    if math.isnan(as_double):
        bits = int(x.view(_UINT[dtype.bits]))
        negative = bits >> (dtype.bits - 1) & 1
        sign = "-" if negative else ""
        payload = bits & ((1 << mantissa) - 1)
        if dtype.name in _IEEE and payload != 1 << (mantissa - 1):
            return f"{sign}nan(0x{payload:x})"
        return f"{sign}nan"
    if math.isinf(as_double):
        return "inf" if as_double > 0 else "-inf"
    text = ""
    for digits in (max(digits10, 1), max_digits10):
        text = f"{as_double:.{digits}g}"
        if np.asarray(float(text), dtype=dtype.numpy) == x:
            return text
    return text


def format_element(value, dtype: DType, in_array: bool) -> str:
    """One element of a literal of type `dtype`."""
    if dtype.kind is Kind.PRED:
        if in_array:
            return "1" if bool(value) else "0"
        return "true" if bool(value) else "false"
    if dtype.kind is Kind.FLOAT:
        return format_float(value, dtype)
    if dtype.kind is Kind.COMPLEX:
        part = dtype.real_type
        return f"({format_float(value.real, part)}, {format_float(value.imag, part)})"
    return str(int(value))


def format_array(array: np.ndarray, dtype: DType) -> str:
    """A dense array in XLA's one-line form (see the module docstring)."""
    rank = array.ndim
    if rank == 0:
        return format_element(array[()], dtype, in_array=False)
    pieces: list[str] = []

    def brace(text: str, dims: tuple[int, ...], indices: list[int]) -> str:
        if rank == 1:
            return text
        if len(dims) == 1:
            if text == "{":
                return "{" + ("" if dims[0] <= 1 else " ")
            return ("" if dims[0] <= 1 else " ") + "}"
        if text == "{":
            if rank > 3 and indices:
                return f"{{ /*i{len(indices) - 1}={indices[-1]}*/" + (" " if dims[0] > 0 else "")
            return "{ "
        return " }"

    def visit(dims: tuple[int, ...], indices: list[int]) -> None:
        if not dims:
            pieces.append(format_element(array[tuple(indices)], dtype, in_array=True))
            return
        pieces.append(brace("{", dims, indices))
        for i in range(dims[0]):
            indices.append(i)
            visit(dims[1:], indices)
            indices.pop()
            if i < dims[0] - 1:
                pieces.append(", ")
        pieces.append(brace("}", dims, indices))

    visit(array.shape, [])
    return "".join(pieces)


def format_literal(literal: Literal, shape=None) -> str:
    """The text of `literal` (a tuple literal prints as ``( a, b )``)."""
    if isinstance(literal.value, tuple):
        elements = shape.elements if isinstance(shape, TupleShape) else [None] * len(
            literal.value)
        return "( " + ", ".join(format_literal(e, s)
                                for e, s in zip(literal.value, elements)) + " )"
    dtype = shape.dtype if isinstance(shape, ArrayShape) else DType.from_numpy(
        literal.value.dtype)
    return format_array(literal.value, dtype)


# ---------------------------------------------------------------------------------------------
# Parsing


class _Tokens:
    def __init__(self, text: str):
        self.text = text
        self.items: list[tuple[str, int]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN_RE.match(text, pos)
            if m is None:  # an unterminated comment or a lone '/'
                raise ParseError(f"unexpected {text[pos:pos + 10]!r} in literal",
                                 column=pos + 1)
            if not (m.group().isspace() or m.group().startswith("/*")):
                self.items.append((m.group(), pos))
            pos = m.end()
        self.index = 0

    def peek(self) -> str:
        return self.items[self.index][0] if self.index < len(self.items) else ""

    def offset(self) -> int:
        return self.items[self.index][1] if self.index < len(self.items) else len(self.text)

    def error(self, message: str) -> ParseError:
        return ParseError(message, column=self.offset() + 1)

    def take(self) -> str:
        token = self.peek()
        if not token:
            raise self.error("unexpected end of literal")
        self.index += 1
        return token

    def expect(self, token: str, context: str) -> None:
        if self.peek() != token:
            found = repr(self.peek()) if self.peek() else "end of literal"
            raise self.error(f"expected '{token}' {context}, found {found}")
        self.index += 1


def _nan_bits(dtype: DType, negative: bool, payload: int | None) -> int:
    mantissa, _, _ = _float_format(dtype)
    exponent = dtype.bits - 1 - mantissa
    payload = (1 << (mantissa - 1)) if payload is None else payload
    return (int(negative) << (dtype.bits - 1)) | (((1 << exponent) - 1) << mantissa) | payload


class _ElementReader:
    """Reads elements of one element type, collecting values and NaN bit patterns."""

    def __init__(self, dtype: DType, tokens: _Tokens):
        self.dtype = dtype
        self.tokens = tokens
        self.values: list = []
        self.nan_bits: dict[int, int] = {}

    def real(self, dtype: DType) -> float:
        token = self.tokens.take()
        low = token.lower()
        nan = re.fullmatch(r"([-+]?)nan(?:\(0x([0-9a-f]+)\))?", low)
        if nan:
            if dtype.name in _IEEE:
                self.nan_bits[len(self.values)] = _nan_bits(
                    dtype, nan.group(1) == "-", None if nan.group(2) is None
                    else int(nan.group(2), 16))
            return -math.nan if nan.group(1) == "-" else math.nan
        try:
            return float(token)
        except ValueError:
            raise ParseError(f"expected a {dtype.name} number, found {token!r}",
                             column=self.tokens.items[self.tokens.index - 1][1] + 1) from None

    def element(self) -> None:
        dtype, tokens = self.dtype, self.tokens
        if dtype.kind is Kind.COMPLEX:
            tokens.expect("(", "to open a complex number")
            real = self.real(dtype.real_type)
            tokens.expect(",", "between the parts of a complex number")
            imag = self.real(dtype.real_type)
            tokens.expect(")", "to close a complex number")
            self.values.append(complex(real, imag))
        elif dtype.kind is Kind.FLOAT:
            self.values.append(self.real(dtype))
        else:
            position = tokens.offset()
            token = tokens.take()
            if dtype.kind is Kind.PRED and token in ("true", "false"):
                self.values.append(token == "true")
                return
            try:
                value = int(token, 0) if token.lower().startswith(("0x", "-0x")) else int(token)
            except ValueError:
                raise ParseError(f"expected a {dtype.name} integer, found {token!r}",
                                 column=position + 1) from None
            self.values.append(bool(value) if dtype.kind is Kind.PRED else value)

    def array(self, dims: tuple[int, ...]) -> None:
        if not dims:
            self.element()
            return
        tokens = self.tokens
        tokens.expect("{", f"to open a dimension of size {dims[0]}")
        count = 0
        if tokens.peek() != "}":
            while True:
                self.array(dims[1:])
                count += 1
                if tokens.peek() != ",":
                    break
                tokens.take()
        if count != dims[0] and not (count == 0 and math.prod(dims) == 0):
            raise tokens.error(f"expected {dims[0]} elements in this dimension, found {count}")
        tokens.expect("}", "to close a dimension")

    def build(self, dims: tuple[int, ...]) -> np.ndarray:
        dtype = self.dtype
        try:
            array = np.array(self.values, dtype=dtype.numpy)
        except OverflowError as error:
            raise ParseError(f"literal value out of range for {dtype.name}: {error}") from None
        if self.nan_bits:
            view = array.view(_UINT[dtype.bits])
            for index, bits in self.nan_bits.items():
                view[index] = bits
        return array.reshape(dims)


def _parse(tokens: _Tokens, shape) -> Literal:
    if isinstance(shape, TupleShape):
        tokens.expect("(", "to open a tuple literal")
        elements = []
        for i, element in enumerate(shape.elements):
            if i:
                tokens.expect(",", "between tuple literal elements")
            elements.append(_parse(tokens, element))
        tokens.expect(")", "to close a tuple literal")
        return Literal(tuple(elements))
    if shape.dtype.numpy is None:
        raise tokens.error(f"{shape.dtype.name} has no literal values")
    reader = _ElementReader(shape.dtype, tokens)
    reader.array(shape.dims)
    return Literal(reader.build(shape.dims))


def parse_literal(text: str, shape) -> Literal:
    """The literal written as `text` for a constant of `shape`.

    Raises `ParseError` whose ``column`` is the 1-based offset in `text`.
    """
    tokens = _Tokens(text)
    if tokens.peek() == "{" and tokens.items[min(1, len(tokens.items) - 1)][0] == "...":
        raise tokens.error("constant elided by the printer cannot be parsed (print with "
                           "large constants to get its value)")
    literal = _parse(tokens, shape)
    if tokens.peek():
        raise tokens.error(f"unexpected {tokens.peek()!r} after the literal")
    return literal
