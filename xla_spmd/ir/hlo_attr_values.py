"""Typed attribute values of HLO text: one reader per `AttrKind`.

A mixin of the computation parser: it reads at the scanner ``self.s`` and resolves called
computations through ``self.module``. Every error names the attribute and the position.
"""

from __future__ import annotations

import re
from typing import Protocol

import numpy as np

from xla_spmd.errors import VerifyError
from xla_spmd.ir.attributes import (
    ComparisonDirection,
    ComparisonType,
    ConvDimensionNumbers,
    FftType,
    PadDim,
    Precision,
    ReplicaGroups,
    RngAlgorithm,
    RngDistribution,
    SliceDim,
    Window,
)
from xla_spmd.ir.hlo_lexer import Scanner
from xla_spmd.ir.module import Computation
from xla_spmd.ir.ops import AttrKind, AttrSpec, Op
from xla_spmd.ir.shapes import Shape

_LABELS_RE = re.compile(r"[0-9a-z?]+_[0-9a-z?]+->[0-9a-z?]+")
_PADDING_RE = re.compile(r"-?[0-9]+_-?[0-9]+(_-?[0-9]+)?(x-?[0-9]+_-?[0-9]+(_-?[0-9]+)?)*")
_WINDOW_VALUES_RE = re.compile(r"[-0-9_x]+")


class _ComputationSource(Protocol):
    """What the computation parser needs of the module parser: shapes, and called
    computations built on demand."""

    def _build(self, name: str, use_pos: int) -> Computation: ...

    def shape(self, depth: int = 0) -> Shape: ...


