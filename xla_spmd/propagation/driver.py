"""The propagation driver: worklists to a fixed point under user and op priorities.

Invariants: a value's dim sharding only grows (axes are appended to open dims, never removed
or reordered), so closed user shardings and sharding constraints are never overwritten and
the loop terminates; a node is revisited only when one of its values changed (worklist), so
the time is linear in the number of ops times the (small) number of priority rounds.

Strategies, outermost first (Shardy's hierarchy): user priorities (round p propagates dims of
priority <= p; dims of later priorities are closed and their axes unavailable until their
round) > op priorities (five cumulative levels: pass-through ops with single-use operands,
all pass-through ops, every op along pass-through factors with broadcast only backward, every
op but broadcast forward, everything) > the conflict policy (basic or aggressive). Each level
and round is a plain object; the policy a plain function.

Worked example: ``y = tanh(x); z = dot(y, w)`` with x ``[{"data"}, {}]`` and w
``[{}, {"model"}]``: level 1 gives y ``[{"data", ?}, {?}]`` through tanh; the dot (level 3)
gives z ``[{"data", ?}, {"model", ?}]``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from xla_spmd.errors import ShardingError
from xla_spmd.mesh import AxisRef, Mesh, overlaps_any
from xla_spmd.propagation.conflicts import (
    POLICIES,
    TensorView,
    Update,
    aggressive,
    is_elementwise,
)
from xla_spmd.propagation.factors import FactorType
from xla_spmd.propagation.graph import Graph, Node
from xla_spmd.propagation.projection import AxisSizes, project_dim, unproject_dim
from xla_spmd.sharding import DimSharding, TensorSharding

# ------------------------------------------------------------------ op-priority levels
BOTH, FORWARD, BACKWARD, NONE = (True, True), (True, False), (False, True), (False, False)
ALL_TYPES = frozenset({FactorType.PASS_THROUGH, FactorType.REDUCTION, FactorType.PERMUTATION,
                       FactorType.NEED_REPLICATION})
PASS_TYPES = frozenset({FactorType.PASS_THROUGH})


def _is_pass_through(node: Node) -> bool:
    return node.kind == "edge" or (node.inst is not None and node.inst.op.pass_through)


@dataclass(frozen=True)
class Level:
    """One op-priority step: which way each node may propagate, along which factor types.
    A direction is (forward: results may change, backward: operands may change)."""

    name: str
    direction: Callable[[Node], tuple[bool, bool]]
    factor_types: frozenset = ALL_TYPES
    defer_conflicts: bool = False


def _pass_through_direction(single_use_only: bool):
    def direction(node: Node):
        if single_use_only and not node.single_use:
            return NONE
        if _is_pass_through(node):
            return BOTH
        if node.inst is not None and node.inst.op.forward_pass_through:
            return FORWARD
        return NONE
    return direction


def _broadcast_backward(node: Node):
    return BACKWARD if node.inst is not None and node.inst.op.name == "broadcast" else BOTH


OP_PRIORITY_LEVELS = (
    Level("pass-through ops, single use", _pass_through_direction(True)),
    Level("pass-through ops", _pass_through_direction(False)),
    Level("pass-through factors, broadcast backward", _broadcast_backward, PASS_TYPES, True),
    Level("any op except broadcast forward", _broadcast_backward, ALL_TYPES, True),
    Level("any op", lambda node: BOTH),
)
SINGLE_LEVEL = (Level("any op", lambda node: BOTH),)


# ------------------------------------------------------------------ per-value state
@dataclass(slots=True)
class ValueState:
    """A value's sharding while propagating (mutable; turned into TensorSharding at the end)."""

    axes: list            # per dim: tuple of AxisRef
    closed: list          # per dim: bool
    priority: list        # per dim: int | None
    replicated: tuple = ()
    unreduced: tuple = ()
    excluded: tuple = ()  # replicated + unreduced + manual + axes held back for later rounds
    user: bool = False
    # its sharding, if on another mesh: nodes touching it are skipped
    foreign: TensorSharding | None = None
    mesh_name: str | None = "mesh"
    reduction: str = "sum"  # how the unreduced axes combine (TensorSharding.reduction)

    def is_empty(self) -> bool:
        return not any(self.axes)


@dataclass
class Origin:
    """Where an axis of a value came from: the value it flowed from, through which node."""

    source: int
    node: int | None   # None: through a sharding group


