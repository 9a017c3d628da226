"""The auto-sharding problem: nodes with sharding choices, unary costs, edge costs.

Invariants. Nodes are the *anchors* of the entry computation: its parameters and its dots.
Every other value follows one anchor (its *origin*) through a map from its dims to the
anchor's result dims, as propagation would carry a sharding through elementwise ops,
transposes, broadcasts, reshapes that split or merge dims, and reductions; a value whose op
is none of these starts no origin (its sharding is left to propagation).

A *strategy* of an anchor is a sharding of its result: per dim, the mesh axes on it (each
axis used once, in mesh order, dividing the dim). A dot's strategy also assigns axes to its
contracting dims, leaving partial sums that cost an all-reduce.

Costs, in seconds of the cost model's profile:
* unary: a dot's FLOPs over GEMM throughput divided by its shards, its partial-sum
  all-reduce, the memory traffic of the values following an anchor divided by their shards,
  and the all-reduce a reduction over a sharded dim needs;
* edges: where two origins meet (an elementwise op of both, a dot's operand) the values must
  agree; the price is the resharding of one into the other: an all-gather per axis the
  target drops, an all-to-all per axis that moves to another dim, nothing for an axis the
  target adds (each device slices its part).

Worked example: ``tanh(x @ w)`` with x: f32[8,16] and w: f32[16,4] on mesh {"data": 2}.
Anchors x, w, dot. The strategy {lhs free dim: data} of the dot needs x sharded on dim 0
(free if x's strategy is [data, -], an all-gather of x otherwise) and w replicated.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from xla_spmd.cost.profile import Profile
from xla_spmd.ir import ArrayShape, Computation, Instruction
from xla_spmd.ir.ops import Family
from xla_spmd.partition.report import collective_bytes

Strategy = tuple[tuple[str, ...], ...]      # per result dim, the mesh axes on it
TIE_BREAK = 1e-15                           # seconds per byte per device of an argument


@dataclass
class Node:
    """One anchor and its choices."""

    inst: Instruction
    strategies: list[Strategy]
    unary: np.ndarray                          # seconds per strategy
    memory: np.ndarray                         # bytes per device per strategy (parameters)
    # dot only: per strategy, the axes on each operand dim (what its operands must be)
    operand_needs: list[tuple[Strategy, Strategy]] = field(default_factory=list)


@dataclass
class Problem:
    """Nodes, and edge cost matrices between pairs of them."""

    mesh_axes: dict[str, int]
    nodes: list[Node]
    edges: dict[tuple[int, int], np.ndarray]   # (u, v) with u < v -> cost[s_u, s_v]

    def objective(self, choice: list[int]) -> float:
        total = sum(node.unary[choice[i]] for i, node in enumerate(self.nodes))
        return total + sum(cost[choice[u], choice[v]] for (u, v), cost in self.edges.items())


def _axis_assignments(num_slots: int, mesh_axes: dict[str, int]):
    """Every way to put each mesh axis on one of `num_slots` slots or on none."""
    names = [n for n, size in mesh_axes.items() if size > 1]
    for picks in itertools.product(range(num_slots + 1), repeat=len(names)):
        slots: list[tuple[str, ...]] = [() for _ in range(num_slots)]
        for name, pick in zip(names, picks):
            if pick < num_slots:
                slots[pick] = slots[pick] + (name,)
        yield tuple(slots)


def _size(axes, mesh_axes) -> int:
    return math.prod(mesh_axes[a] for a in axes)


def _divides(slots, sizes, mesh_axes) -> bool:
    return all(size % _size(axes, mesh_axes) == 0 for axes, size in zip(slots, sizes))


def tensor_strategies(dims, mesh_axes) -> list[Strategy]:
    return _tensor_strategies(tuple(dims), tuple(mesh_axes.items()))


@functools.cache
def _tensor_strategies(dims, mesh_items) -> list[Strategy]:
    # One list per shape: edges between equal lists share their cost matrices.
    mesh_axes = dict(mesh_items)
    return [s for s in _axis_assignments(len(dims), mesh_axes) if _divides(s, dims, mesh_axes)]


def _bytes(shape) -> int:
    return shape.byte_size if isinstance(shape, ArrayShape) and not shape.is_token else 0


class CostTable:
    """Resharding and collective prices, memoised (layers repeat the same patterns)."""

    def __init__(self, profile: Profile, mesh_axes: dict[str, int]):
        self.profile = profile
        self.mesh_axes = mesh_axes
        self._memo: dict = {}
        self.dots: dict = {}        # a dot's signature -> (strategies, unary, needs), shared

    def collective(self, kind: str, axes, local_bytes: float) -> float:
        n = _size(axes, self.mesh_axes)
        return self.profile.collective_time(kind, n, collective_bytes(kind, local_bytes, n))

    def reshard(self, source: Strategy, target: Strategy, global_bytes: float) -> float:
        key = (source, target, global_bytes)
        if key not in self._memo:
            self._memo[key] = self._reshard(source, target, global_bytes)
        return self._memo[key]

    def _reshard(self, source, target, global_bytes) -> float:
        local = global_bytes / _size([a for axes in source for a in axes], self.mesh_axes)
        cost = 0.0
        for dim, axes in enumerate(source):
            for axis in axes:
                if axis in target[dim]:
                    continue
                moved = any(axis in other for d, other in enumerate(target) if d != dim)
                kind = "all-to-all" if moved else "all-gather"
                cost += self.collective(kind, (axis,), local)
                if not moved:
                    local *= self.mesh_axes[axis]
        return cost


def _follow_map(inst: Instruction, operand_map):
    """The map of `inst`'s dims to its operand's origin dims (None: not followed)."""
    op = inst.opcode
    operand = inst.operands[0]
    if op == "transpose":
        return tuple(operand_map[p] for p in inst.attrs.dimensions)
    if op == "broadcast":
        result = [None] * inst.shape.rank
        for j, d in enumerate(inst.attrs.dimensions):
            result[d] = operand_map[j]
        return tuple(result)
    if op in ("reshape", "bitcast"):
        return _reshape_map(operand.shape.dims, inst.shape.dims, operand_map)
    if op == "reduce":
        kept = [d for d in range(operand.shape.rank) if d not in inst.attrs.dimensions]
        return tuple(operand_map[d] for d in kept)
    if tuple(operand.shape.dims) == tuple(inst.shape.dims):
        return tuple(operand_map)
    return None


def _reshape_map(source, target, operand_map):
    """Dims of equal size at equal running products keep their origin dim."""
    result = [None] * len(target)
    prefix = {}
    running = 1
    for d, size in enumerate(source):
        prefix[(running, size)] = d
        running *= size
    running = 1
    for d, size in enumerate(target):
        if (running, size) in prefix and size > 1:
            result[d] = operand_map[prefix[(running, size)]]
        running *= size
    return tuple(result)


def _follows(inst: Instruction) -> bool:
    family = inst.op.family
    return family in (Family.UNARY, Family.BINARY, Family.ELEMENTWISE) or inst.opcode in (
        "transpose", "broadcast", "reshape", "bitcast", "reduce", "copy")


def build_problem(entry: Computation, mesh_axes: dict[str, int], profile: Profile
                  ) -> Problem:
    """The nodes and edges of `entry` (see the module docstring)."""
    table = CostTable(profile, mesh_axes)
    nodes: list[Node] = []
    origin: dict[Instruction, tuple[int, tuple]] = {}
    pending_edges: list[tuple] = []     # (u, map_u, v, map_v or needs, bytes, is_dot_operand)
    traffic: dict[int, list] = {}       # node -> [(map, bytes)] of the values following it
    reductions: dict[int, list] = {}    # node -> [(reduced origin dims, result bytes)]
    for inst in entry.instructions:
        if not isinstance(inst.shape, ArrayShape) or inst.shape.is_token:
            continue
        if inst.opcode == "parameter":
            strategies = tensor_strategies(inst.shape.dims, mesh_axes)
            memory = np.array([_bytes(inst.shape) / _size([a for x in s for a in x], mesh_axes)
                               for s in strategies])
            # Slicing is free, so a replicated argument ties with a sharded one; ties go to
            # the one that needs less memory.
            nodes.append(Node(inst, strategies, memory * TIE_BREAK, memory))
            origin[inst] = (len(nodes) - 1, tuple(range(inst.shape.rank)))
        elif inst.opcode == "dot":
            nodes.append(_dot_node(inst, mesh_axes, table))
            index = len(nodes) - 1
            origin[inst] = (index, tuple(range(inst.shape.rank)))
            for k, operand in enumerate(inst.operands):
                if operand in origin:
                    u, mapping = origin[operand]
                    pending_edges.append((u, mapping, index, k, _bytes(operand.shape), True))
        elif _follows(inst) and inst.operands:
            sources = [o for o in inst.operands if o in origin and o.shape.rank > 0]
            if not sources:
                continue
            # The result follows the operand most fully mapped to its anchor (not the
            # broadcast of a bias); the others are resharded to it.
            first = max(sources, key=lambda o: (sum(m is not None for m in origin[o][1]),
                                                 -sources.index(o)))
            u, mapping = origin[first]
            followed = _follow_map(inst, mapping) if first is inst.operands[0] else (
                tuple(mapping) if tuple(first.shape.dims) == tuple(inst.shape.dims) else None)
            for other in sources:
                if other is not first and tuple(other.shape.dims) == tuple(first.shape.dims):
                    v, other_map = origin[other]
                    if v != u:
                        pending_edges.append((v, other_map, u, mapping, _bytes(other.shape),
                                              False))
            if followed is None:
                continue
            origin[inst] = (u, followed)
            traffic.setdefault(u, []).append((followed, _bytes(inst.shape)))
            if inst.opcode == "reduce":
                reduced = [mapping[d] for d in inst.attrs.dimensions
                           if mapping[d] is not None]
                if reduced:
                    reductions.setdefault(u, []).append((reduced, _bytes(inst.shape)))
    _add_following_costs(nodes, traffic, reductions, table)
    edges = _edge_matrices(nodes, pending_edges, table)
    return Problem(mesh_axes, nodes, edges)


def _dot_node(inst: Instruction, mesh_axes, table: CostTable) -> Node:
    attrs = inst.attrs
    lhs, rhs = (o.shape for o in inst.operands)
    key = (lhs.dims, rhs.dims, attrs.lhs_batch_dims, attrs.lhs_contracting_dims,
           attrs.rhs_batch_dims, attrs.rhs_contracting_dims, inst.shape.byte_size)
    shared = table.dots.get(key)
    if shared is not None:
        strategies, unary, needs = shared
        return Node(inst, strategies, unary.copy(), np.zeros(len(strategies)), needs)
    lb, lc, rb, rc = (attrs.lhs_batch_dims, attrs.lhs_contracting_dims, attrs.rhs_batch_dims,
                      attrs.rhs_contracting_dims)
    lf = [d for d in range(lhs.rank) if d not in lb and d not in lc]
    rf = [d for d in range(rhs.rank) if d not in rb and d not in rc]
    # Factors: batch pairs, lhs free, rhs free, contracting pairs (HLO result order first).
    factor_sizes = ([lhs.dims[d] for d in lb] + [lhs.dims[d] for d in lf] +
                    [rhs.dims[d] for d in rf] + [lhs.dims[d] for d in lc])
    num_result = len(lb) + len(lf) + len(rf)
    profile = table.profile
    strategies, unary, needs = [], [], []
    for slots in _axis_assignments(len(factor_sizes), mesh_axes):
        if not _divides(slots, factor_sizes, mesh_axes):
            continue
        result = slots[:num_result]
        contracting = [a for axes in slots[num_result:] for a in axes]
        shards = _size([a for axes in slots for a in axes], mesh_axes)
        flops = 2.0 * inst.shape.num_elements * math.prod(lhs.dims[d] for d in lc)
        seconds = flops / shards / profile.gemm_flops
        if contracting:
            local = _bytes(inst.shape) / _size([a for axes in result for a in axes], mesh_axes)
            seconds += table.collective("all-reduce", tuple(contracting), local)
        lhs_need: list = [()] * lhs.rank
        rhs_need: list = [()] * rhs.rank
        for i, (a, b) in enumerate(zip(lb, rb)):
            lhs_need[a] = rhs_need[b] = slots[i]
        for i, d in enumerate(lf):
            lhs_need[d] = slots[len(lb) + i]
        for i, d in enumerate(rf):
            rhs_need[d] = slots[len(lb) + len(lf) + i]
        for i, (a, b) in enumerate(zip(lc, rc)):
            lhs_need[a] = rhs_need[b] = slots[num_result + i]
        strategies.append(result)
        unary.append(seconds)
        needs.append((tuple(lhs_need), tuple(rhs_need)))
    table.dots[key] = (strategies, np.array(unary), needs)
    return Node(inst, strategies, np.array(unary), np.zeros(len(strategies)), needs)


def _mapped(strategy: Strategy, mapping) -> Strategy:
    return tuple(strategy[m] if m is not None else () for m in mapping)


def _add_following_costs(nodes, traffic, reductions, table: CostTable) -> None:
    bandwidth = table.profile.memory_bandwidth
    for u, values in traffic.items():
        node = nodes[u]
        for s, strategy in enumerate(node.strategies):
            seconds = 0.0
            for mapping, size in values:
                axes = [a for x in _mapped(strategy, mapping) for a in x]
                seconds += size / _size(axes, table.mesh_axes) / bandwidth
            for reduced, size in reductions.get(u, ()):
                axes = tuple(a for d in reduced for a in strategy[d])
                if axes:
                    seconds += table.collective("all-reduce", axes, size)
            node.unary[s] += seconds


def _edge_matrices(nodes, pending, table: CostTable) -> dict:
    edges: dict[tuple[int, int], np.ndarray] = {}
    memo: dict = {}
    for u, map_u, v, target, size, dot_operand in pending:
        a, b = nodes[u], nodes[v]
        wanted = b.operand_needs if dot_operand else b.strategies
        key = (id(a.strategies), map_u, id(wanted), target, size)
        cost = memo.get(key)
        if cost is None:
            sources = [_mapped(su, map_u) for su in a.strategies]
            targets = [need[target] for need in wanted] if dot_operand else [
                _mapped(sv, target) for sv in wanted]
            cost = memo[key] = np.array([[table.reshard(source, goal, size) for goal in targets]
                                         for source in sources])
        key, matrix = ((u, v), cost) if u < v else ((v, u), cost.T)
        edges[key] = edges[key] + matrix if key in edges else matrix
    return edges
