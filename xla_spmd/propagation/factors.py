"""Op sharding rules: every operand and result dimension mapped to factors, as in Shardy.

A rule says how an op's dimensions relate, einsum-like. `dot` of ``f32[8,8] x f32[8,16]`` is
``([i, k], [k, j])->([i, j]) {i=8, j=16, k=8} reduction={k}``: factor ``i`` is the lhs
non-contracting dim, ``j`` the rhs one, ``k`` the contracting one (a reduction factor: it is
in the operands only, so sharding it leaves partial sums). A dim may hold several factors,
major to minor (a compound factor, written ``[ij]``), as reshapes need: ``8x4 -> 2x16`` is
``([ij, k])->([i, jk]) {i=2, j=4, k=4}``.

Invariants: every tensor dim lists factors whose sizes multiply to the dim size (windowed and
sliced dims excepted: there the factor has the operand's size); a factor appears at most once
per tensor; factor types are pass-through unless listed in ``reduction``,
``need_replication`` or ``permutation``; ``blocked_propagation`` is an orthogonal flag.

>>> rule = RuleBuilder([(8, 8), (8, 16)], [(8, 16)])
>>> i = rule.add(8, operands=[0, None], results=[0])
>>> j = rule.add(16, operands=[None, 1], results=[1])
>>> k = rule.add(8, operands=[1, 0], results=[None], kind=FactorType.REDUCTION)
>>> print(rule.build())
#sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=8} reduction={k}>
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from xla_spmd.errors import ShardingError


class FactorType(Enum):
    """What sharding a factor costs (docs/sdy_dialect.md#opshardingruleattr)."""

    PASS_THROUGH = "pass_through"          # no communication if all tensors agree
    REDUCTION = "reduction"                # operands only: the result holds partial sums
    NEED_REPLICATION = "need_replication"  # must be replicated to compute (sort dim)
    PERMUTATION = "permutation"            # sharding needs a collective-permute (pad, slice)


def factor_name(index: int) -> str:
    """Shardy's factor symbols: ``i`` .. ``z``, then ``z_1``, ``z_2``, ..."""
    return chr(ord("i") + index) if index < 18 else f"z_{index - 17}"


# Per tensor, per dim, the factor indices major to minor.
TensorMapping = tuple[tuple[int, ...], ...]


@dataclass(frozen=True, slots=True)
class OpShardingRule:
    """The factors of one op: sizes, per-tensor dim mappings, factor types."""

    factor_sizes: tuple[int, ...]
    operands: tuple[TensorMapping, ...]
    results: tuple[TensorMapping, ...]
    types: tuple[FactorType, ...]
    blocked: frozenset[int] = frozenset()
    is_custom: bool = False
    # which way shardings may cross the op: (operands -> results, results -> operands);
    # a propagation barrier allows one way or none (not part of Shardy's rule text)
    direction: tuple[bool, bool] = (True, True)

    @property
    def num_factors(self) -> int:
        return len(self.factor_sizes)

    @property
    def tensors(self) -> tuple[TensorMapping, ...]:
        """Operands then results: the order projections and driver use."""
        return self.operands + self.results

    def factors_of(self, kind: FactorType) -> tuple[int, ...]:
        return tuple(f for f, t in enumerate(self.types) if t is kind)

    def __str__(self) -> str:
        return self.to_text()

    def to_text(self) -> str:
        """Shardy's ``#sdy.op_sharding_rule<...>`` spelling."""
        def tensor(mapping: TensorMapping) -> str:
            return "[" + ", ".join("".join(factor_name(f) for f in dim) or "" for dim in mapping
                                   ) + "]"

        text = ("(" + ", ".join(tensor(m) for m in self.operands) + ")->("
                + ", ".join(tensor(m) for m in self.results) + ")")
        if self.factor_sizes:
            text += " {" + ", ".join(f"{factor_name(f)}={size}"
                                     for f, size in enumerate(self.factor_sizes)) + "}"
        for kind in (FactorType.REDUCTION, FactorType.NEED_REPLICATION, FactorType.PERMUTATION):
            listed = self.factors_of(kind)
            if listed:
                text += f" {kind.value}={{{', '.join(factor_name(f) for f in listed)}}}"
        if self.blocked:
            text += (" blocked_propagation={"
                     + ", ".join(factor_name(f) for f in sorted(self.blocked)) + "}")
        if self.is_custom:
            text += ", custom"
        return f"#sdy.op_sharding_rule<{text}>"


class RuleBuilder:
    """Builds a rule factor by factor (Shardy's OpShardingRuleBuilder).

    ``add(size, operands=[dim or None per operand], results=[...])`` appends a factor to the
    listed dims; factors added to one dim in turn are major to minor (a size-1 factor is not
    added to a dim that has one already). `pointwise` maps every dim of every tensor of full
    rank to one shared factor. `build` gives each dim left without a factor a size-1 factor
    of its own (operands first), as Shardy's builder does.
    """

    def __init__(self, operand_dims: Sequence[Sequence[int]],
                 result_dims: Sequence[Sequence[int]]):
        self.operand_dims = [tuple(d) for d in operand_dims]
        self.result_dims = [tuple(d) for d in result_dims]
        self._operands = [[[] for _ in dims] for dims in self.operand_dims]
        self._results = [[[] for _ in dims] for dims in self.result_dims]
        self._sizes: list[int] = []
        self._types: list[FactorType] = []
        self._blocked: set[int] = set()

    def add(self, size: int, operands: Sequence[int | None] = (),
            results: Sequence[int | None] = (), kind: FactorType = FactorType.PASS_THROUGH,
            blocked: bool = False) -> int:
        index = len(self._sizes)
        for tensors, dims in ((self._operands, operands), (self._results, results)):
            for t, d in enumerate(dims):
                if d is not None and not (size == 1 and tensors[t][d]):
                    tensors[t][d].append(index)
        self._sizes.append(int(size))
        self._types.append(kind)
        if blocked:
            self._blocked.add(index)
        return index

    def pointwise(self, dims: Sequence[int], special: dict[int, FactorType] | None = None,
                  blocked: Sequence[int] = ()) -> None:
        """One factor per dim shared by every tensor of rank len(dims) (scalars get none)."""
        rank = len(dims)
        for d, size in enumerate(dims):
            operands = [d if len(s) == rank else None for s in self.operand_dims]
            results = [d if len(s) == rank else None for s in self.result_dims]
            kind = (special or {}).get(d, FactorType.PASS_THROUGH)
            self.add(size, operands, results, kind, blocked=d in blocked)

    def build(self, is_custom: bool = False) -> OpShardingRule:
        for tensors in (self._operands, self._results):
            for dims in tensors:
                for dim in dims:
                    if not dim:
                        dim.append(len(self._sizes))
                        self._sizes.append(1)
                        self._types.append(FactorType.PASS_THROUGH)
        freeze = lambda tensors: tuple(tuple(tuple(dim) for dim in t) for t in tensors)  # noqa
        return OpShardingRule(tuple(self._sizes), freeze(self._operands),
                              freeze(self._results), tuple(self._types),
                              frozenset(self._blocked), is_custom)


_RULE = re.compile(r"\s*(?:#sdy\.op_sharding_rule<)?\s*\((.*?)\)\s*->\s*\((.*?)\)\s*"
                   r"(?:\{([^}]*)\})?(.*?)>?\s*$", re.S)
_FACTOR = re.compile(r"z_\d+|[a-z]")


def parse_rule(text: str, where: str = "") -> OpShardingRule:
    """The rule of Shardy's ``#sdy.op_sharding_rule<...>`` text (`to_text` read back).

    >>> print(parse_rule("#sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=8} "
    ...                  "reduction={k}>"))
    #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=8} reduction={k}>
    """
    match = _RULE.fullmatch(text)
    if match is None:
        raise ShardingError(f"{where}: cannot read the sharding rule {text!r}")
    operands, results, sizes_text, tail = match.groups()
    names: dict[str, int] = {}
    sizes: list[int] = []
    for item in filter(None, (p.strip() for p in (sizes_text or "").split(","))):
        name, _, size = item.partition("=")
        names[name.strip()] = len(sizes)
        sizes.append(int(size))

    def factor(name: str) -> int:
        if name not in names:
            raise ShardingError(f"{where}: the sharding rule {text!r} uses factor {name!r} "
                                "without a size")
        return names[name]

    def tensors(part: str):
        out = []
        for tensor in re.findall(r"\[([^\]]*)\]", part):
            dims = [d.strip() for d in tensor.split(",")] if tensor.strip() else []
            out.append(tuple(tuple(factor(f) for f in _FACTOR.findall(d)) for d in dims))
        return tuple(out)

    types = [FactorType.PASS_THROUGH] * len(sizes)
    blocked: set[int] = set()
    for kind, listed in re.findall(r"(\w+)=\{([^}]*)\}", tail):
        members = [factor(f.strip()) for f in listed.split(",") if f.strip()]
        if kind == "blocked_propagation":
            blocked.update(members)
            continue
        try:
            factor_type = FactorType(kind)
        except ValueError:
            raise ShardingError(f"{where}: unknown factor kind {kind!r} in the sharding rule "
                                f"{text!r}") from None
        for f in members:
            types[f] = factor_type
    return OpShardingRule(tuple(sizes), tensors(operands), tensors(results), tuple(types),
                          frozenset(blocked), is_custom=bool(re.search(r",\s*custom\b", tail)))