@dataclass
class Propagator:
    graph: Graph
    mesh: Mesh
    policy: Callable[..., list[Update]]
    states: list[ValueState]
    groups: dict[int, list[int]] = field(default_factory=dict)
    origins: dict[tuple[int, str], Origin] = field(default_factory=dict)
    visits: int = 0
    # nodes each level visits before all others (Shardy pushes main's result shardings to
    # the returned values before it propagates through any op)
    first: tuple[int, ...] = ()

    def __post_init__(self):
        self.axis_sizes = AxisSizes(self.mesh)
        self.sizes = [v.shape.byte_size for v in self.graph.values]

    # ---------------------------------------------------------------- the loop
    def run_level(self, level: Level) -> None:
        nodes = self.graph.nodes
        first = set(self.first)
        queue = deque([*self.first, *(i for i in range(len(nodes)) if i not in first)])
        queued = [True] * len(nodes)
        while queue:
            index = queue.popleft()
            queued[index] = False
            node = nodes[index]
            direction = level.direction(node)
            if node.rule.direction != BOTH:
                direction = (direction[0] and node.rule.direction[0],
                             direction[1] and node.rule.direction[1])
            if direction == NONE:
                continue
            changed = self.visit(index, node, direction, level)
            for value in changed:
                for other in self.graph.value_nodes[value]:
                    if not queued[other]:
                        queued[other] = True
                        queue.append(other)

    def visit(self, index: int, node: Node, direction, level: Level) -> list[int]:
        """Propagate through one node; return the values that changed."""
        states = self.states
        tensors = node.tensors
        if all(states[v].is_empty() for v in tensors):
            return []
        if any(states[v].foreign for v in tensors):
            return []
        self.visits += 1
        rule = node.rule
        sizes = rule.factor_sizes
        n_operands = len(node.operands)
        views = []
        prefixes = node.prefixes or ((),) * len(tensors)
        for position, value in enumerate(tensors):
            state = states[value]
            factors = {}
            fixed = prefixes[position]
            for d, factor_list in enumerate(rule.tensors[position]):
                axes = state.axes[d]
                if fixed and fixed[d]:
                    if tuple(axes[:len(fixed[d])]) != tuple(fixed[d]):
                        return []   # the fixed (manual) axes are not there: nothing to do
                    axes = axes[len(fixed[d]):]
                if factor_list:
                    project_dim(axes, factor_list, sizes, state.closed[d],
                                self.axis_sizes, factors)
            can_update = direction[1] if position < n_operands else direction[0]
            excluded = tuple(state.excluded) + tuple(a for dim in fixed for a in dim)
            views.append(TensorView(factors, excluded, can_update,
                                    not self.graph.values[value].is_sink, self.sizes[value],
                                    is_result=position >= n_operands))
        eligible = [f for f, kind in enumerate(rule.types)
                    if kind in level.factor_types and f not in rule.blocked]
        if self.policy is aggressive:
            updates = aggressive(views, eligible, sizes, self.axis_sizes,
                                 defer_conflicts=level.defer_conflicts,
                                 elementwise=is_elementwise(node.inst))
        else:
            updates = self.policy(views, eligible, sizes, self.axis_sizes)
        sources: dict[int, list[tuple[int, int]]] = {}   # position -> (factor, source)
        for position, factor, _, source in updates:
            sources.setdefault(position, []).append((factor, source))
        changed: list[int] = []
        for position, factor_sources in sources.items():
            value = tensors[position]
            if value in changed:
                continue
            mapping = rule.tensors[position]
            state = states[value]
            fixed = prefixes[position]
            new = [tuple(fixed[d] if fixed else ()) + tuple(unproject_dim(
                       mapping[d], views[position].factors, sizes, self.axis_sizes))
                   if mapping[d] else state.axes[d] for d in range(len(mapping))]
            if not self.set_axes(value, new):
                continue
            changed.append(value)
            for factor, source in factor_sources:
                for axis in views[position].factors[factor].axes:
                    self.origins.setdefault((value, axis.name), Origin(tensors[source], index))
        for value in list(changed):
            changed.extend(self.apply_group(value))
        return changed

    def set_axes(self, value: int, new_axes: list) -> bool:
        state = self.states[value]
        merged = []
        for d, (old, new) in enumerate(zip(state.axes, new_axes)):
            if state.closed[d] or not (
                    (len(new) > len(old) and new[:len(old)] == old)
                    or (old and len(new) >= len(old) and new[:len(old) - 1] == old[:-1]
                        and self.axis_sizes.is_prefix(old[-1], new[len(old) - 1]))):
                merged.append(old)   # only extended (or its last sub-axis grown)
            else:
                merged.append(new)
        if merged == state.axes or not _valid(merged, state.excluded):
            return False
        state.axes = merged
        return True

    def apply_group(self, value: int) -> list[int]:
        """Copy `value`'s sharding to the other members of its sharding group."""
        members = self.groups.get(value)
        if not members:
            return []
        changed = []
        source = self.states[value]
        for member in members:
            if member == value or len(self.states[member].axes) != len(source.axes):
                continue
            if self.set_axes(member, list(source.axes)):
                for axes in source.axes:
                    for axis in axes:
                        self.origins.setdefault((member, axis.name), Origin(value, None))
                changed.append(member)
        return changed


