"""Render a fusion as LLVM IR text: one function per fusion, loops over the output.

Invariants:

* A loop kernel is ``void @f(ptr noalias %out, ptr noalias %in0, ...)``: a loop nest over
  the output in row-major order whose innermost loop runs over the last (contiguous) dim, so
  LLVM vectorizes it; every input is a C-contiguous buffer of its instruction's shape.
* A reduce kernel is ``void @f(ptr noalias %acc, ptr noalias %in0, ...)``: ``acc`` holds the
  output in its accumulation type (f32 for f16/bf16), already filled with the init value; the
  loop nest runs over the reduced operand in row-major order, so each output element folds its
  elements in row-major order of the reduced dims.
* Values are computed in the compute type (f32 for f16/bf16, ``i1`` for pred) and every
  f16/bf16 result is rounded to its storage type at once, as XLA's evaluator and the reference
  do. No fast-math flags and no FMA contraction: IEEE results bit-identical to numpy's.
* Integer ops keep XLA's rules: division by zero gives -1 (all ones), ``INT_MIN / -1`` is
  ``INT_MIN``, remainder by zero gives the dividend, shifts by at least the width give 0 (or
  the sign for arithmetic shifts); float->int converts saturate with NaN -> 0.

Example: ``add(f32[4] x, broadcast(f32[] c))`` renders to a function whose loop body is a
load of ``x[i]``, a load of ``c[0]``, an ``fadd`` and a store.

This module only writes text; ``compiler.py`` turns text into machine code.
"""

from __future__ import annotations

import math
import struct

import numpy as np

from xla_spmd.ir import DType, Instruction
from xla_spmd.ir.attributes import ComparisonDirection, ComparisonType
from xla_spmd.ir.dtypes import (
    BF16,
    F16,
    F32,
    F64,
    PRED,
    S8,
    S16,
    S32,
    S64,
    U8,
    U16,
    U32,
    U64,
)
from xla_spmd.ir.opdefs import default_comparison_type

RENDERER_VERSION = "1"

_STORAGE = {PRED: "i8", S8: "i8", U8: "i8", S16: "i16", U16: "i16", S32: "i32", U32: "i32",
            S64: "i64", U64: "i64", F16: "half", BF16: "i16", F32: "float", F64: "double"}
SUPPORTED = frozenset(_STORAGE)
_FLOATS = (F16, BF16, F32, F64)


def compute_type(dtype: DType) -> str:
    """The LLVM type a value of ``dtype`` is computed in."""
    if dtype is PRED:
        return "i1"
    if dtype in (F16, BF16, F32):
        return "float"
    return _STORAGE[dtype]


def accumulator_dtype(dtype: DType) -> np.dtype:
    """The numpy dtype of a reduce kernel's accumulator buffer."""
    return np.dtype(np.float32) if dtype in (F16, BF16) else dtype.array_dtype


_LIBM = {  # op -> (f32 function, f64 function)
    "exponential": ("expf", "exp"), "exponential-minus-one": ("expm1f", "expm1"),
    "log": ("logf", "log"), "log-plus-one": ("log1pf", "log1p"), "sine": ("sinf", "sin"),
    "cosine": ("cosf", "cos"), "tan": ("tanf", "tan"), "tanh": ("tanhf", "tanh"),
}
_FLOAT_INTRINSIC = {"floor": "floor", "ceil": "ceil", "round-nearest-even": "roundeven",
                    "round-nearest-afz": "round", "sqrt": "sqrt"}
_FLOAT_UNARY = set(_LIBM) | set(_FLOAT_INTRINSIC) | {"rsqrt", "logistic"}
_WIDE_ONLY = {"cbrt": "cbrt", "erf": "erf"}   # computed in f64, for f32/f64 results only
_INT_UNARY = {"popcnt", "count-leading-zeros"}
_ANY_UNARY = {"abs", "negate", "sign", "copy"}
_FLOAT_BINARY = {"add", "subtract", "multiply", "divide", "remainder", "power", "maximum",
                 "minimum", "atan2"}
_INT_BINARY = {"add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum",
               "and", "or", "xor", "shift-left", "shift-right-logical",
               "shift-right-arithmetic"}
