"""The HLO IR: element types, shapes, the op table, instructions, computations, modules, the
verifier, and the HLO text parser and printer.

>>> from xla_spmd.ir import parse_hlo, print_module
>>> m = parse_hlo('''HloModule m
... ENTRY %e (x: f32[2]) -> f32[2] {
...   %x = f32[2] parameter(0)
...   ROOT %n = f32[2] negate(f32[2] %x)
... }''')
>>> parse_hlo(print_module(m)) == m
True
"""

from xla_spmd.ir import opdefs, opdefs_compute, opdefs_program  # noqa: F401 (fill the op table)
from xla_spmd.ir.attributes import (
                                    ComparisonDirection,
                                    ComparisonType,
                                    ConvDimensionNumbers,
                                    FftType,
                                    Literal,
                                    PadDim,
                                    Precision,
                                    ReplicaGroups,
                                    RngAlgorithm,
                                    RngDistribution,
                                    SliceDim,
                                    Window,
                                    WindowDim,
)
from xla_spmd.ir.builder import Builder, NameGenerator
from xla_spmd.ir.dtypes import (
                                    ALL_DTYPES,
                                    BF16,
                                    C64,
                                    C128,
                                    F16,
                                    F32,
                                    F64,
                                    PRED,
                                    S8,
                                    S16,
                                    S32,
                                    S64,
                                    TOKEN,
                                    U8,
                                    U16,
                                    U32,
                                    U64,
                                    DType,
                                    Kind,
)
from xla_spmd.ir.hlo_parser import parse_hlo
from xla_spmd.ir.hlo_printer import print_instruction, print_module
from xla_spmd.ir.module import (
                                    Computation,
                                    Instruction,
                                    Module,
                                    make_instruction,
                                    map_computations,
                                    rebind_called,
                                    rewrite,
                                    topological_order,
)
from xla_spmd.ir.ops import OPS, AttrKind, AttrSpec, Family, Op, Registry, Trait, op_named
from xla_spmd.ir.reducers import componentwise_kinds, reducer_kind
from xla_spmd.ir.shapes import TOKEN_SHAPE, ArrayShape, Shape, TupleShape, array, scalar
from xla_spmd.ir.verifier import verify, verify_computation

__all__ = [
    "ALL_DTYPES", "BF16", "C64", "C128", "F16", "F32", "F64", "PRED", "S8", "S16", "S32",
    "S64", "TOKEN", "U8", "U16", "U32", "U64", "DType", "Kind",
    "ArrayShape", "TupleShape", "Shape", "TOKEN_SHAPE", "array", "scalar",
    "ComparisonDirection", "ComparisonType", "ConvDimensionNumbers", "FftType", "Literal",
    "PadDim", "Precision", "ReplicaGroups", "RngAlgorithm", "RngDistribution", "SliceDim",
    "Window", "WindowDim",
    "OPS", "AttrKind", "AttrSpec", "Family", "Op", "Registry", "Trait", "op_named",
    "componentwise_kinds", "reducer_kind",
    "Instruction", "Computation", "Module", "make_instruction", "map_computations",
    "rebind_called", "rewrite",
    "topological_order", "Builder", "NameGenerator", "verify", "verify_computation",
    "parse_hlo", "print_module", "print_instruction",
]
