"""Solving the auto-sharding problem: an integer program (HiGHS), or a greedy search.

The integer program, as in Alpa's intra-operator pass: a binary ``x[n, s]`` per node and
strategy with ``sum_s x[n, s] = 1``; per edge (u, v) a continuous ``y[e, a, b] >= 0`` whose
marginals are the two nodes' choices (``sum_b y[e, a, b] = sum_{s in a} x[u, s]`` and
``sum_a y[e, a, b] = sum_{t in b} x[v, t]``), so ``y`` is 1 exactly on the chosen pair. Here
a and b are classes of strategies that cost the same on that edge (equal rows or columns of
its cost matrix: a dot's 35 strategies ask an operand for a handful of shardings); the objective is
``sum unary * x + sum edge_cost * y``; and the parameters' bytes per device stay under the
memory limit: ``sum memory * x <= limit``.

The greedy search, for problems with more pair variables than `max_pairs`: each node in
program order takes the strategy cheapest with the nodes chosen before it, then rounds of
coordinate descent move one node at a time to its best strategy given all the others until
no move helps; over the memory limit, the parameter whose bytes fall most per second added
is sharded further, until it fits.
"""

from __future__ import annotations

import time

import numpy as np

from xla_spmd.autoshard.graph import Problem
from xla_spmd.errors import XlaSpmdError

MAX_PAIRS = 120_000       # above: the integer program takes over ~5 s here; greedy runs
MIP_GAP = 0.01          # stop within 1% of the optimum (the model is rougher than that)


def solve(problem: Problem, *, memory_limit: float | None = None, method: str = "auto",
          time_limit: float = 10.0) -> tuple[list[int], str]:
    """(the chosen strategy per node, which method ran)."""
    pairs = sum(_classes(c)[0].size for c in problem.edges.values())
    if method == "auto":
        try:
            import highspy  # noqa: F401
        except ImportError:
            method = "greedy"
        else:
            method = "ilp" if pairs <= MAX_PAIRS else "greedy"
        if method == "ilp":  # a time limit may stop HiGHS early: keep the better answer
            exact, how = solve(problem, memory_limit=memory_limit, method="ilp",
                               time_limit=time_limit)
            quick, _ = solve(problem, memory_limit=memory_limit, method="greedy")
            if problem.objective(quick) < problem.objective(exact) - 1e-12:
                return quick, how + "; the greedy answer was better (time limit hit)"
            return exact, how
    if method == "ilp":
        choice = _ilp(problem, memory_limit, time_limit)
        # The solver stops within MIP_GAP of the optimum (or at its time limit); descent
        # settles the ties (an argument that costs no more sharded is sharded) and any
        # slack left.
        descend(problem, _neighbours(problem), choice, memory_limit=memory_limit)
        return choice, (
            f"integer program (HiGHS): {len(problem.nodes)} nodes, {pairs} pair variables")
    if method == "greedy":
        return _greedy(problem, memory_limit), (
            f"greedy + coordinate descent: {len(problem.nodes)} nodes, {pairs} pairs "
            f"(over {MAX_PAIRS} for the integer program)" if pairs > MAX_PAIRS else
            f"greedy + coordinate descent: {len(problem.nodes)} nodes")
    raise XlaSpmdError(f"unknown auto-sharding method {method!r}; expected auto, ilp or greedy")


def _ilp(problem: Problem, memory_limit, time_limit) -> list[int]:
    import highspy

    nodes = problem.nodes
    offsets, count = [], 0
    for node in nodes:
        offsets.append(count)
        count += len(node.strategies)
    costs = [node.unary for node in nodes]
    rows: list[tuple[list[int], list[float], float, float]] = []
    for n, node in enumerate(nodes):
        k = len(node.strategies)
        rows.append((list(range(offsets[n], offsets[n] + k)), [1.0] * k, 1.0, 1.0))
    for (u, v), matrix in problem.edges.items():
        # Strategies whose rows (columns) of the matrix are equal cost the same on this
        # edge: pair variables are needed only between these classes.
        reduced, row_class, column_class = _classes(matrix)
        su, sv = reduced.shape
        base = count
        count += su * sv
        costs.append(reduced.ravel())
        for a in range(su):
            members = [offsets[u] + s for s in np.flatnonzero(row_class == a)]
            rows.append((members + [base + a * sv + b for b in range(sv)],
                         [-1.0] * len(members) + [1.0] * sv, 0.0, 0.0))
        for b in range(sv):
            members = [offsets[v] + t for t in np.flatnonzero(column_class == b)]
            rows.append((members + [base + a * sv + b for a in range(su)],
                         [-1.0] * len(members) + [1.0] * su, 0.0, 0.0))
    if memory_limit is not None:
        columns = [offsets[n] + s for n, node in enumerate(nodes)
                   for s in range(len(node.strategies)) if node.memory[s]]
        values = [float(nodes[n].memory[s]) for n, node in enumerate(nodes)
                  for s in range(len(node.strategies)) if node.memory[s]]
        rows.append((columns, values, -highspy.kHighsInf, float(memory_limit)))
    highs = _quiet_highs(highspy)
    highs.setOptionValue("time_limit", float(time_limit))
    highs.setOptionValue("mip_rel_gap", MIP_GAP)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = count, len(rows)
    lp.col_cost_ = np.concatenate(costs).astype(float)
    lp.col_lower_ = np.zeros(count)
    lp.col_upper_ = np.ones(count)
    lp.row_lower_ = np.array([r[2] for r in rows], dtype=float)
    lp.row_upper_ = np.array([r[3] for r in rows], dtype=float)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    starts = np.cumsum([0] + [len(r[0]) for r in rows])
    lp.a_matrix_.start_ = starts.astype(np.int32)
    lp.a_matrix_.index_ = np.array([i for r in rows for i in r[0]], dtype=np.int32)
    lp.a_matrix_.value_ = np.array([x for r in rows for x in r[1]], dtype=float)
    binaries = offsets[-1] + len(nodes[-1].strategies) if nodes else 0
    lp.integrality_ = ([highspy.HighsVarType.kInteger] * binaries +
                       [highspy.HighsVarType.kContinuous] * (count - binaries))
    highs.passModel(lp)
    highs.run()
    status = highs.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal and highs.getInfo().primal_solution_status \
            != 2:
        raise XlaSpmdError(f"auto-sharding: the integer program found no solution "
                           f"({highs.modelStatusToString(status)}); is the memory limit "
                           f"{memory_limit} bytes below what the parameters need fully sharded?")
    values = np.asarray(highs.getSolution().col_value)
    return [int(np.argmax(values[offsets[n]: offsets[n] + len(node.strategies)]))
            for n, node in enumerate(nodes)]


