"""Typed attribute values of HLO instructions.

Each is a frozen value: windows, padding configs, slices, dimension numbers of dot,
convolution, gather and scatter, replica groups, comparison directions, literals. The text
formats (HLO, StableHLO) own the spelling; this module owns the meaning.

>>> ReplicaGroups.iota((2, 4), (8,)).groups
((0, 1, 2, 3), (4, 5, 6, 7))
>>> ConvDimensionNumbers.from_labels("b01f_01io->b01f").input_spatial
(1, 2)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from xla_spmd.errors import VerifyError
from xla_spmd.iota import iota_array

IntTuple = tuple[int, ...]


def _ints(values) -> IntTuple:
    return tuple(int(v) for v in values)


def f32_value(value: float) -> float:
    """`value` rounded to f32, as a Python float (a FLOAT attribute such as ``epsilon``).

    >>> f32_value(0.1)
    0.10000000149011612
    """
    return float(np.float32(value))


def f32_text(value: float) -> str:
    """The shortest decimal text that reads back as the same f32 (``0.001``, ``1e-05``).

    >>> f32_text(f32_value(0.001)), f32_text(1e-05), f32_text(float("inf"))
    ('0.001', '1e-05', 'inf')
    """
    return str(np.float32(value))


class ComparisonDirection(Enum):
    EQ = "EQ"
    NE = "NE"
    GE = "GE"
    GT = "GT"
    LE = "LE"
    LT = "LT"


class ComparisonType(Enum):
    FLOAT = "FLOAT"
    TOTALORDER = "TOTALORDER"
    SIGNED = "SIGNED"
    UNSIGNED = "UNSIGNED"


class RngAlgorithm(Enum):
    DEFAULT = "rng_default"
    THREE_FRY = "rng_three_fry"
    PHILOX = "rng_philox"


class RngDistribution(Enum):
    UNIFORM = "rng_uniform"
    NORMAL = "rng_normal"


class Precision(Enum):
    DEFAULT = "default"
    HIGH = "high"
    HIGHEST = "highest"


class FftType(Enum):
    FFT = "FFT"
    IFFT = "IFFT"
    RFFT = "RFFT"
    IRFFT = "IRFFT"


@dataclass(frozen=True, slots=True)
class WindowDim:
    """One dimension of a window (convolution, reduce-window, select-and-scatter)."""

    size: int
    stride: int = 1
    padding_low: int = 0
    padding_high: int = 0
    lhs_dilation: int = 1
    rhs_dilation: int = 1
    reversal: bool = False

    def __post_init__(self):
        if self.size < 0 or self.stride < 1 or self.lhs_dilation < 1 or self.rhs_dilation < 1:
            raise VerifyError(f"invalid window dimension {self}")

    def output_size(self, input_size: int) -> int:
        """Output extent along this dimension for an input of `input_size` (op_semantics §11)."""
        dilated_in = 0 if input_size == 0 else (input_size - 1) * self.lhs_dilation + 1
        padded = self.padding_low + dilated_in + self.padding_high
        dilated_window = 0 if self.size == 0 else (self.size - 1) * self.rhs_dilation + 1
        if padded <= 0 or dilated_window > padded:
            return 0
        return (padded - dilated_window) // self.stride + 1


@dataclass(frozen=True, slots=True)
class Window:
    dims: tuple[WindowDim, ...]

    @property
    def rank(self) -> int:
        return len(self.dims)

    @staticmethod
    def make(sizes, strides=None, padding=None, lhs_dilation=None, rhs_dilation=None,
             reversal=None) -> Window:
        n = len(sizes)
        strides = strides or (1,) * n
        padding = padding or ((0, 0),) * n
        lhs_dilation = lhs_dilation or (1,) * n
        rhs_dilation = rhs_dilation or (1,) * n
        reversal = reversal or (False,) * n
        return Window(tuple(WindowDim(int(sizes[i]), int(strides[i]), int(padding[i][0]),
                                      int(padding[i][1]), int(lhs_dilation[i]),
                                      int(rhs_dilation[i]), bool(reversal[i]))
                            for i in range(n)))


@dataclass(frozen=True, slots=True)
class PadDim:
    low: int
    high: int
    interior: int = 0

    def output_size(self, size: int) -> int:
        return self.low + size + max(size - 1, 0) * self.interior + self.high


@dataclass(frozen=True, slots=True)
class SliceDim:
    start: int
    limit: int
    stride: int = 1

    def output_size(self) -> int:
        return max(0, -(-(self.limit - self.start) // self.stride))


@dataclass(frozen=True, slots=True)
class DotDimensionNumbers:
    lhs_batch: IntTuple = ()
    lhs_contracting: IntTuple = ()
    rhs_batch: IntTuple = ()
    rhs_contracting: IntTuple = ()


@dataclass(frozen=True, slots=True)
class ConvDimensionNumbers:
    """Roles of a convolution's dimensions; `dim_labels` like ``b01f_01io->b01f``."""

    input_batch: int
    input_feature: int
    input_spatial: IntTuple
    kernel_input_feature: int
    kernel_output_feature: int
    kernel_spatial: IntTuple
    output_batch: int
    output_feature: int
    output_spatial: IntTuple

    @staticmethod
    def from_labels(labels: str) -> ConvDimensionNumbers:
        try:
            lhs_rhs, out = labels.split("->")
            lhs, rhs = lhs_rhs.split("_")
        except ValueError:
            raise VerifyError(f"dim_labels {labels!r} is not of the form lhs_rhs->out") from None

        def roles(text: str, batch: str, feature: str):
            spatial = sorted((int(c), i) for i, c in enumerate(text) if c.isdigit())
            if (text.count(batch) != 1 or text.count(feature) != 1
                    or [s for s, _ in spatial] != list(range(len(text) - 2))):
                raise VerifyError(f"dim_labels part {text!r} needs one {batch!r}, one "
                                  f"{feature!r} and spatial digits 0..{len(text) - 3}")
            return text.index(batch), text.index(feature), tuple(i for _, i in spatial)

        ib, ifeat, isp = roles(lhs, "b", "f")
        ki, ko, ksp = roles(rhs, "i", "o")
        ob, ofeat, osp = roles(out, "b", "f")
        if not len(isp) == len(ksp) == len(osp):
            raise VerifyError(f"dim_labels {labels!r}: spatial ranks differ")
        return ConvDimensionNumbers(ib, ifeat, isp, ki, ko, ksp, ob, ofeat, osp)

    def to_labels(self) -> str:
        def text(rank, pairs):
            chars = ["?"] * rank
            for position, char in pairs:
                chars[position] = char
            return "".join(chars)

        n = len(self.input_spatial)
        lhs = text(n + 2, [(self.input_batch, "b"), (self.input_feature, "f")]
                   + [(d, str(i)) for i, d in enumerate(self.input_spatial)])
        rhs = text(n + 2, [(self.kernel_input_feature, "i"), (self.kernel_output_feature, "o")]
                   + [(d, str(i)) for i, d in enumerate(self.kernel_spatial)])
        out = text(n + 2, [(self.output_batch, "b"), (self.output_feature, "f")]
                   + [(d, str(i)) for i, d in enumerate(self.output_spatial)])
        return f"{lhs}_{rhs}->{out}"


