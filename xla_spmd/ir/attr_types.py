"""The static type of `Instruction.attrs`: every attribute field of every opcode.

Each opcode gets a frozen dataclass generated from its `AttrSpec`s (`ops.define`), so the
fields exist only at run time. `Attrs` names them for type checkers and IDEs: one field per
attribute name, typed by its `AttrKind` (`KIND_TYPES`). An attribute whose every definition
defaults to None is optional here. A field is present only on the opcodes that define it;
code reads it after checking the opcode, as before. `tests/test_attr_types.py` keeps this
protocol equal to the op table.

>>> from xla_spmd.ir.ops import OPS
>>> attrs: Attrs = OPS["transpose"].make_attrs(dimensions=(1, 0))
>>> attrs.dimensions
(1, 0)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from xla_spmd.ir.ops import AttrKind

if TYPE_CHECKING:
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
    )
    from xla_spmd.ir.module import Computation

# The Python type of each attribute kind, as the annotation text used in `Attrs`.
KIND_TYPES: dict[AttrKind, str] = {
    AttrKind.INT: "int",
    AttrKind.FLOAT: "float",
    AttrKind.BOOL: "bool",
    AttrKind.STRING: "str",
    AttrKind.RAW: "str",
    AttrKind.INT_LIST: "tuple[int, ...]",
    AttrKind.INT_PAIRS: "tuple[tuple[int, ...], ...]",
    AttrKind.REPLICA_GROUPS: "ReplicaGroups",
    AttrKind.SLICE: "tuple[SliceDim, ...]",
    AttrKind.PADDING: "tuple[PadDim, ...]",
    AttrKind.WINDOW: "Window",
    AttrKind.CONV_DIMS: "ConvDimensionNumbers",
    AttrKind.DIRECTION: "ComparisonDirection",
    AttrKind.COMPARISON_TYPE: "ComparisonType",
    AttrKind.RNG_ALGORITHM: "RngAlgorithm",
    AttrKind.RNG_DISTRIBUTION: "RngDistribution",
    AttrKind.PRECISION_LIST: "tuple[Precision, ...]",
    AttrKind.FFT_TYPE: "FftType",
    AttrKind.COMPUTATION: "Computation",
    AttrKind.COMPUTATIONS: "tuple[Computation, ...]",
    AttrKind.LITERAL: "Literal",
}


class Attrs(Protocol):
    """The attribute fields of all opcodes (a generated attrs class has its opcode's own)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    algorithm: RngAlgorithm | str | None  # rng-bit-generator's; dot's raw algorithm=...
    api_version: str | None
    batch_group_count: int
    body: Computation
    branch_computations: tuple[Computation, ...] | None
    called_computations: tuple[Computation, ...] | None
    calls: Computation  # None only on ops that may omit it (async-start)
    channel_id: int | None
    collapsed_slice_dims: tuple[int, ...]
    condition: Computation
    constrain_layout: bool
    custom_call_has_side_effect: bool
    custom_call_schedule: str | None
    custom_call_target: str
    dim_labels: ConvDimensionNumbers
    dimensions: tuple[int, ...]  # None only on ops that may omit it
    direction: ComparisonDirection
    distribution: RngDistribution
    dynamic_slice_sizes: tuple[int, ...]
    epsilon: float
    exponent_bits: int
    false_computation: Computation | None
    feature_group_count: int
    feature_index: int
    fft_length: tuple[int, ...]
    fft_type: FftType
    index: int
    index_vector_dim: int
    indices_are_sorted: bool
    infeed_config: str
    inferred_dimension: int | None
    input_batching_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    iota_dimension: int
    is_composite: bool
    is_stable: bool
    k: int
    kind: str
    largest: bool
    left_side: bool
    lhs_batch_dims: tuple[int, ...]
    lhs_contracting_dims: tuple[int, ...]
    literal: Literal
    lower: bool
    mantissa_bits: int
    offset_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...]
    operand_layout_constraints: str | None
    operand_precision: tuple[Precision, ...] | None
    outfeed_config: str
    outfeed_shape: str | None
    output_to_operand_aliasing: str | None
    padding: tuple[PadDim, ...]
    parameter_number: int
    replica_groups: ReplicaGroups | None
    rhs_batch_dims: tuple[int, ...]
    rhs_contracting_dims: tuple[int, ...]
    scatter: Computation
    scatter_dims_to_operand_dims: tuple[int, ...]
    scatter_indices_batching_dims: tuple[int, ...]
    select: Computation
    slice: tuple[SliceDim, ...]
    slice_sizes: tuple[int, ...]
    source_target_pairs: tuple[tuple[int, ...], ...]
    start_index_map: tuple[int, ...]
    start_indices_batching_dims: tuple[int, ...]
    to_apply: Computation
    transpose_a: str | None
    true_computation: Computation | None
    type: ComparisonType | None
    unique_indices: bool
    unit_diagonal: bool
    update_window_dims: tuple[int, ...]
    use_global_device_ids: bool
    window: Window
