"""What one instruction computes and moves: its FLOPs and the bytes it reads and writes.

The per-instruction measures the cost model (`model`) and its pricing of the CPU backend's
plan (`plan`) both build on; a leaf of the cost package.

>>> from xla_spmd.ir import parse_hlo
>>> m = parse_hlo('''HloModule m
... ENTRY e { x = f32[4,8] parameter(0)
...   ROOT d = f32[4,4] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={1} }''')
>>> flops(m.entry.root), memory_traffic(m.entry.root)
(256.0, 320.0)
"""

from __future__ import annotations

from xla_spmd.ir import Instruction


def array_bytes(shape) -> int:
    """Bytes of the arrays of `shape` (every leaf of a tuple; tokens hold none)."""
    return sum(leaf.byte_size for leaf in shape.leaves() if not leaf.is_token)


def _elements(shape) -> int:
    """Elements of the arrays of `shape`."""
    return sum(leaf.num_elements for leaf in shape.leaves() if not leaf.is_token)


def flops(inst: Instruction) -> float:
    """Floating-point operations of one instruction (multiply-adds count two)."""
    if inst.opcode == "dot":
        lhs = inst.operands[0].shape
        contracting = 1
        for d in inst.attrs.lhs_contracting_dims:
            contracting *= lhs.dims[d]
        return 2.0 * _elements(inst.shape) * contracting
    if inst.opcode == "convolution":
        kernel = inst.operands[1].shape
        output_features = max(1, inst.shape.dims[-1]) if inst.shape.dims else 1
        return 2.0 * _elements(inst.shape) * kernel.num_elements / output_features
    return float(_elements(inst.shape))


def memory_traffic(inst: Instruction) -> float:
    """Bytes an instruction reads and writes (operands once each, then its result)."""
    return float(sum(array_bytes(o.shape) for o in inst.operands) + array_bytes(inst.shape))