def _classes(matrix: np.ndarray):
    """(the matrix over classes, each row's class, each column's class)."""
    rows_of, row_class = np.unique(matrix, axis=0, return_inverse=True)
    reduced, column_class = np.unique(rows_of, axis=1, return_inverse=True)
    return reduced, row_class.ravel(), column_class.ravel()


def _quiet_highs(highspy):
    """A solver that prints nothing: HiGHS writes its banner to the C stdout when built,
    before any option can be set."""
    import os
    import sys

    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            highs = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    highs.setOptionValue("output_flag", False)
    return highs


def _neighbours(problem: Problem):
    around: dict[int, list] = {n: [] for n in range(len(problem.nodes))}
    for (u, v), matrix in problem.edges.items():
        around[u].append((v, matrix))
        around[v].append((u, matrix.T))
    return around


def _local(problem, around, choice, n) -> np.ndarray:
    """Cost of each strategy of node n with every other node as chosen."""
    total = problem.nodes[n].unary.copy()
    for other, matrix in around[n]:
        if choice[other] >= 0:
            total += matrix[:, choice[other]]
    return total


def _greedy(problem: Problem, memory_limit, rounds: int = 10, budget: float = 30.0
            ) -> list[int]:
    """Best of three starts (program order, reverse order, every argument at its least
    memory), each improved by coordinate descent."""
    started = time.perf_counter()
    around = _neighbours(problem)
    count = len(problem.nodes)
    best = None
    for start in ("forward", "backward", "sharded"):
        choice = [-1] * count
        if start == "sharded":
            for n, node in enumerate(problem.nodes):
                if node.inst.opcode == "parameter":
                    choice[n] = int(np.argmin(node.memory))
        order = range(count - 1, -1, -1) if start == "backward" else range(count)
        for n in order:
            if choice[n] < 0:
                choice[n] = int(np.argmin(_local(problem, around, choice, n)))
        descend(problem, around, choice, rounds, started + budget)
        if memory_limit is not None:
            _fit_memory(problem, around, choice, memory_limit)
        value = problem.objective(choice)
        if best is None or value < best[0]:
            best = (value, choice)
    return best[1]


def descend(problem: Problem, around, choice: list[int], rounds: int = 10,
            deadline: float = float("inf"), memory_limit=None) -> None:
    """Coordinate descent: move one node at a time to its cheapest strategy given the
    others, until no move helps (it never raises the objective)."""
    def used():
        return sum(node.memory[choice[n]] for n, node in enumerate(problem.nodes))

    for _ in range(rounds):
        moved = False
        for n in range(len(problem.nodes)):
            local = _local(problem, around, choice, n)
            pick = int(np.argmin(local))
            if local[pick] < local[choice[n]] - 1e-12:
                before = choice[n]
                choice[n] = pick
                if memory_limit is not None and used() > memory_limit:
                    choice[n] = before
                    continue
                moved = True
        if not moved or time.perf_counter() > deadline:
            return


def _fit_memory(problem, around, choice, limit) -> None:
    def used():
        return sum(node.memory[choice[n]] for n, node in enumerate(problem.nodes))

    while used() > limit:
        best = None
        for n, node in enumerate(problem.nodes):
            local = _local(problem, around, choice, n)
            for s in range(len(node.strategies)):
                saved = node.memory[choice[n]] - node.memory[s]
                if saved > 0:
                    rate = (local[s] - local[choice[n]]) / saved
                    if best is None or rate < best[0]:
                        best = (rate, n, s)
        if best is None:
            raise XlaSpmdError(f"auto-sharding: the parameters need {used():.0f} bytes per "
                               f"device even sharded as far as the mesh allows; the memory "
                               f"limit is {limit:.0f}")
        choice[best[1]] = best[2]
