"""MLIR tensor types and ``dense<...>`` literals, read and written.

>>> from xla_spmd.stablehlo.lexer import Scanner
>>> shape = parse_type(Scanner("tensor<4x8xbf16>"))
>>> str(shape), print_type(shape)
('bf16[4,8]', 'tensor<4x8xbf16>')
>>> import numpy as np
>>> print_dense(np.array([[1.0, 2.0]], np.float32))
'dense<[[1.000000e+00, 2.000000e+00]]>'
>>> parse_dense('[[1.000000e+00, 0x7F800000]]', parse_type(Scanner("tensor<1x2xf32>")))
array([[ 1., inf]], dtype=float32)
"""

from __future__ import annotations

import re

import numpy as np

from xla_spmd.errors import MAX_NESTING, TOO_DEEP, ParseError
from xla_spmd.ir import OPS, TOKEN_SHAPE, ArrayShape, DType, Family, Shape, TupleShape
from xla_spmd.stablehlo.float_text import format_float
from xla_spmd.stablehlo.lexer import Scanner

# Unary and binary HLO ops spelled ``stablehlo.<opcode with '_' for '-'>`` with no attributes;
# the others have converters and printers of their own.
_OWN_FORM = frozenset({"erf", "compare", "copy", "reduce-precision"})
PLAIN_ELEMENTWISE = tuple(name for name, op in OPS.items()
                          if op.family in (Family.UNARY, Family.BINARY) and name not in _OWN_FORM)

_BY_MLIR = {}
for _dtype in DType._by_name.values():
    _BY_MLIR.setdefault(_dtype.mlir, _dtype)
_BY_MLIR.update({"i1": DType.named("pred"), "si8": DType.named("s8"),
                 "si16": DType.named("s16"), "si32": DType.named("s32"),
                 "si64": DType.named("s64")})
_DIM = re.compile(r"(\d+|\?)x")
_ELEMENT = re.compile(r"[A-Za-z][\w]*")


def element_type(name: str, scanner: Scanner | None = None) -> DType:
    try:
        return _BY_MLIR[name]
    except KeyError:
        message = f"unsupported element type {name!r}"
        raise (scanner.error(message) if scanner else ParseError(message)) from None


def parse_type(s: Scanner, depth: int = 0):
    """A type at the cursor: ``tensor<...>``, ``tuple<...>`` or ``!stablehlo.token``."""
    start = s.pos
    if s.accept("!stablehlo.token") or s.accept("!mhlo.token"):
        return TOKEN_SHAPE
    if s.accept("tuple<"):
        if depth >= MAX_NESTING:
            raise s.error(f"tuple type {TOO_DEEP}", start)
        elements = []
        if not s.accept(">"):
            while True:
                elements.append(parse_type(s, depth + 1))
                if s.accept(">"):
                    break
                s.expect(",")
        return TupleShape(tuple(elements))
    if not s.accept("tensor<"):
        raise s.error(f"expected a type (tensor<...>, tuple<...> or !stablehlo.token) but "
                      f"found {s.found()}")
    dims = []
    while True:
        dim = s.try_match(_DIM)
        if dim is None:
            break
        if dim[0] == "?":
            raise s.error("dynamic dimensions (?) are not supported", start)
        dims.append(int(dim[:-1]))
    if s.accept("complex<"):
        name = "complex<" + s.match(_ELEMENT, "an element type") + ">"
        s.expect(">")
    elif s.peek("!quant.uniform"):
        from xla_spmd.stablehlo.importer_quant import QuantizedShape, parse_quantization
        s.accept("!quant.uniform")
        body_pos = s.pos
        body = s.balanced()[1:-1]
        try:
            quantization = parse_quantization(body, element_type)
        except ParseError as error:
            raise s.error(error.message, body_pos) from None
        s.expect(">")
        return QuantizedShape(quantization.storage, tuple(dims), quantization=quantization)
    else:
        name = s.match(_ELEMENT, "an element type")
    dtype = element_type(name, s)
    if s.peek(","):  # an encoding (bounds, quantization): not supported, skip it
        s.accept(",")
        if s.peek("<"):
            s.balanced()
        else:
            s.match(re.compile(r"#[\w.]+"), "an encoding")
            if s.peek("<"):
                s.balanced()
    s.expect(">")
    return ArrayShape(dtype, tuple(dims))


