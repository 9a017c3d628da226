"""The op table: one definition per opcode.

An `Op` names its family, its operand arity, its typed attributes (`AttrSpec`: HLO attribute
name, kind and default) and its shape inference. Instructions hold the `Op` object; strings
appear only in the text formats. Each op gets an attribute class generated from its specs, so
``inst.attrs.dimensions`` is a typed, frozen field.

Invariants: every opcode is defined once (`define` refuses duplicates); every attribute kind
is one of `AttrKind`, which each text format knows how to read and write.

>>> op = OPS["transpose"]
>>> op.family.value, [a.name for a in op.attrs]
('shape', ['dimensions'])
>>> op.make_attrs(dimensions=(1, 0))
TransposeAttrs(dimensions=(1, 0))
>>> OPS["add"].commutative, OPS["add"].linear, OPS["multiply"].linear
(True, True, False)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from xla_spmd.errors import MissingRuleError, VerifyError
from xla_spmd.ir.attributes import f32_value

if TYPE_CHECKING:
    from xla_spmd.ir.attr_types import Attrs
    from xla_spmd.ir.shapes import Shape


class Family(Enum):
    """Named op families; registries use them to register standard rules at once."""

    LEAF = "leaf"                   # parameter, constant, iota, partition-id, ...
    UNARY = "unary"                 # elementwise, one operand
    BINARY = "binary"               # elementwise, two operands
    ELEMENTWISE = "elementwise"     # select, clamp, convert, ... (other elementwise)
    SHAPE = "shape"                 # broadcast, reshape, transpose, slice, pad, ...
    REDUCTION = "reduction"         # reduce, reduce-window, select-and-scatter
    CONTRACTION = "contraction"     # dot, convolution
    INDEXING = "indexing"           # gather, scatter, dynamic-slice, ...
    SORT = "sort"
    CONTROL = "control"             # while, conditional, call, map, fusion
    TUPLE = "tuple"                 # tuple, get-tuple-element, opt-barrier
    RANDOM = "random"
    COLLECTIVE = "collective"
    ASYNC = "async"                 # *-start / *-done pairs
    CUSTOM = "custom"
    LINALG = "linalg"               # fft, cholesky, triangular-solve
    NORMALIZATION = "normalization"  # batch-norm-inference, -training, -grad


class Trait(Enum):
    """A property of an opcode that passes ask for instead of listing opcode names."""

    ELEMENTWISE = "elementwise"     # result[i] is a function of operands[...][i] alone
    LINEAR = "linear"               # f(a + b) = f(a) + f(b): partial sums pass through it
    COMMUTATIVE = "commutative"     # f(a, b) = f(b, a)
    SIDE_EFFECT = "side_effect"     # must run even when nothing uses its result
    DISTINCT = "distinct"           # two equal instructions are still two values (never CSE'd)
    PASS_THROUGH = "pass_through"   # propagation: shardings cross it both ways first
    FORWARD_PASS_THROUGH = "forward_pass_through"  # ... forward only (operand -> result)


# Traits a family brings to each of its ops (more can be given to `define`).
FAMILY_TRAITS = {
    Family.UNARY: frozenset({Trait.ELEMENTWISE, Trait.PASS_THROUGH}),
    Family.BINARY: frozenset({Trait.ELEMENTWISE, Trait.PASS_THROUGH}),
}


class AttrKind(Enum):
    """What an attribute's value is; each text format maps a kind to a spelling."""

    INT = "int"
    FLOAT = "float"                 # an f32 value (batch-norm's epsilon), printed shortest
    BOOL = "bool"
    STRING = "string"               # quoted in HLO text
    RAW = "raw"                     # kept verbatim (e.g. output_to_operand_aliasing)
    INT_LIST = "int_list"           # {0,1}
    INT_PAIRS = "int_pairs"         # {{0,1},{1,0}}
    REPLICA_GROUPS = "replica_groups"
    SLICE = "slice"                 # tuple[SliceDim, ...]
    PADDING = "padding"             # tuple[PadDim, ...]
    WINDOW = "window"               # Window
    CONV_DIMS = "conv_dims"         # ConvDimensionNumbers
    DIRECTION = "direction"         # ComparisonDirection
    COMPARISON_TYPE = "comparison_type"
    RNG_ALGORITHM = "rng_algorithm"
    RNG_DISTRIBUTION = "rng_distribution"
    PRECISION_LIST = "precision_list"
    FFT_TYPE = "fft_type"
    COMPUTATION = "computation"     # a Computation
    COMPUTATIONS = "computations"   # tuple of Computations
    LITERAL = "literal"             # Literal (constant's value)


REQUIRED = object()


@dataclass(frozen=True, slots=True)
class AttrSpec:
    """An attribute: its HLO name, its kind and its default (REQUIRED if it has none)."""

    name: str
    kind: AttrKind
    default: object = REQUIRED

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


InferFn = Callable[..., "Shape"]  # (operand shapes, attrs, declared shape) -> Shape


