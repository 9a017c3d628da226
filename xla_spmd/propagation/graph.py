"""The propagation graph: array values and the nodes (ops and data-flow edges) between them.

Every array leaf of every instruction is a *value*; tuple and get-tuple-element alias the
values of their elements, so tuples need no rule. Called computations are instantiated per
call site (Shardy flattens the call graph the same way): a `call` aliases its operands to the
callee's parameters and its results to the callee's root; a `while` aliases its result, body
parameter and condition parameter (Shardy's edge targets) and links them by a data-flow edge
to its sources, the operand and the body root; a `conditional` aliases each branch parameter
to its operand and links the branch roots to its result by an edge. Reducer computations
(reduce, sort, scatter, ...) are scalar and stay unsharded.

A variadic StableHLO op the importer wrote as one chain of HLO ops per operand also gets a
node of its own rule over the chains' ends (`xla_spmd.ir.lowered`), linking its operands.
A node is an op with a factor rule, or an edge with the identity rule. `value_nodes` lists
the nodes touching each value, so the driver revisits only the neighbours of a change.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xla_spmd.ir import ArrayShape, Computation, Instruction, TupleShape
from xla_spmd.ir.lowered import lowered_groups
from xla_spmd.propagation.calls import is_function_call
from xla_spmd.propagation.factors import OpShardingRule, RuleBuilder
from xla_spmd.propagation.registry import sharding_rule

CONTROL = frozenset({"call", "fusion", "while", "conditional"})
ALIAS = frozenset({"tuple", "get-tuple-element", "opt-barrier"})
SINK_OPS = frozenset({"constant", "iota"})
FOLLOW_OPS = frozenset({"broadcast", "reshape", "convert", "transpose", "copy", "bitcast"})


@dataclass(slots=True)
class Value:
    """An array value: where it comes from and its shape."""

    inst: Instruction
    leaf: int
    shape: ArrayShape
    instance: int
    manual_axes: tuple[str, ...] = ()
    is_sink: bool = False


@dataclass(slots=True)
class Node:
    """An op with a rule, or an identity data-flow edge; operands then results."""

    inst: Instruction | None
    rule: OpShardingRule
    operands: tuple[int, ...]
    results: tuple[int, ...]
    kind: str = "op"            # "op" or "edge"
    label: str = ""
    single_use: bool = True
    # per tensor, per dim: leading axes fixed and hidden from propagation (the manual axes
    # of a manual computation's boundary sharding); None: none anywhere
    prefixes: tuple | None = None
    # A data-flow edge of Shardy's (while, conditional, a shared function's call): its op
    # there (sdy.data_flow_edge, sdy.func_data_flow_edge) takes one value that only it uses,
    # so op-priority propagation counts it single-use, however many uses its sources have.
    data_flow: bool = False

    @property
    def tensors(self) -> tuple[int, ...]:
        return self.operands + self.results


@dataclass
class Graph:
    values: list[Value] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    value_nodes: list[list[int]] = field(default_factory=list)
    # (instance, instruction) -> value ids of its leaves
    inst_values: dict[tuple[int, Instruction], tuple[int, ...]] = field(default_factory=dict)
    instances: list[Computation] = field(default_factory=list)
    use_counts: list[int] = field(default_factory=list)
    # (instance, manual boundary) -> the values of its in/out shardings (Shardy's edges)
    boundary_values: dict[tuple[int, Instruction], tuple[int, ...]] = field(
        default_factory=dict)
    # function name -> its one instance, when functions are shared by their calls
    shared_functions: dict[str, int] | None = None

    def new_value(self, inst, leaf, shape, instance, manual_axes=()) -> int:
        self.values.append(Value(inst, leaf, shape, instance, manual_axes))
        self.value_nodes.append([])
        self.use_counts.append(0)
        return len(self.values) - 1

    def add_node(self, node: Node) -> None:
        index = len(self.nodes)
        self.nodes.append(node)
        for v in set(node.tensors):
            self.value_nodes[v].append(index)
        for v in node.operands:
            self.use_counts[v] += 1


def identity_rule(shape: ArrayShape, count_in: int, count_out: int) -> OpShardingRule:
    b = RuleBuilder([shape.dims] * count_in, [shape.dims] * count_out)
    b.pointwise(shape.dims)
    return b.build()


def _leaf_offsets(shape: TupleShape) -> list[int]:
    offsets, total = [], 0
    for element in shape.elements:
        offsets.append(total)
        total += len(element.leaves())
    return offsets


def build_graph(entry: Computation, manual_axes_of=None, boundary_of=None,
                shared_functions: bool = False, roots=()) -> Graph:
    """The graph of `entry` and every computation it reaches through control flow.

    `manual_axes_of(inst)` gives the manual axes a call's body runs under (shard_map).
    `boundary_of(inst)` gives, for a manual computation's boundary (entry or exit), whether
    it enters and the per-dim manual axes of each of its global tensors' shardings, or None:
    each global tensor then links to a value holding its boundary sharding (an identity
    edge), and that value to the local tensor inside through the free axes only.

    A called function is instantiated once per call (its values are the caller's), unless
    `shared_functions` (Shardy's dedup-functions-fully): then once for all its calls, each
    call's operands and results linked to its parameters and results by identity edges
    (Shardy's func data-flow edges), so that every call site agrees on one sharding.
    `roots` are functions nothing calls, each instantiated too (one graph for the module,
    as Shardy propagates it: sharding groups may link them).
    """
    graph = Graph()
    graph.shared_functions = {} if shared_functions else None
    _instantiate(graph, entry, None, (), (manual_axes_of, boundary_of))
    for root in roots:
        _instantiate(graph, root, None, (), (manual_axes_of, boundary_of))
    for node in graph.nodes:
        node.single_use = node.data_flow or all(graph.use_counts[v] <= 1
                                                for v in node.operands)
    return graph


def _instantiate(graph: Graph, computation: Computation, params, manual, hooks) -> int:
    manual_axes_of, boundary_of = hooks
    instance = len(graph.instances)
    graph.instances.append(computation)
    values = graph.inst_values
    uses = computation.users()
    for inst in computation.instructions:
        name = inst.op.name
        if name == "parameter":
            if params is not None:
                values[instance, inst] = params[inst.attrs.parameter_number]
            else:
                values[instance, inst] = tuple(
                    graph.new_value(inst, k, leaf, instance, manual)
                    for k, leaf in enumerate(inst.shape.leaves()))
            continue
        operand_values = [values[instance, o] for o in inst.operands]
        if name in ALIAS:
            if name == "get-tuple-element":
                tuple_shape = inst.operands[0].shape
                assert isinstance(tuple_shape, TupleShape)  # verified: gte reads a tuple
                start = _leaf_offsets(tuple_shape)[inst.attrs.index]
                count = len(inst.shape.leaves())
                values[instance, inst] = operand_values[0][start:start + count]
            else:
                values[instance, inst] = tuple(v for vs in operand_values for v in vs)
            continue
        if name in CONTROL:
            values[instance, inst] = _control(graph, inst, operand_values, instance, manual,
                                              hooks)
            continue
        results = tuple(graph.new_value(inst, k, leaf, instance, manual)
                        for k, leaf in enumerate(inst.shape.leaves()))
        values[instance, inst] = results
        for _k, v in enumerate(results):
            graph.values[v].is_sink = _is_sink(inst, graph, operand_values)
        flat = tuple(v for vs in operand_values for v in vs)
        boundary = boundary_of(inst) if boundary_of is not None else None
        if boundary is not None:
            _boundary(graph, inst, instance, manual, boundary, flat, results)
            continue
        rule = sharding_rule(inst, uses.get(inst, ()))
        if rule is None:
            continue
        if len(flat) != len(rule.operands):
            continue
        graph.add_node(Node(inst, rule, flat, results, "op", inst.name))
    _link_lowered(graph, computation, instance)
    return instance


def _link_lowered(graph: Graph, computation: Computation, instance: int) -> None:
    """A variadic StableHLO op the importer wrote as one chain of HLO ops per operand
    (`xla_spmd.ir.lowered`): a node of the one op's rule over the chains' sources and
    results too, so its operands share their factors as in Shardy."""
    values = graph.inst_values
    for group in lowered_groups(computation).values():
        if len(group.results) < 2:
            continue
        rule = sharding_rule(group.virtual)
        operands = tuple(values[instance, o][0] for o in group.virtual.operands)
        results = tuple(values[instance, r][0] for r in group.results)
        if rule is not None and len(operands) == len(rule.operands) and \
                len(results) == len(rule.results):
            graph.add_node(Node(group.virtual, rule, operands, results, "op",
                                group.results[0].name))


def _boundary(graph, inst, instance, manual, boundary, operands, results) -> None:
    entering, prefixes = boundary
    outer, inner = (operands, results) if entering else (results, operands)
    if len(outer) != len(inner) or len(prefixes) != len(outer):
        return
    edges = []
    for k, (g, local) in enumerate(zip(outer, inner)):
        shape = graph.values[g].shape
        edge = graph.new_value(inst, k, shape, instance, manual)
        edges.append(edge)
        ends = ((g,), (edge,)) if entering else ((edge,), (g,))
        graph.add_node(Node(None, identity_rule(shape, 1, 1), *ends, "edge",
                            f"{inst.name} (manual boundary {k})"))
        local_shape = graph.values[local].shape
        none = tuple(() for _ in local_shape.dims)
        ends = ((edge,), (local,)) if entering else ((local,), (edge,))
        fixed = (tuple(prefixes[k]), none) if entering else (none, tuple(prefixes[k]))
        graph.add_node(Node(None, identity_rule(local_shape, 1, 1), *ends, "edge",
                            f"{inst.name} (manual boundary {k}, free axes)", prefixes=fixed))
    graph.boundary_values[instance, inst] = tuple(edges)


def _shared_call(graph, inst, callee, operand_values, instance, manual, inner_manual, hooks):
    """A call of a function instantiated once for all its calls: identity edges from each
    operand to the function's parameter, and from its results to the call's."""
    values = graph.inst_values
    child = graph.shared_functions.get(callee.name)
    if child is None:
        child = graph.shared_functions[callee.name] = _instantiate(graph, callee, None,
                                                                  inner_manual, hooks)
    for param in callee.parameters:
        for k, (outer, formal) in enumerate(zip(operand_values[param.attrs.parameter_number],
                                                values[child, param])):
            shape = graph.values[formal].shape
            graph.add_node(Node(None, identity_rule(shape, 1, 1), (outer,), (formal,), "edge",
                                f"{inst.name} (call argument {k})", data_flow=True))
    results = tuple(graph.new_value(inst, k, leaf, instance, manual)
                    for k, leaf in enumerate(inst.shape.leaves()))
    for k, (inner, outer) in enumerate(zip(values[child, callee.root], results)):
        shape = graph.values[outer].shape
        graph.add_node(Node(None, identity_rule(shape, 1, 1), (inner,), (outer,), "edge",
                            f"{inst.name} (call result {k})", data_flow=True))
    return results


def _is_sink(inst, graph, operand_values) -> bool:
    """Constants and what is computed from them alone follow their users, never lead
    (Shardy splits them per use so uses do not force one sharding on each other)."""
    name = inst.op.name
    if name in SINK_OPS:
        return True
    if name == "broadcast" and inst.operands[0].shape.rank == 0:
        return True
    return name in FOLLOW_OPS and all(graph.values[v].is_sink for vs in operand_values
                                      for v in vs)


def _control(graph, inst, operand_values, instance, manual, hooks):
    manual_axes_of = hooks[0]
    name = inst.op.name
    values = graph.inst_values
    flat = [v for vs in operand_values for v in vs]
    if name in ("call", "fusion"):
        callee = inst.attrs.to_apply if name == "call" else inst.attrs.calls
        inner_manual = manual
        if manual_axes_of is not None:
            inner_manual = tuple(manual) + tuple(manual_axes_of(inst))
        if graph.shared_functions is not None and name == "call" and is_function_call(inst):
            return _shared_call(graph, inst, callee, operand_values, instance, manual,
                                inner_manual, hooks)
        child = _instantiate(graph, callee, list(operand_values), inner_manual, hooks)
        return values[child, callee.root]
    if name == "while":
        results = tuple(graph.new_value(inst, k, leaf, instance, manual)
                        for k, leaf in enumerate(inst.shape.leaves()))
        # body parameter, condition parameter and result alias (the edge targets)
        cond = _instantiate(graph, inst.attrs.condition, [results], manual, hooks)
        body = _instantiate(graph, inst.attrs.body, [results], manual, hooks)
        del cond
        root = values[body, inst.attrs.body.root]
        for k, v in enumerate(results):
            shape = graph.values[v].shape
            graph.add_node(Node(None, identity_rule(shape, 2, 1), (flat[k], root[k]), (v,),
                                "edge", f"{inst.name} (while, state {k})", data_flow=True))
        return results
    # conditional
    branches = inst.attrs.branch_computations or (inst.attrs.true_computation,
                                                  inst.attrs.false_computation)
    roots = []
    for b, branch in enumerate(branches):
        child = _instantiate(graph, branch, [operand_values[b + 1]], manual, hooks)
        roots.append(values[child, branch.root])
    results = tuple(graph.new_value(inst, k, leaf, instance, manual)
                    for k, leaf in enumerate(inst.shape.leaves()))
    for k, v in enumerate(results):
        shape = graph.values[v].shape
        graph.add_node(Node(None, identity_rule(shape, len(roots), 1),
                            tuple(r[k] for r in roots), (v,), "edge",
                            f"{inst.name} (conditional, result {k})", data_flow=True))
    return results