class AttributeValueParser:
    """Reads one attribute value of a given kind (mixed into the computation parser)."""

    s: Scanner
    module: _ComputationSource

    def value(self, spec: AttrSpec, op: Op):
        s, kind = self.s, spec.kind
        s.skip()
        pos = s.pos
        try:
            return self._value(kind, op, spec)
        except VerifyError as error:
            raise s.error(f"'{op.name}' attribute '{spec.name}': {error}", pos) from None

    def _value(self, kind: AttrKind, op: Op, spec: AttrSpec):
        s = self.s
        if kind is AttrKind.INT:
            return s.integer()
        if kind is AttrKind.FLOAT:
            return s.float_number(f"a number for '{spec.name}'")  # f32: Op.make_attrs
        if kind is AttrKind.BOOL:
            word = s.word("true or false")
            if word not in ("true", "false"):
                raise s.error(f"expected true or false for '{spec.name}', found '{word}'",
                              s.pos - len(word))
            return word == "true"
        if kind is AttrKind.STRING:
            return s.string()
        if kind is AttrKind.RAW:
            return s.raw_value()
        if kind is AttrKind.INT_LIST:
            return self.int_list()
        if kind is AttrKind.INT_PAIRS:
            s.expect("{")
            pairs = []
            while not s.accept("}"):
                pair = self.int_list()
                if len(pair) != 2:
                    raise s.error(f"expected a pair {{a,b}} in '{spec.name}', found "
                                  f"{len(pair)} values")
                pairs.append(pair)
                if not s.accept(","):
                    s.expect("}", f"or ',' in '{spec.name}'")
                    break
            return tuple(pairs)
        if kind is AttrKind.REPLICA_GROUPS:
            return self.replica_groups()
        if kind is AttrKind.SLICE:
            return self.slice_dims()
        if kind is AttrKind.PADDING:
            text = s.match(_PADDING_RE, "a padding like 0_1x2_3_1")
            return tuple(PadDim(*(int(v) for v in re.findall(r"-?[0-9]+", d)))
                         for d in text.split("x"))
        if kind is AttrKind.WINDOW:
            return self.window()
        if kind is AttrKind.CONV_DIMS:
            return ConvDimensionNumbers.from_labels(s.match(_LABELS_RE, "dim_labels"))
        if kind in _ENUMS:
            return self.enum(_ENUMS[kind], spec.name)
        if kind is AttrKind.PRECISION_LIST:
            s.expect("{")
            values = []
            while not s.accept("}"):
                values.append(self.enum(Precision, spec.name))
                if not s.accept(","):
                    s.expect("}", f"or ',' in '{spec.name}'")
                    break
            return tuple(values)
        if kind is AttrKind.COMPUTATION:
            return self.computation()
        if kind is AttrKind.COMPUTATIONS:
            s.expect("{")
            called = []
            while not s.accept("}"):
                called.append(self.computation())
                if not s.accept(","):
                    s.expect("}", f"or ',' in '{spec.name}'")
                    break
            return tuple(called)
        raise s.error(f"attribute '{spec.name}' of kind {kind.value} cannot be written in HLO "
                      "text")

    def enum(self, enum_type, name: str):
        s = self.s
        pos = s.pos
        word = s.word(f"a value for '{name}'")
        for member in enum_type:
            if member.value == word or member.value.lower() == word.lower():
                return member
        raise s.error(f"'{word}' is not a valid '{name}'; expected one of "
                      f"{', '.join(m.value for m in enum_type)}", pos)

    def int_list(self) -> tuple[int, ...]:
        s = self.s
        s.expect("{", "to open a list of integers")
        values = []
        while not s.accept("}"):
            values.append(s.integer())
            if not s.accept(","):
                s.expect("}", "or ',' in a list of integers")
                break
        return tuple(values)

    def computation(self) -> Computation:
        s = self.s
        s.skip()
        pos = s.pos
        name, _ = s.name("a computation name")
        return self.module._build(name, pos)

    def slice_dims(self) -> tuple[SliceDim, ...]:
        s = self.s
        s.expect("{", "to open slice ranges")
        dims = []
        while not s.accept("}"):
            s.expect("[", "to open a slice range")
            values = [s.integer("a slice start")]
            while s.accept(":"):
                values.append(s.integer("a slice bound"))
            s.expect("]", "to close a slice range")
            if len(values) not in (2, 3):
                raise s.fail("a slice range [start:limit] or [start:limit:stride]")
            dims.append(SliceDim(*values))
            if not s.accept(","):
                s.expect("}", "or ',' in slice ranges")
                break
        return tuple(dims)

    def window(self) -> Window:
        s = self.s
        s.expect("{", "to open a window")
        fields: dict[str, list] = {}
        while not s.accept("}"):
            pos = s.pos
            key = s.word("a window field")
            s.expect("=", f"after window field '{key}'")
            text = s.match(_WINDOW_VALUES_RE, f"values of window field '{key}'")
            parts = text.split("x")
            if key == "pad":
                fields[key] = [tuple(int(v) for v in p.split("_")) for p in parts]
            elif key in ("size", "stride", "lhs_dilate", "rhs_dilate", "rhs_reversal"):
                fields[key] = [int(p) for p in parts]
            else:
                raise s.error(f"unknown window field '{key}'; expected size, stride, pad, "
                              "lhs_dilate, rhs_dilate or rhs_reversal", pos)
        if "size" not in fields:
            raise s.error("a window needs size=...")
        rank = len(fields["size"])
        for key, values in fields.items():
            if len(values) != rank:
                raise s.error(f"window field '{key}' has {len(values)} dims, size has {rank}")
        return Window.make(fields["size"], fields.get("stride"), fields.get("pad"),
                           fields.get("lhs_dilate"), fields.get("rhs_dilate"),
                           [bool(v) for v in fields["rhs_reversal"]]
                           if "rhs_reversal" in fields else None)

    def replica_groups(self) -> ReplicaGroups:
        s = self.s
        s.skip()
        if s.at("{"):
            groups = []
            s.expect("{")
            while not s.accept("}"):
                groups.append(self.int_list())
                if not s.accept(","):
                    s.expect("}", "or ',' in replica_groups")
                    break
            return ReplicaGroups.listed(groups)
        if s.at("["):
            group_dims, reshape_dims, transpose = self.iota_list()
            if reshape_dims is None:
                raise s.fail("'<=' in iota replica groups like [2,4]<=[8]")
            return ReplicaGroups.iota(group_dims, reshape_dims, transpose)
        if s.peek_word() == "mesh":
            return self.mesh_groups()
        raise s.fail("replica groups: {{0,1},...}, [2,4]<=[8] or mesh[...]")

    def iota_list(self):
        """``[d0,d1]<=[r0,...]T(perm)`` or ``[d0,d1]T(perm)``: (dims, reshape, perm)."""
        s = self.s
        dims = self._bracket_ints()
        reshape = transpose = None
        if s.accept("<="):
            reshape = self._bracket_ints()
        if s.text.startswith("T(", s.pos):
            s.pos += 1
            s.expect("(")
            transpose = []
            while not s.accept(")"):
                transpose.append(s.integer())
                if not s.accept(","):
                    s.expect(")", "or ',' in a transpose")
                    break
            transpose = tuple(transpose)
        return dims, reshape, transpose

    def _bracket_ints(self) -> tuple[int, ...]:
        s = self.s
        s.expect("[")
        values = []
        while not s.accept("]"):
            values.append(s.integer())
            if not s.accept(","):
                s.expect("]", "or ',' in a list of sizes")
                break
        return tuple(values)

    def mesh_groups(self) -> ReplicaGroups:
        """``mesh['a'=2,'b'=4][, device_ids=([2,4]T(1,0))] {'a'}``: kept as text, expanded."""
        s = self.s
        s.skip()
        start = s.pos
        s.word()
        s.expect("[", "after 'mesh'")
        names, sizes = [], []
        while not s.accept("]"):
            names.append(self._quoted_axis())
            s.expect("=", "after a mesh axis name")
            sizes.append(s.integer("a mesh axis size"))
            if not s.accept(","):
                s.expect("]", "or ',' in a mesh")
                break
        total = int(np.prod(sizes)) if sizes else 1
        devices = np.arange(total)
        saved = s.pos
        if s.accept(",") and s.peek_word() == "device_ids":
            s.word()
            s.expect("=")
            s.expect("(", "to open device_ids")
            if s.at("["):
                dims, reshape, transpose = self.iota_list()
                ids = np.arange(total).reshape(reshape or dims)
                if transpose is not None:
                    ids = ids.transpose(transpose)
                devices = ids.ravel()
            else:
                listed = [s.integer()]
                while s.accept(","):
                    listed.append(s.integer())
                devices = np.array(listed)
            s.expect(")", "to close device_ids")
        else:
            s.pos = saved
        end = s.pos
        axes = []
        saved = s.pos
        s.skip(newlines=False)
        if s.text.startswith("{", s.pos):
            s.expect("{")
            while not s.accept("}"):
                axis_pos = s.pos
                axis = self._quoted_axis()
                if axis not in names:
                    raise s.error(f"mesh axis '{axis}' is not one of {names}", axis_pos)
                part = None
                if s.accept(":"):  # a sub-axis 'a':(pre_size)size
                    s.expect("(", "to open the pre-size of a sub-axis")
                    pre = s.integer("a sub-axis pre-size")
                    s.expect(")", "after the pre-size of a sub-axis")
                    part = (pre, s.integer("a sub-axis size"))
                    full = sizes[names.index(axis)]
                    if pre < 1 or part[1] < 1 or full % (pre * part[1]):
                        raise s.error(f"sub-axis '{axis}':({pre}){part[1]} does not divide "
                                      f"mesh axis '{axis}' of size {full}", axis_pos)
                axes.append((axis, part))
                if not s.accept(","):
                    s.expect("}", "or ',' in mesh axes")
                    break
            end = s.pos
        else:
            s.pos = saved
        if devices.size != total:
            raise s.error(f"device_ids list {devices.size} devices, the mesh has {total}",
                          start)
        groups = _mesh_axis_groups(devices, names, sizes, axes, s, start)
        return ReplicaGroups(explicit=tuple(tuple(int(d) for d in g) for g in groups),
                             mesh_axes_text=s.text[start:end])

    def _quoted_axis(self) -> str:
        s = self.s
        s.skip()
        if s.accept("'"):
            end = s.text.find("'", s.pos)
            if end < 0:
                raise s.error("unterminated mesh axis name")
            name = s.text[s.pos:end]
            s.pos = end + 1
            return name
        return s.word("a mesh axis name")


