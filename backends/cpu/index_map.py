"""Where an index-mapping op of a fusion reads its operand, for both code generators.

A fusion's broadcast, transpose, reshape, bitcast, slice and reverse move no data: each
reads its operand at an index computed from the output's. ``OperandIndexing`` computes that
index once for the LLVM emitter (``emitter.py``) and the CUDA C one (``backends/gpu``); each
supplies the arithmetic of its language.

Example: ``transpose(x), dimensions={1,0}`` at output index ``(i, j)`` reads ``x`` at
``(j, i)``; ``slice(x), slice={[2:10:3]}`` at ``(i,)`` reads ``(2 + 3*i,)``.
"""

from __future__ import annotations

from xla_spmd.ir import Instruction

Index = tuple  # of ints (known) and the emitter's names of index values

INDEX_OPS = ("broadcast", "transpose", "reshape", "bitcast", "slice", "reverse")


class OperandIndexing:
    """``_operand_index`` for an emitter that defines the index arithmetic: ``_add``,
    ``_mul``, ``_from_last`` (``last - i``), ``linear`` and ``delinearize``."""

    def _add(self, a, b):
        raise NotImplementedError

    def _mul(self, a, b):
        raise NotImplementedError

    def _from_last(self, last: int, i):
        raise NotImplementedError

    def linear(self, index: Index, dims: tuple):
        raise NotImplementedError

    def delinearize(self, linear, dims: tuple) -> Index:
        raise NotImplementedError

    def _reshaped_index(self, inst: Instruction, operand: Instruction, index: Index) -> Index:
        """Where a reshape or bitcast reads its operand: the same row-major position."""
        return self.delinearize(self.linear(index, inst.shape.dims), operand.shape.dims)

    def _operand_index(self, inst: Instruction, operand: Instruction, index: Index) -> Index:
        """The index at which ``inst`` (one of ``INDEX_OPS``) reads ``operand`` for its
        output element ``index``."""
        name, attrs = inst.op.name, inst.attrs
        if name == "broadcast":
            return tuple(index[d] for d in attrs.dimensions)
        if name == "transpose":
            result = [0] * len(index)
            for k, d in enumerate(attrs.dimensions):
                result[d] = index[k]
            return tuple(result)
        if name in ("reshape", "bitcast"):
            return self._reshaped_index(inst, operand, index)
        if name == "slice":
            return tuple(self._add(s.start, self._mul(i, s.stride))
                         for i, s in zip(index, attrs.slice))
        reversed_dims = set(attrs.dimensions)
        result = []
        for d, i in enumerate(index):
            if d in reversed_dims:
                last = operand.shape.dims[d] - 1
                i = last - i if isinstance(i, int) else self._from_last(last, i)
            result.append(i)
        return tuple(result)