@dataclass(frozen=True, slots=True, eq=False)
class Op:
    """An opcode: family, arity, attributes and shape inference.

    `infer(operands, attrs, declared)` returns the result shape; `declared` is the shape
    written in the program (None when building), which ops like reshape and convert need.
    `min_operands`/`max_operands` bound the arity (max None = variadic).
    """

    name: str
    family: Family
    min_operands: int
    max_operands: int | None
    attrs: tuple[AttrSpec, ...]
    infer: InferFn
    attrs_class: type
    needs_declared_shape: bool = False
    traits: frozenset[Trait] = frozenset()

    @property
    def elementwise(self) -> bool:
        return Trait.ELEMENTWISE in self.traits

    @property
    def linear(self) -> bool:
        return Trait.LINEAR in self.traits

    @property
    def commutative(self) -> bool:
        return Trait.COMMUTATIVE in self.traits

    @property
    def side_effect(self) -> bool:
        return Trait.SIDE_EFFECT in self.traits

    @property
    def distinct(self) -> bool:
        return Trait.DISTINCT in self.traits

    @property
    def pass_through(self) -> bool:
        return Trait.PASS_THROUGH in self.traits

    @property
    def forward_pass_through(self) -> bool:
        return Trait.FORWARD_PASS_THROUGH in self.traits

    def attr(self, name: str) -> AttrSpec | None:
        for spec in self.attrs:
            if spec.name == name:
                return spec
        return None

    def make_attrs(self, **values) -> Attrs:
        """Build this op's attribute value, filling defaults and checking names."""
        for name in values:
            if self.attr(name) is None:
                raise VerifyError(f"'{self.name}' has no attribute {name!r}; it has "
                                  f"{[a.name for a in self.attrs] or 'none'}")
        missing = [a.name for a in self.attrs if a.required and a.name not in values]
        if missing:
            raise VerifyError(f"'{self.name}' needs attribute(s) {', '.join(missing)}")
        fields = {a.name: values.get(a.name, a.default) for a in self.attrs}
        for a in self.attrs:  # a FLOAT is an f32: rounded once, here, wherever it comes from
            if a.kind is AttrKind.FLOAT and isinstance(fields[a.name], (int, float)):
                fields[a.name] = f32_value(fields[a.name])
        return self.attrs_class(**fields)

    def __repr__(self) -> str:
        return f"Op({self.name})"


OPS: dict[str, Op] = {}


def _attrs_class(opname: str, attrs: tuple[AttrSpec, ...]) -> type:
    class_name = "".join(part.capitalize() for part in opname.replace("-", " ").split()) + "Attrs"
    fields = [(a.name.replace("-", "_"), object) for a in attrs]
    return dataclasses.make_dataclass(class_name, fields, frozen=True, slots=True)


def define(name: str, family: Family, infer: InferFn, *, operands: int | tuple = 0,
           attrs: tuple[AttrSpec, ...] = (), needs_declared_shape: bool = False,
           traits: tuple[Trait, ...] = ()) -> Op:
    """Define opcode `name`. `operands` is an exact count or a (min, max|None) range;
    `traits` add to the ones its family brings (`FAMILY_TRAITS`)."""
    if name in OPS:
        raise ValueError(f"opcode {name!r} is defined twice")
    low, high = (operands, operands) if isinstance(operands, int) else operands
    all_traits = FAMILY_TRAITS.get(family, frozenset()) | frozenset(traits)
    op = Op(name, family, low, high, tuple(attrs), infer, _attrs_class(name, tuple(attrs)),
            needs_declared_shape, all_traits)
    OPS[name] = op
    return op


def op_named(name: str) -> Op:
    try:
        return OPS[name]
    except KeyError:
        raise MissingRuleError(f"unknown opcode {name!r}") from None


class Registry(dict[str, Callable[..., Any]]):
    """A per-concern table keyed by opcode name, filled by a decorator that refuses duplicates
    and names that are not opcodes (`known` and `what` say what else a table is keyed by: the
    custom-call targets, StableHLO op names).

    >>> rules = Registry("reference evaluation")
    >>> @rules.register("add", "subtract")
    ... def binary(*args): ...
    >>> rules.lookup("multiply")
    Traceback (most recent call last):
    ...
    xla_spmd.errors.MissingRuleError: no reference evaluation rule for 'multiply'
    >>> rules.register("plus")
    Traceback (most recent call last):
    ...
    ValueError: cannot register a reference evaluation rule for 'plus': not an opcode
    """

    def __init__(self, concern: str, known: Callable[[str], bool] | None = None,
                 what: str = "opcode"):
        super().__init__()
        self.concern = concern
        self.known = known if known is not None else OPS.__contains__
        self.what = what

    def register(self, *names: str) -> Callable[[Callable], Callable]:
        for name in names:
            if not self.known(name):
                article = "an" if self.what[0] in "aeiou" else "a"
                raise ValueError(f"cannot register a {self.concern} rule for {name!r}: not "
                                 f"{article} {self.what}")
            if name in self:
                raise ValueError(f"duplicate {self.concern} rule for {name!r}")

        def decorate(fn):
            for name in names:
                self[name] = fn
            return fn
        return decorate

    def lookup(self, name: str) -> Callable[..., Any]:
        try:
            return self[name]
        except KeyError:
            raise MissingRuleError(f"no {self.concern} rule for {name!r}") from None