def print_type(shape) -> str:
    if isinstance(shape, TupleShape):
        return "tuple<" + ", ".join(print_type(e) for e in shape.elements) + ">"
    if shape.is_token:
        return "!stablehlo.token"
    return "tensor<" + "".join(f"{d}x" for d in shape.dims) + shape.dtype.mlir + ">"


# ---------------------------------------------------------------------------------------------
# dense<...>

_ITEM = re.compile(r'\s*(?:"0x[0-9A-Fa-f]*"|0x[0-9A-Fa-f]+|true|false|[-+]?(?:inf|nan|\d+\.?\d*'
                   r"(?:[eE][-+]?\d+)?)|[\[\](),])")


def _bits_view(dtype: DType):
    """The unsigned integer type holding `dtype`'s bits (sub-byte types take a byte)."""
    return {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[max(dtype.bits, 8)]


class DenseLiteralError(ParseError):
    """A malformed ``dense<...>`` body; `offset` is where in the body the fault lies, so the
    caller can point at the exact line and column."""

    def __init__(self, message: str, offset: int = 0):
        super().__init__(message)
        self.offset = offset


def _int_range(dtype: DType) -> tuple[int, int]:
    if dtype.is_signed:
        return -(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1
    return 0, (1 << dtype.bits) - 1


def _scalar(token: str, offset: int, dtype: DType):
    """The value of one element token, checked against `dtype`."""
    if token in ("[", "]", "(", ")", ","):
        raise DenseLiteralError(f"expected a number but found '{token}'", offset)
    if token in ("true", "false"):
        return token == "true"
    if token.startswith('"'):
        raise DenseLiteralError("a quoted hex payload must be the whole dense literal",
                                offset)
    if token.startswith("0x") and (dtype.is_float or dtype.is_complex):
        base = dtype.real_type
        bits = int(token, 16)
        if bits >= 1 << base.bits:
            raise DenseLiteralError(f"bit pattern {token} does not fit {base.mlir}", offset)
        return np.array(bits, _bits_view(base)).view(base.array_dtype)[()]
    if dtype.is_float or dtype.is_complex:
        return float(int(token, 16)) if token.startswith("0x") else float(token)
    try:
        value = int(token, 0)
    except ValueError:
        raise DenseLiteralError(f"expected an integer of type {dtype.mlir} but found "
                                f"'{token}'", offset) from None
    if dtype.is_pred:
        if value not in (0, 1):
            raise DenseLiteralError(f"value {value} does not fit i1 (expected true, false, "
                                    "0 or 1)", offset)
        return bool(value)
    low, high = _int_range(dtype)
    if not low <= value <= high:
        raise DenseLiteralError(f"value {value} does not fit {dtype.mlir} (range {low} to "
                                f"{high})", offset)
    return value


# A splat larger than this stays one value broadcast (read-only): a program may declare a
# constant larger than memory, which `xla-spmd run` then refuses by name.
_SPLAT_VIEW_BYTES = 1 << 26


def parse_dense(body: str, shape: Shape) -> np.ndarray:
    """The value of ``dense<body>`` for a tensor of `shape` (row-major nesting, splats, hex
    bit patterns per element, or one quoted hex payload).

    Errors are `DenseLiteralError` with the offset in `body` of the fault."""
    if not isinstance(shape, ArrayShape) or shape.is_token:
        raise DenseLiteralError(f"a dense literal needs a tensor type, not {shape}")
    dtype = shape.dtype
    lead = len(body) - len(body.lstrip())
    stripped = body.strip()
    if stripped.startswith('"0x'):
        if not stripped.endswith('"'):
            raise DenseLiteralError("unterminated hex payload; expected a closing '\"'", lead)
        return _from_hex_payload(stripped[3:-1], shape, lead)
    tokens: list[tuple[str, int]] = []
    pos = 0
    while pos < len(body):
        match = _ITEM.match(body, pos)
        if match is None or not match.group().strip():
            rest = body[pos:].lstrip()
            if not rest:
                break
            offset = len(body) - len(rest)
            raise DenseLiteralError(f"expected a number, true, false, '[' or ']' but found "
                                    f"'{rest[:20]}'", offset)
        text = match.group()
        tokens.append((text.strip(), match.end() - len(text.lstrip())))
        pos = match.end()
    values = []
    depth_counts: dict[int, int] = {}  # list length at each nesting depth
    end_offset = len(body.rstrip())

    def token(i: int, expected: str) -> tuple[str, int]:
        if i >= len(tokens):
            raise DenseLiteralError(f"dense literal ends early; expected {expected}",
                                    end_offset)
        return tokens[i]

    def read(i: int, depth: int) -> int:
        text, offset = token(i, "a value or '['")
        if text == "[":
            if depth >= MAX_NESTING:
                raise DenseLiteralError(f"dense literal {TOO_DEEP}", offset)
            count = 0
            list_offset = offset
            i += 1
            while token(i, "']'")[0] != "]":
                i = read(i, depth + 1)
                count += 1
                text, offset = token(i, "',' or ']'")
                if text == ",":
                    i += 1
                elif text != "]":
                    raise DenseLiteralError(f"expected ',' or ']' but found '{text}'", offset)
            if depth not in depth_counts:
                depth_counts[depth] = count
            elif depth_counts[depth] != count:
                raise DenseLiteralError(f"ragged dense literal: a list of {count} elements "
                                        f"where the others have {depth_counts[depth]}",
                                        list_offset)
            return i + 1
        if text == "(":
            if not dtype.is_complex:
                raise DenseLiteralError(f"a complex value '(re, im)' in a literal of type "
                                        f"{dtype.mlir}", offset)
            real = _scalar(*token(i + 1, "a real part"), dtype)
            comma, comma_offset = token(i + 2, "','")
            imag = _scalar(*token(i + 3, "an imaginary part"), dtype)
            close, close_offset = token(i + 4, "')'")
            if comma != "," or close != ")":
                raise DenseLiteralError("expected a complex value '(re, im)'", offset)
            values.append(complex(real, imag))
            return i + 5
        values.append(_scalar(text, offset, dtype))
        return i + 1

    if not tokens:
        if shape.num_elements == 0:  # dense<> : tensor<0xi32>, a tensor without elements
            return np.zeros(shape.dims, dtype.numpy)
        raise DenseLiteralError(f"empty dense literal, but {print_type(shape)} has "
                                f"{shape.num_elements} elements; expected a value or '['",
                                lead)
    last = read(0, 0)
    depth_shape = [depth_counts[d] for d in sorted(depth_counts)]
    if last < len(tokens):
        text, offset = tokens[last]
        raise DenseLiteralError(f"unexpected '{text}' after the end of the dense literal",
                                offset)
    numpy_dtype = dtype.array_dtype
    if dtype.is_float:
        array = np.array([float(v) for v in values], np.float64).astype(numpy_dtype)
    elif dtype.is_complex:
        array = np.array(values, np.complex128).astype(numpy_dtype)
    else:
        array = np.array(values, dtype=object).astype(numpy_dtype) if values else \
            np.zeros(0, numpy_dtype)
    if array.size == 1 and not depth_shape:
        if shape.num_elements * numpy_dtype.itemsize > _SPLAT_VIEW_BYTES:
            return np.broadcast_to(array.reshape(()), shape.dims)  # one value, read-only
        return np.full(shape.dims, array[0], numpy_dtype)
    if array.size != shape.num_elements:
        raise DenseLiteralError(f"dense literal has {array.size} elements but "
                                f"{print_type(shape)} needs {shape.num_elements}", lead)
    if array.size and tuple(depth_shape) != tuple(shape.dims):
        found = "x".join(map(str, depth_shape))
        raise DenseLiteralError(f"dense literal has shape [{found}] but {print_type(shape)} "
                                f"needs "
                                f"[{'x'.join(map(str, shape.dims))}]", lead)
    return array.reshape(shape.dims)


def _from_hex_payload(digits: str, shape: ArrayShape, offset: int = 0) -> np.ndarray:
    try:
        data = bytes.fromhex(digits)
    except ValueError:
        raise DenseLiteralError("a hex payload needs an even number of hex digits (0-9, A-F)",
                                offset) from None
    dtype = shape.dtype
    n = shape.num_elements
    if dtype.is_pred:
        if len(data) == n or len(data) == 1:
            flat = np.frombuffer(data, np.uint8) != 0
        else:
            flat = np.unpackbits(np.frombuffer(data, np.uint8), bitorder="little")[:n] != 0
        return np.broadcast_to(flat, (n,)).reshape(shape.dims).copy() if flat.size == 1 \
            else flat.reshape(shape.dims)
    itemsize = max(1, dtype.bits // 8)
    if len(data) % itemsize:
        raise DenseLiteralError(f"hex dense payload has {len(data)} bytes, not a multiple of "
                                f"{itemsize} (one {dtype.mlir})", offset)
    numpy_dtype = dtype.array_dtype
    flat = np.frombuffer(data, numpy_dtype.newbyteorder("<") if itemsize > 1 else numpy_dtype)
    flat = flat.astype(dtype.numpy)
    if flat.size == 1 and n != 1:
        return np.full(shape.dims, flat[0], dtype.numpy)
    if flat.size != n:
        raise DenseLiteralError(f"hex dense payload has {flat.size} elements but "
                                f"{print_type(shape)} needs {n}", offset)
    return flat.reshape(shape.dims)


def _format(value, dtype: DType) -> str:
    if dtype.is_pred:
        return "true" if value else "false"
    if dtype.is_complex:
        real = dtype.real_type
        return f"({format_float(value.real, real)},{format_float(value.imag, real)})"
    if dtype.is_float:
        return format_float(value, dtype)
    return str(int(value))


def print_dense(array: np.ndarray) -> str:
    """``dense<...>`` as MLIR prints it: a splat, nested lists, a hex payload (> 100
    elements), or ``dense<>`` when there are no elements."""
    dtype = DType.from_numpy(array.dtype)
    if not array.size:
        return "dense<>"
    if array.size and (array.size == 1 or _all_equal(array)):
        return f"dense<{_format(array.reshape(-1)[0], dtype)}>"
    if array.size > 100:
        if dtype.is_pred:
            payload = array.astype(np.uint8).tobytes()
        else:
            payload = array.astype(array.dtype.newbyteorder("<")).tobytes() \
                if dtype.itemsize > 1 else array.tobytes()
        return f'dense<"0x{payload.hex().upper()}">'

    def nest(a) -> str:
        if a.ndim == 0:
            return _format(a[()], dtype)
        return "[" + ", ".join(nest(x) for x in a) + "]"
    return f"dense<{nest(array)}>"


def _all_equal(array: np.ndarray) -> bool:
    flat = array.reshape(-1)
    if array.dtype.kind in "fc" or array.dtype.kind == "V":
        bits = flat.view(np.dtype(f"u{array.dtype.itemsize}")) if array.dtype.kind != "c" \
            else flat.view(np.uint8).reshape(flat.size, -1)
        return bool(np.all(bits == bits[0]))
    return bool(np.all(flat == flat[0]))