def _mesh_axis_groups(devices, names, sizes, axes, s, start) -> np.ndarray:
    """Replica groups over mesh `axes` ((name, None | (pre_size, size)) pairs): each mesh axis
    is split at the sub-axis boundaries into finer dims, the chosen ones go minor."""
    if not sizes:
        return devices[None]
    if not axes:
        axes = [(name, None) for name in names]
    bounds = [{1, size} for size in sizes]  # cumulative major sizes where each axis splits
    for name, part in axes:
        if part is not None:
            bounds[names.index(name)] |= {part[0], part[0] * part[1]}
    fine, spans = [], {}  # spans: (axis, major size) -> index of its fine dim
    for axis, cuts in enumerate(bounds):
        cuts = sorted(cuts)
        for low, high in zip(cuts, cuts[1:]):
            if high % low:
                raise s.error(f"the sub-axes of mesh axis '{names[axis]}' overlap", start)
            spans[(axis, low)] = len(fine)
            fine.append(high // low)
    chosen = []
    for name, part in axes:
        axis = names.index(name)
        low, high = (1, sizes[axis]) if part is None else (part[0], part[0] * part[1])
        cuts = sorted(c for c in bounds[axis] if low <= c < high)
        picked = [spans[(axis, c)] for c in cuts]
        if any(p in chosen for p in picked):
            raise s.error(f"mesh axis '{name}' is named twice in the replica groups", start)
        chosen.extend(picked)
    others = [i for i in range(len(fine)) if i not in chosen]
    size = int(np.prod([fine[i] for i in chosen])) if chosen else 1
    return devices.reshape(fine).transpose(others + chosen).reshape(-1, size)


_ENUMS = {AttrKind.DIRECTION: ComparisonDirection, AttrKind.COMPARISON_TYPE: ComparisonType,
          AttrKind.RNG_ALGORITHM: RngAlgorithm, AttrKind.RNG_DISTRIBUTION: RngDistribution,
          AttrKind.FFT_TYPE: FftType}
