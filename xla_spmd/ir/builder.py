"""A builder for computations: one method per opcode, shapes inferred.

Any opcode is a method, with `-` spelled `_` (``b.dynamic_slice``); attributes are keyword
arguments named as in HLO text; `shape=` gives the result shape for ops that need one.

>>> from xla_spmd.ir import Builder, ArrayShape, F32
>>> b = Builder("main")
>>> x = b.parameter(ArrayShape(F32, (2, 3)), "x")
>>> t = b.transpose(x, dimensions=(1, 0))
>>> str(t.shape)
'f32[3,2]'
"""

from __future__ import annotations

import numpy as np

from xla_spmd.ir.attributes import Literal
from xla_spmd.ir.dtypes import DType
from xla_spmd.ir.module import (
    Computation,
    Instruction,
    has_side_effect,
    make_instruction,
    topological_order,
)
from xla_spmd.ir.ops import op_named
from xla_spmd.ir.shapes import ArrayShape, Shape


class NameGenerator:
    """Fresh instruction names that clash with none `taken`: `base` itself when free, else
    `base.1`, `base.2`, ... (passes use it to add instructions to existing computations).

    >>> names = NameGenerator(["add", "add.1"])
    >>> names("add"), names("add"), names("mul")
    ('add.2', 'add.3', 'mul')
    """

    def __init__(self, taken=()):
        self.taken = set(taken)
        self.counters: dict[str, int] = {}

    def __call__(self, base: str) -> str:
        if base not in self.taken:
            self.taken.add(base)
            return base
        n = self.counters.get(base, 0)
        while True:
            n += 1
            candidate = f"{base}.{n}"
            if candidate not in self.taken:
                self.counters[base] = n
                self.taken.add(candidate)
                return candidate


class Builder:
    """Builds one computation; instruction names are `opcode.N`, unique within the builder."""

    def __init__(self, name: str):
        self.name = name
        self.instructions: list[Instruction] = []
        self._names: set[str] = set()
        self._counter = 0
        self._num_parameters = 0

    def fresh_name(self, base: str) -> str:
        while True:
            self._counter += 1
            candidate = f"{base}.{self._counter}"
            if candidate not in self._names:
                return candidate

    def add(self, *args, **kwargs) -> Instruction:  # `add` is also an opcode
        return self.op("add", *args, **kwargs)

    def op(self, opcode: str, *operands: Instruction, shape: Shape | None = None,
           name: str | None = None, sharding=None, **attrs) -> Instruction:
        """Append an instruction of `opcode`."""
        op = op_named(opcode)
        name = name or self.fresh_name(opcode)
        if name in self._names:
            raise ValueError(f"instruction name {name!r} used twice in {self.name}")
        inst = make_instruction(name, op, operands, op.make_attrs(**attrs), shape,
                                sharding=sharding)
        self._names.add(name)
        self.instructions.append(inst)
        return inst

    def __getattr__(self, attribute: str):
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        opcode = attribute.replace("_", "-")
        op_named(opcode)  # fail early, naming the opcode

        def emit(*operands, **kwargs):
            return self.op(opcode, *operands, **kwargs)
        return emit

    def parameter(self, shape: Shape, name: str | None = None, number: int | None = None,
                  sharding=None) -> Instruction:
        number = self._num_parameters if number is None else number
        self._num_parameters = max(self._num_parameters, number + 1)
        return self.op("parameter", shape=shape, name=name or f"p{number}",
                       parameter_number=number, sharding=sharding)

    def constant(self, value, dtype: DType | None = None, name: str | None = None) -> Instruction:
        array = np.asarray(value, dtype=None if dtype is None else dtype.numpy)
        dtype = dtype or DType.from_numpy(array.dtype)
        return self.op("constant", shape=ArrayShape(dtype, array.shape), name=name,
                       literal=Literal(np.array(array)))

    def inline(self, computation: Computation, arguments) -> Instruction:
        """Copy `computation`'s instructions into this builder with its parameters bound to
        `arguments`; returns the copy of its root."""
        mapping = {id(p): a for p, a in zip(computation.parameters, arguments, strict=True)}
        for inst in computation.instructions:
            if id(inst) in mapping:
                continue
            shape = inst.shape if inst.op.needs_declared_shape else None
            new = make_instruction(self.fresh_name(inst.op.name), inst.op,
                                   [mapping[id(o)] for o in inst.operands], inst.attrs, shape,
                                   sharding=inst.sharding,
                                   frontend_attributes=inst.frontend_attributes,
                                   extras=inst.extras)
            self._names.add(new.name)
            self.instructions.append(new)
            mapping[id(inst)] = new
        return mapping[id(computation.root)]

    def build(self, root: Instruction, name: str | None = None) -> Computation:
        """The computation of everything `root` uses, plus every parameter and every
        instruction with side effects."""
        keep = [i for i in self.instructions
                if i.op.name == "parameter" or has_side_effect(i)]
        order = topological_order(root, keep)
        return Computation(name or self.name, order, root)