def _valid(dims, excluded) -> bool:
    seen: list[AxisRef] = list(excluded)
    for axes in dims:
        for axis in axes:
            if overlaps_any(axis, seen):
                return False
            seen.append(axis)
    return True


# ------------------------------------------------------------------ states from shardings
def state_from_sharding(sharding: TensorSharding | None, rank: int, mesh: Mesh,
                        manual_axes=(), mesh_name: str | None = "mesh") -> ValueState:
    """The propagation state of a value with `sharding` (None: no sharding, all open)."""
    manual = tuple(AxisRef(a) for a in manual_axes)
    if sharding is None:
        return ValueState([()] * rank, [False] * rank, [None] * rank, excluded=manual,
                          mesh_name=mesh_name)
    if not sharding.mesh.axis_names and sharding.mesh.device_ids is not None \
            and not sharding.dims:
        # a maximal sharding (``<@maximal_mesh, []>``: the value lives on one device), of
        # any rank: kept as is; ops touching it are skipped
        return ValueState([()] * rank, [True] * rank, [None] * rank, user=True,
                          foreign=sharding)
    if sharding.rank != rank:
        raise ShardingError(f"sharding {sharding} has {sharding.rank} dims for a rank-{rank} "
                            f"value")
    if not sharding.mesh.axis_names and sharding.mesh.device_ids is None and \
            all(d.is_closed for d in sharding.dims):
        # the empty mesh with every dim closed: nothing can ever be added, so it stays on
        # the empty mesh (Shardy keeps it); ops touching it are skipped
        return ValueState([()] * rank, [True] * rank, [None] * rank, user=True,
                          foreign=sharding)
    if not sharding.mesh.axis_names and sharding.mesh.device_ids is None:
        # the empty mesh (``<[]>``, not a maximal one): no axes on any mesh, so the
        # propagation mesh's, open dims open to it (Shardy replaces the mesh)
        return ValueState([()] * rank, [d.is_closed for d in sharding.dims],
                          [d.priority for d in sharding.dims], excluded=manual,
                          user=True, mesh_name=mesh_name)
    if sharding.mesh.axis_names != mesh.axis_names or sharding.mesh.axis_sizes != \
            mesh.axis_sizes or sharding.mesh.all_device_ids != mesh.all_device_ids:
        # another mesh (a maximal one, or another device order): kept as is; ops touching
        # it are skipped
        return ValueState([d.axes for d in sharding.dims], [True] * rank, [None] * rank,
                          user=True, foreign=sharding)
    return ValueState([d.axes for d in sharding.dims], [d.is_closed for d in sharding.dims],
                      [d.priority for d in sharding.dims], sharding.replicated,
                      sharding.unreduced,
                      tuple(sharding.replicated) + tuple(sharding.unreduced) + manual,
                      user=True, mesh_name=sharding.mesh_name, reduction=sharding.reduction)


def state_to_sharding(state: ValueState, mesh: Mesh) -> TensorSharding:
    if state.foreign:
        return state.foreign
    dims = [DimSharding(axes, closed, priority if (axes or not closed) else None)
            for axes, closed, priority in zip(state.axes, state.closed, state.priority)]
    return TensorSharding(mesh, tuple(dims), state.replicated, state.unreduced,
                          state.mesh_name, state.reduction)


def get_policy(name_or_fn: str | Callable[..., list[Update]]) -> Callable[..., list[Update]]:
    if callable(name_or_fn):
        return name_or_fn
    try:
        return POLICIES[name_or_fn]
    except KeyError:
        raise ShardingError(f"unknown conflict policy {name_or_fn!r}; expected one of "
                            f"{sorted(POLICIES)}") from None