_PRED_BINARY = {"add", "multiply", "maximum", "minimum", "and", "or", "xor"}
_FCMP = {ComparisonDirection.EQ: "oeq", ComparisonDirection.NE: "une",
         ComparisonDirection.LT: "olt", ComparisonDirection.LE: "ole",
         ComparisonDirection.GT: "ogt", ComparisonDirection.GE: "oge"}
_ICMP = {ComparisonDirection.EQ: "eq", ComparisonDirection.NE: "ne",
         ComparisonDirection.LT: "lt", ComparisonDirection.LE: "le",
         ComparisonDirection.GT: "gt", ComparisonDirection.GE: "ge"}


TRANSCENDENTAL = frozenset(_LIBM) | {"logistic", "power", "atan2", "cbrt"}
"""Ops computed with the C math library: within 2 ulp of the correctly rounded value, but not
bit-identical to numpy's own versions (which may dispatch to SIMD kernels such as SVML on
AVX-512 machines), so they are generated only when asked for (``libm=True``)."""


def supports_instruction(inst: Instruction, libm: bool = False) -> bool:
    """Whether the renderer computes this elementwise instruction (dtypes included);
    transcendentals only with ``libm``."""
    dtype = inst.shape.dtype
    name = inst.op.name
    if name in TRANSCENDENTAL and not libm:
        return False
    source = inst.operands[0].shape.dtype if inst.operands else dtype
    if dtype not in SUPPORTED or source not in SUPPORTED:
        return False
    if name == "convert":
        return not (dtype in (F16, BF16) and source is F64)
    if name == "bitcast-convert":
        return source.bits == dtype.bits and PRED not in (source, dtype)
    if name == "compare":
        kind = inst.attrs.type or default_comparison_type(source)
        if kind is ComparisonType.TOTALORDER:
            return source in _FLOATS
        return (kind is ComparisonType.FLOAT) == (source in _FLOATS)
    if name in ("select", "clamp"):
        return True
    if name == "is-finite":
        return source in _FLOATS
    if name in _ANY_UNARY:
        return dtype is not PRED or name == "copy"
    if name == "not":
        return dtype not in _FLOATS
    if name in _FLOAT_UNARY:
        return dtype in _FLOATS
    if name in _WIDE_ONLY:
        return dtype in (F32, F64)
    if name in _INT_UNARY:
        return dtype not in _FLOATS and dtype is not PRED
    if inst.op.family.value == "binary":
        if source in _FLOATS:
            return name in _FLOAT_BINARY
        if source is PRED:
            return name in _PRED_BINARY
        return name in _INT_BINARY
    return False


def _float_constant(value: float, ctype: str) -> str:
    if ctype == "float":
        value = float(np.float32(value))
    return f"0x{struct.unpack('<Q', struct.pack('<d', value))[0]:016X}"


def constant_text(value, dtype: DType) -> str:
    """An LLVM constant of ``dtype``'s compute type."""
    ctype = compute_type(dtype)
    if dtype is PRED:
        return "true" if bool(value) else "false"
    if dtype in _FLOATS:
        return _float_constant(float(np.asarray(value).astype(np.float64)), ctype)
    bits = dtype.bits
    number = int(value) & ((1 << bits) - 1)
    if number >= 1 << (bits - 1):
        number -= 1 << bits
    return str(number)