@dataclass(frozen=True, slots=True)
class GatherDimensionNumbers:
    offset_dims: IntTuple
    collapsed_slice_dims: IntTuple
    start_index_map: IntTuple
    index_vector_dim: int
    operand_batching_dims: IntTuple = ()
    start_indices_batching_dims: IntTuple = ()


@dataclass(frozen=True, slots=True)
class ScatterDimensionNumbers:
    update_window_dims: IntTuple
    inserted_window_dims: IntTuple
    scatter_dims_to_operand_dims: IntTuple
    index_vector_dim: int
    input_batching_dims: IntTuple = ()
    scatter_indices_batching_dims: IntTuple = ()


@dataclass(frozen=True, slots=True)
class ReplicaGroups:
    """Replica groups of a collective, remembering the form they were written in.

    `explicit` groups are listed; `iota` groups are the rows of
    ``arange(prod(reshape_dims)).reshape(reshape_dims).transpose(perm).reshape(group_dims)``.
    An empty explicit list means one group of every participant.
    """

    explicit: tuple[IntTuple, ...] | None = None
    group_dims: IntTuple | None = None
    reshape_dims: IntTuple | None = None
    transpose: IntTuple | None = None
    # Mesh-axes form `mesh['a'=2,'b'=4] {'a'}` is kept as text beside its expansion.
    mesh_axes_text: str | None = None

    @staticmethod
    def listed(groups) -> ReplicaGroups:
        return ReplicaGroups(explicit=tuple(_ints(g) for g in groups))

    @staticmethod
    def iota(group_dims, reshape_dims, transpose=None) -> ReplicaGroups:
        group_dims, reshape_dims = _ints(group_dims), _ints(reshape_dims)
        if len(group_dims) != 2 or np.prod(group_dims) != np.prod(reshape_dims):
            raise VerifyError(f"iota replica groups [{group_dims}]<=[{reshape_dims}] must "
                              "have two group dims covering every device")
        transpose = None if transpose is None else _ints(transpose)
        if transpose is not None and sorted(transpose) != list(range(len(reshape_dims))):
            raise VerifyError(f"iota replica groups: T{transpose} is not a permutation")
        return ReplicaGroups(group_dims=group_dims, reshape_dims=reshape_dims,
                             transpose=transpose)

    @staticmethod
    def from_device_groups(device_groups) -> ReplicaGroups:
        """From a mesh's `DeviceGroups` (xla_spmd.mesh): the iota form when one exists, as
        XLA prints SPMD programs, else the explicit list."""
        form = device_groups.iota()
        if form is None:
            return ReplicaGroups.listed(device_groups.groups)
        identity = tuple(range(len(form.reshape_dims)))
        transpose = None if tuple(form.transpose_perm) == identity else form.transpose_perm
        return ReplicaGroups.iota(form.dims, form.reshape_dims, transpose)

    @property
    def is_iota(self) -> bool:
        return self.group_dims is not None

    @property
    def groups(self) -> tuple[IntTuple, ...]:
        if self.explicit is not None:
            return self.explicit
        assert self.reshape_dims is not None and self.group_dims is not None  # iota form
        ids = iota_array(self.reshape_dims, self.transpose, self.group_dims)
        return tuple(tuple(int(i) for i in row) for row in ids)

    def __eq__(self, other) -> bool:
        return isinstance(other, ReplicaGroups) and self.groups == other.groups

    def __hash__(self) -> int:
        return hash(self.groups)


@dataclass(frozen=True, slots=True, eq=False)
class Literal:
    """A constant's value: an immutable numpy array (or a tuple of literals)."""

    value: np.ndarray | tuple[Literal, ...]

    def __post_init__(self):
        if isinstance(self.value, np.ndarray):
            self.value.setflags(write=False)

    @property
    def is_tuple(self) -> bool:
        return isinstance(self.value, tuple)

    @property
    def array(self) -> np.ndarray:
        """The value of an array literal (a tuple literal has none: VerifyError)."""
        if isinstance(self.value, tuple):
            raise VerifyError(f"a tuple literal has no array value: {self!r}")
        return self.value

    def _key(self) -> tuple:
        if isinstance(self.value, tuple):
            return tuple(e._key() for e in self.value)
        return (self.value.dtype.str, self.value.shape, self.value.tobytes())

    def __eq__(self, other) -> bool:
        return isinstance(other, Literal) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        if isinstance(self.value, tuple):
            return f"Literal({self.value!r})"
        return f"Literal({self.value.dtype}{list(self.value.shape)})"