class _Writer:
    """SSA names, lines and the declarations a function needs."""

    def __init__(self):
        self.lines: list[str] = []
        self.declarations: set[str] = set()
        self._count = 0

    def fresh(self) -> str:
        self._count += 1
        return f"%t{self._count}"

    def emit(self, text: str) -> str:
        name = self.fresh()
        self.lines.append(f"  {name} = {text}")
        return name

    def call(self, ret: str, function: str, args: list[tuple[str, str]]) -> str:
        self.declarations.add(f"declare {ret} @{function}({', '.join(t for t, _ in args)})")
        return self.emit(f"call {ret} @{function}({', '.join(f'{t} {v}' for t, v in args)})")

    def intrinsic(self, name: str, ctype: str, *args: str) -> str:
        suffix = {"float": "f32", "double": "f64"}.get(ctype, ctype)
        return self.call(ctype, f"llvm.{name}.{suffix}", [(ctype, a) for a in args])

    # i64 index arithmetic, folding constants (an operand is an SSA name or a Python int).
    def mul(self, a: str | int, b: str | int) -> str | int:
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if a == 1 or b == 0:
            return b
        if b == 1 or a == 0:
            return a
        return self.emit(f"mul nuw nsw i64 {a}, {b}")

    def add(self, a: str | int, b: str | int) -> str | int:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if a == 0:
            return b
        if b == 0:
            return a
        return self.emit(f"add nuw nsw i64 {a}, {b}")

    def linear(self, index: tuple, dims: tuple) -> str | int:
        """The row-major linear index of multi-index `index` into `dims`."""
        total: str | int = 0
        stride = 1
        for i, n in zip(reversed(index), reversed(dims)):
            if n != 1:
                total = self.add(total, self.mul(i, stride))
            stride *= n
        return total

    def delinearize(self, linear: str | int, dims: tuple) -> tuple:
        """The multi-index into `dims` of row-major linear index `linear`."""
        index: list[str | int] = []
        stride = 1
        for n in reversed(dims):
            if n == 1:
                index.append(0)
            elif isinstance(linear, int):
                index.append(linear // stride % n)
            else:
                quotient = linear if stride == 1 else self.emit(f"udiv i64 {linear}, {stride}")
                index.append(self.emit(f"urem i64 {quotient}, {n}"))
            stride *= n
        return tuple(reversed(index))


NO_UNROLL = "!no.unroll"
"""The placeholder ``loop_function(..., unroll=False)`` attaches to a loop's latch branch;
``number_loops`` replaces each with a loop id saying ``llvm.loop.unroll.disable``."""
SMALL_LOOP = 16
"""Loops of fewer iterations than this are left to LLVM's unroller under ``unroll=False``
(a short fixed loop it unrolls fully)."""


def loop_function(name: str, params: str, dims: tuple, body: list[str],
                  tiled: tuple[int, int] | None = None, tile: int = 64,
                  unroll: bool = True, ranges: dict[int, tuple[str, str]] | None = None
                  ) -> str:
    """The function ``define void @name(params)`` running ``body`` (a `_Writer`'s lines) in
    a row-major loop nest over ``dims``: loop ``k`` counts ``%i{k}`` from 0 to ``dims[k]``,
    the innermost over the last dim; a scalar (``dims == ()``) runs ``body`` once. The
    function is ``noinline``: the entry that calls it (``emitter.render_stacked_entry``)
    stays thin, so its loops are optimised and compiled once.

    ``unroll=False`` asks LLVM not to unroll the loops (but those of under ``SMALL_LOOP``
    iterations): their vectorized bodies are already wide, and unrolled copies halve the
    compile speed while making memory-bound loops no faster. Its loops carry ``NO_UNROLL``
    placeholders, numbered by ``number_loops`` before the text is compiled. Whatever
    ``unroll``, a loop with a longer or unknown loop inside it is not unrolled either: fully
    unrolled (as LLVM does with a short fixed loop), it would copy the inner loop's
    vectorized body once per iteration, for no speed (the transformer block's 8 heads
    around rows of 256 took 18 ms to compile unrolled, 6 ms not).

    ``tiled=(a, b)`` (``a < b``) runs dims ``a`` and ``b`` in ``tile`` x ``tile`` blocks
    (the last ones cut to fit) inside the other dims' loops: ``%j{a}``, ``%j{b}`` step over
    the blocks and ``%i{a}``, ``%i{b}`` over one block (``%i{b}`` innermost), so an operand
    read through a transpose stays in cache. Each element is computed once either way.

    ``ranges={dim: (start, bound)}`` (SSA names, ``start < bound``; dims not tiled) runs the
    loop of each such dim over ``start .. bound-1`` only: a range of the output's rows (dim 0)
    or columns (the last dim), as ``emitter.render_range`` renders a dot's epilogue run on the
    part of the output BLAS has just written.

    >>> text = loop_function("f", "ptr %out", (3, 40, 50), [], tiled=(1, 2))
    >>> [line.split(" = ")[0].strip() for line in text.splitlines() if "phi" in line]
    ['%i0', '%j1', '%j2', '%i1', '%i2']
    """
    lines = [f"define void @{name}({params}) nounwind noinline {{", "entry:"]
    if not dims:
        lines += body + ["  ret void", "}"]
        return "\n".join(lines)
    # (counter, start, bound, step, lines after the phi) from the outermost loop in.
    loops = [(f"%i{k}", "0", str(n), 1, []) for k, n in enumerate(dims)
             if tiled is None or k not in tiled]
    for dim, (start, bound) in (ranges or {}).items():
        assert tiled is None or dim not in tiled
        position = next(k for k, loop in enumerate(loops) if loop[0] == f"%i{dim}")
        loops[position] = (f"%i{dim}", start, bound, 1, [])
    for k in tiled or ():
        j, end, n = f"%j{k}", f"%e{k}", dims[k]
        cut = [f"  {end}.s = add nuw nsw i64 {j}, {tile}",
               f"  {end}.c = icmp ult i64 {end}.s, {n}",
               f"  {end} = select i1 {end}.c, i64 {end}.s, i64 {n}"]
        loops.append((j, "0", str(n), tile, cut))
    loops += [(f"%i{k}", f"%j{k}", f"%e{k}", 1, []) for k in tiled or ()]
    last = len(loops) - 1
    lines.append("  br label %L0")
    for k, (counter, start, _, _, header) in enumerate(loops):
        before = "entry" if k == 0 else f"L{k - 1}"
        latch = f"L{k}" if k == last else f"E{k}"
        lines += [f"L{k}:", f"  {counter} = phi i64 [{start}, %{before}], "
                  f"[{counter}.next, %{latch}]"] + header
        if k < last:
            lines.append(f"  br label %L{k + 1}")
    lines += body
    inner_small = True  # every loop inside the current one is short and fixed
    for k in range(last, -1, -1):
        counter, start, bound, step, _ = loops[k]
        if k < last:
            lines.append(f"E{k}:")
        leave = f"E{k - 1}" if k > 0 else "exit"
        done = "eq" if step == 1 else "uge"  # a block counter may step past the bound
        small = (start == "0" and bound.isdigit() and step == 1
                 and int(bound) < SMALL_LOOP)
        # a short loop around a long one: unrolled fully, it copies the long loop's
        # vectorized body for no speed (a row of heads, a batch of 8 around rows of 2048)
        hint = "" if (unroll or small) and inner_small else f", !llvm.loop {NO_UNROLL}"
        inner_small = inner_small and small
        lines += [f"  {counter}.next = add nuw nsw i64 {counter}, {step}",
                  f"  %c{k} = icmp {done} i64 {counter}.next, {bound}",
                  f"  br i1 %c{k}, label %{leave}, label %L{k}{hint}"]
    lines += ["exit:", "  ret void", "}"]
    return "\n".join(lines)


def number_loops(text: str) -> str:
    """``text`` (functions of one module) with each ``NO_UNROLL`` placeholder replaced by a
    distinct loop id that disables unrolling, the ids' metadata appended.

    >>> print(number_loops(f"br label %L0, !llvm.loop {NO_UNROLL}"), end="")
    br label %L0, !llvm.loop !1
    !0 = !{!"llvm.loop.unroll.disable"}
    !1 = distinct !{!1, !0}
    """
    pieces = text.split(NO_UNROLL)
    if len(pieces) == 1:
        return text
    numbered = [pieces[0]]
    for k, piece in enumerate(pieces[1:], start=1):
        numbered += [f"!{k}", piece]
    metadata = ['!0 = !{!"llvm.loop.unroll.disable"}'] + [
        f"!{k} = distinct !{{!{k}, !0}}" for k in range(1, len(pieces))]
    return "".join(numbered).rstrip("\n") + "\n" + "\n".join(metadata) + "\n"


# ---------------------------------------------------------------------------------------------
# Storage <-> compute


def load(w: _Writer, dtype: DType, pointer: str, index: str) -> str:
    storage = _STORAGE[dtype]
    address = w.emit(f"getelementptr inbounds {storage}, ptr {pointer}, i64 {index}")
    value = w.emit(f"load {storage}, ptr {address}")
    if dtype is PRED:
        return w.emit(f"icmp ne i8 {value}, 0")
    if dtype is F16:
        return w.emit(f"fpext half {value} to float")
    if dtype is BF16:
        wide = w.emit(f"zext i16 {value} to i32")
        shifted = w.emit(f"shl i32 {wide}, 16")
        return w.emit(f"bitcast i32 {shifted} to float")
    return value


def store(w: _Writer, dtype: DType, value: str, pointer: str, index: str) -> None:
    storage = _STORAGE[dtype]
    if dtype is PRED:
        value = w.emit(f"zext i1 {value} to i8")
    elif dtype is F16:
        value = w.emit(f"fptrunc float {value} to half")
    elif dtype is BF16:
        bits = w.emit(f"bitcast float {value} to i32")
        high = w.emit(f"lshr i32 {bits}, 16")
        value = w.emit(f"trunc i32 {high} to i16")
    address = w.emit(f"getelementptr inbounds {storage}, ptr {pointer}, i64 {index}")
    w.lines.append(f"  store {storage} {value}, ptr {address}")


def round_to(w: _Writer, dtype: DType, value: str) -> str:
    """Round an f32 compute value to f16/bf16 and back (identity for other types)."""
    if dtype is F16:
        narrow = w.emit(f"fptrunc float {value} to half")
        return w.emit(f"fpext half {narrow} to float")
    if dtype is BF16:
        # Round to nearest even on the bits; NaN stays NaN (quiet), as ml_dtypes does.
        bits = w.emit(f"bitcast float {value} to i32")
        lsb = w.emit(f"lshr i32 {bits}, 16")
        lsb = w.emit(f"and i32 {lsb}, 1")
        bias = w.emit(f"add i32 {lsb}, 32767")
        rounded = w.emit(f"add i32 {bits}, {bias}")
        rounded = w.emit(f"and i32 {rounded}, -65536")
        quiet = w.emit(f"or i32 {bits}, 4194304")
        quiet = w.emit(f"and i32 {quiet}, -65536")
        nan = w.emit(f"fcmp uno float {value}, 0.0")
        chosen = w.emit(f"select i1 {nan}, i32 {quiet}, i32 {rounded}")
        return w.emit(f"bitcast i32 {chosen} to float")
    return value


def _storage_bits(w: _Writer, dtype: DType, value: str) -> str:
    """The storage bit pattern of a compute value as an integer of the type's width."""
    if dtype is F16:
        narrow = w.emit(f"fptrunc float {value} to half")
        return w.emit(f"bitcast half {narrow} to i16")
    if dtype is BF16:
        bits = w.emit(f"bitcast float {value} to i32")
        high = w.emit(f"lshr i32 {bits}, 16")
        return w.emit(f"trunc i32 {high} to i16")
    if dtype in (F32, F64):
        return w.emit(f"bitcast {compute_type(dtype)} {value} to i{dtype.bits}")
    return value


def _from_bits(w: _Writer, dtype: DType, bits: str) -> str:
    if dtype is F16:
        narrow = w.emit(f"bitcast i16 {bits} to half")
        return w.emit(f"fpext half {narrow} to float")
    if dtype is BF16:
        wide = w.emit(f"zext i16 {bits} to i32")
        shifted = w.emit(f"shl i32 {wide}, 16")
        return w.emit(f"bitcast i32 {shifted} to float")
    if dtype in (F32, F64):
        return w.emit(f"bitcast i{dtype.bits} {bits} to {compute_type(dtype)}")
    return bits


# ---------------------------------------------------------------------------------------------
# Elementwise ops on compute values


def unary(w: _Writer, name: str, dtype: DType, x: str) -> str:
    t = compute_type(dtype)
    floating = dtype in _FLOATS
    if name == "copy":
        return x
    if name == "abs":
        if floating:
            return w.intrinsic("fabs", t, x)
        if not dtype.is_signed:
            return x
        negative = w.emit(f"icmp slt {t} {x}, 0")
        negated = w.emit(f"sub {t} 0, {x}")
        return w.emit(f"select i1 {negative}, {t} {negated}, {t} {x}")
    if name == "negate":
        return w.emit(f"fneg {t} {x}") if floating else w.emit(f"sub {t} 0, {x}")
    if name == "not":
        return w.emit(f"xor {t} {x}, {'true' if dtype is PRED else -1}")
    if name == "sign":
        if floating:
            zero = w.emit(f"fcmp oeq {t} {x}, 0.0")
            nan = w.emit(f"fcmp uno {t} {x}, 0.0")
            keep = w.emit(f"or i1 {zero}, {nan}")
            one = w.intrinsic("copysign", t, _float_constant(1.0, t), x)
            return w.emit(f"select i1 {keep}, {t} {x}, {t} {one}")
        if not dtype.is_signed:
            nonzero = w.emit(f"icmp ne {t} {x}, 0")
            return w.emit(f"zext i1 {nonzero} to {t}")
        positive = w.emit(f"zext i1 {w.emit(f'icmp sgt {t} {x}, 0')} to {t}")
        negative = w.emit(f"zext i1 {w.emit(f'icmp slt {t} {x}, 0')} to {t}")
        return w.emit(f"sub {t} {positive}, {negative}")
    if name == "popcnt":
        return w.intrinsic("ctpop", t, x)
    if name == "count-leading-zeros":
        return w.call(t, f"llvm.ctlz.{t}", [(t, x), ("i1", "false")])
    if name in _FLOAT_INTRINSIC:
        return w.intrinsic(_FLOAT_INTRINSIC[name], t, x)
    if name == "rsqrt":
        root = w.intrinsic("sqrt", t, x)
        return w.emit(f"fdiv {t} {_float_constant(1.0, t)}, {root}")
    if name in _LIBM:
        return w.call(t, _LIBM[name][t == "double"], [(t, x)])
    if name == "logistic":
        negated = w.emit(f"fneg {t} {x}")
        exp = w.call(t, _LIBM["exponential"][t == "double"], [(t, negated)])
        denominator = w.emit(f"fadd {t} {_float_constant(1.0, t)}, {exp}")
        return w.emit(f"fdiv {t} {_float_constant(1.0, t)}, {denominator}")
    if name in _WIDE_ONLY:
        wide = x if t == "double" else w.emit(f"fpext float {x} to double")
        result = w.call("double", _WIDE_ONLY[name], [("double", wide)])
        return result if t == "double" else w.emit(f"fptrunc double {result} to float")
    raise AssertionError(f"renderer: no unary rule for {name}")


def is_finite(w: _Writer, dtype: DType, x: str) -> str:
    t = compute_type(dtype)
    magnitude = w.intrinsic("fabs", t, x)
    return w.emit(f"fcmp one {t} {magnitude}, {_float_constant(math.inf, t)}")


def binary(w: _Writer, name: str, dtype: DType, a: str, b: str) -> str:
    t = compute_type(dtype)
    if dtype in _FLOATS:
        simple = {"add": "fadd", "subtract": "fsub", "multiply": "fmul", "divide": "fdiv",
                  "remainder": "frem"}
        if name in simple:
            return w.emit(f"{simple[name]} {t} {a}, {b}")
        if name in ("maximum", "minimum"):
            return w.intrinsic(name, t, a, b)
        function = {"power": ("powf", "pow"), "atan2": ("atan2f", "atan2")}[name]
        return w.call(t, function[t == "double"], [(t, a), (t, b)])
    if dtype is PRED:
        op = {"add": "or", "maximum": "or", "or": "or", "multiply": "and", "minimum": "and",
              "and": "and", "xor": "xor"}[name]
        return w.emit(f"{op} i1 {a}, {b}")
    signed = dtype.is_signed
    simple = {"add": "add", "subtract": "sub", "multiply": "mul", "and": "and", "or": "or",
              "xor": "xor"}
    if name in simple:
        return w.emit(f"{simple[name]} {t} {a}, {b}")
    if name in ("maximum", "minimum"):
        return w.intrinsic(("s" if signed else "u") + name[:3], t, a, b)
    if name in ("divide", "remainder"):
        return _divide(w, name, t, signed, dtype.bits, a, b)
    return _shift(w, name, t, dtype.bits, a, b)


def _divide(w: _Writer, name: str, t: str, signed: bool, bits: int, a: str, b: str) -> str:
    zero = w.emit(f"icmp eq {t} {b}, 0")
    bad = zero
    if signed:
        minus_one = w.emit(f"icmp eq {t} {b}, -1")
        if name == "divide":
            smallest = w.emit(f"icmp eq {t} {a}, {-(1 << (bits - 1))}")
            minus_one = w.emit(f"and i1 {minus_one}, {smallest}")
        bad = w.emit(f"or i1 {zero}, {minus_one}")
    safe = w.emit(f"select i1 {bad}, {t} 1, {t} {b}")
    if name == "divide":
        quotient = w.emit(f"{'sdiv' if signed else 'udiv'} {t} {a}, {safe}")
        return w.emit(f"select i1 {zero}, {t} -1, {t} {quotient}")
    remainder = w.emit(f"{'srem' if signed else 'urem'} {t} {a}, {safe}")
    return w.emit(f"select i1 {zero}, {t} {a}, {t} {remainder}")


def _shift(w: _Writer, name: str, t: str, bits: int, a: str, b: str) -> str:
    too_far = w.emit(f"icmp uge {t} {b}, {bits}")
    amount = w.emit(f"select i1 {too_far}, {t} 0, {t} {b}")
    op = {"shift-left": "shl", "shift-right-logical": "lshr",
          "shift-right-arithmetic": "ashr"}[name]
    shifted = w.emit(f"{op} {t} {a}, {amount}")
    far = w.emit(f"ashr {t} {a}, {bits - 1}") if op == "ashr" else "0"
    return w.emit(f"select i1 {too_far}, {t} {far}, {t} {shifted}")


def compare(w: _Writer, inst: Instruction, a: str, b: str) -> str:
    source = inst.operands[0].shape.dtype
    t = compute_type(source)
    kind = inst.attrs.type or default_comparison_type(source)
    direction = inst.attrs.direction
    if kind is ComparisonType.FLOAT:
        return w.emit(f"fcmp {_FCMP[direction]} {t} {a}, {b}")
    if kind is ComparisonType.TOTALORDER:
        width = 64 if t == "double" else 32
        a, b = (_total_order_key(w, t, width, v) for v in (a, b))
        t, signed = f"i{width}", True
    else:
        signed = kind is ComparisonType.SIGNED and source is not PRED
    predicate = _ICMP[direction]
    if predicate not in ("eq", "ne"):
        predicate = ("s" if signed else "u") + predicate
    return w.emit(f"icmp {predicate} {t} {a}, {b}")


def _total_order_key(w: _Writer, t: str, width: int, value: str) -> str:
    bits = w.emit(f"bitcast {t} {value} to i{width}")
    negative = w.emit(f"icmp slt i{width} {bits}, 0")
    flipped = w.emit(f"xor i{width} {bits}, {(1 << (width - 1)) - 1}")
    return w.emit(f"select i1 {negative}, i{width} {flipped}, i{width} {bits}")


def convert(w: _Writer, source: DType, target: DType, x: str) -> str:
    s, t = compute_type(source), compute_type(target)
    if target is PRED:
        if source in _FLOATS:
            return w.emit(f"fcmp une {s} {x}, 0.0")
        return w.emit(f"icmp ne {s} {x}, 0")
    if source is PRED:
        if target in _FLOATS:
            return w.emit(f"uitofp i1 {x} to {t}")
        return w.emit(f"zext i1 {x} to {t}")
    if source in _FLOATS and target in _FLOATS:
        if s == t:
            return x
        return w.emit(f"{'fpext' if t == 'double' else 'fptrunc'} {s} {x} to {t}")
    if source in _FLOATS:
        function = "fptosi" if target.is_signed else "fptoui"
        suffix = "f64" if s == "double" else "f32"
        return w.call(t, f"llvm.{function}.sat.{t}.{suffix}", [(s, x)])
    if target in _FLOATS:
        return w.emit(f"{'sitofp' if source.is_signed else 'uitofp'} {s} {x} to {t}")
    if source.bits == target.bits:
        return x
    if source.bits > target.bits:
        return w.emit(f"trunc {s} {x} to {t}")
    return w.emit(f"{'sext' if source.is_signed else 'zext'} {s} {x} to {t}")


def bitcast_convert(w: _Writer, source: DType, target: DType, x: str) -> str:
    return _from_bits(w, target, _storage_bits(w, source, x))
