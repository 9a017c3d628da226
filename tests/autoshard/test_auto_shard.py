"""xs.auto_shard: the integer program against brute force, the memory limit, the greedy
fallback, and the plan running to the unsharded result."""

import itertools

import numpy as np
import pytest

import xla_spmd as xs
import xla_spmd.numpy as xnp
from xla_spmd.autoshard.graph import build_problem
from xla_spmd.autoshard.solve import solve
from xla_spmd.cost import Profile
from xla_spmd.errors import XlaSpmdError

PROFILE = Profile(name="test", backend="reference", communicator="local", devices=2,
                  step_overhead_s=1e-3, op_overhead_s=1e-5, gemm_flops=1e9,
                  memory_bandwidth=1e9,
                  collectives={"all-reduce": {2: (1e-4, 1e-9)}, "all-gather": {2: (1e-4, 1e-9)},
                               "all-to-all": {2: (1e-4, 1e-9)}})


def mlp(x, w1, w2):
    return xnp.tanh(x @ w1) @ w2


def _args():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((256, 64)).astype(np.float32),
            rng.standard_normal((64, 128)).astype(np.float32),
            rng.standard_normal((128, 32)).astype(np.float32))


def _problem():
    lowered = xs.jit(mlp).lower(*_args())
    return build_problem(lowered.module.entry, {"data": 2}, PROFILE)


def test_integer_program_finds_the_brute_force_optimum():
    problem = _problem()
    assert [n.inst.opcode for n in problem.nodes] == ["parameter"] * 3 + ["dot"] * 2
    sizes = [len(n.strategies) for n in problem.nodes]
    best = min(problem.objective(list(c)) for c in itertools.product(*map(range, sizes)))
    choice, method = solve(problem, method="ilp")
    assert method.startswith("integer program (HiGHS)")
    assert problem.objective(choice) <= best * 1.01 + 1e-12   # within HiGHS's 1% gap
    greedy, method = solve(problem, method="greedy")
    assert method.startswith("greedy")
    assert problem.objective(greedy) >= best - 1e-12


def test_large_batch_is_split_and_weights_replicated():
    xs.set_num_devices(2)
    mesh = xs.make_mesh({"data": 2})
    plan = xs.auto_shard(lambda x, w: (x @ w).sum(), mesh,
                         np.ones((2048, 128), np.float32), np.ones((128, 128), np.float32),
                         profile=PROFILE)
    # Halving 67 MFLOP saves 33 ms; the price is one all-reduce of a scalar (0.1 ms).
    assert tuple(plan.specs[0]) == ("data",) and tuple(plan.specs[1]) == ()
    assert "integer program" in plan.method and plan.solve_seconds > 0
    assert set(plan.explanations) == {"[0]", "[1]"}
    assert "next best" in plan.explanations["[0]"]


def test_memory_limit_shards_the_weights():
    problem = _problem()
    arguments = problem.nodes[:3]
    smallest = sum(n.memory.min() for n in arguments)       # every argument halved
    limit = smallest + 16384   # 64 KiB of x, w1, w2 at least halved: not all can stay whole
    assert sum(n.memory.max() for n in arguments) > limit
    choice, _ = solve(problem, memory_limit=limit, method="ilp")
    used = sum(n.memory[choice[i]] for i, n in enumerate(problem.nodes))
    assert used <= limit
    greedy, _ = solve(problem, memory_limit=limit, method="greedy")
    assert sum(n.memory[greedy[i]] for i, n in enumerate(problem.nodes)) <= limit
    with pytest.raises(XlaSpmdError, match="memory limit"):
        solve(problem, memory_limit=1.0, method="greedy")
    with pytest.raises(XlaSpmdError, match="no solution"):
        solve(problem, memory_limit=1.0, method="ilp")


def test_plan_runs_to_the_unsharded_result():
    xs.set_num_devices(2)
    mesh = xs.make_mesh({"data": 2})
    args = _args()
    plan = xs.auto_shard(mlp, mesh, *args, profile=PROFILE, method="greedy")
    assert plan.method.startswith("greedy")
    sharded = xs.jit(mlp, in_shardings=plan.in_shardings)(*args)
    expected = np.tanh(args[0] @ args[1]) @ args[2]
    np.testing.assert_allclose(np.asarray(sharded), expected, rtol=1e-4, atol=1e-4)


def test_pytree_arguments_come_back_as_pytrees_of_specs():
    xs.set_num_devices(2)
    mesh = xs.make_mesh({"data": 2})
    params = {"w1": _args()[1], "w2": _args()[2]}
    plan = xs.auto_shard(lambda p, x: mlp(x, p["w1"], p["w2"]).sum(), mesh, params,
                         _args()[0], profile=PROFILE)
    assert set(plan.specs[0]) == {"w1", "w2"}
    assert isinstance(plan.in_shardings[0]["w1"], xs.NamedSharding)
    assert "['w1']" in " ".join(plan.explanations)


def test_answer_is_checked_against_the_usual_layouts(monkeypatch):
    # The solver's answer and the layouts are each partitioned and priced by the cost
    # model; the plan keeps the fastest predicted step and says what each was predicted.
    import xla_spmd.autoshard.api as api
    from xla_spmd import pipeline
    from xla_spmd.cost import estimate

    xs.set_num_devices(2)
    mesh = xs.make_mesh({"data": 2})
    params = {"w1": _args()[1], "w2": _args()[2]}

    def step(p, x):
        return mlp(x, p["w1"], p["w2"]).sum()

    plan = xs.auto_shard(step, mesh, params, _args()[0], profile=PROFILE)
    # (a layout equal to the solver's answer is not priced twice: here the data-parallel
    # one is the integer program's own answer)
    assert set(plan.candidates) == {"integer program", "sharded parameters"}
    assert plan.candidates[plan.chosen] == min(plan.candidates.values())
    assert "checked against" in plan.method and "kept" in str(plan)
    # the kept specs are priced as the plan says
    lowered = xs.jit(step, in_shardings=plan.in_shardings).lower(params, _args()[0])
    spmd = pipeline.lower(lowered.module, mesh=mesh).spmd_module
    assert estimate(spmd, PROFILE).step_time == pytest.approx(plan.candidates[plan.chosen])
    # the data-parallel layout: parameters replicated, the batch split on its leading dim
    layouts = api._layouts((params, _args()[0]), mesh)
    assert [tuple(s) for s in layouts["replicated parameters"]] == [(), (), ("data",)]
    assert [tuple(s) for s in layouts["sharded parameters"]] == [("data",)] * 3
    monkeypatch.setattr(api, "CHECK_MAX_INSTRUCTIONS", 0)
    unchecked = xs.auto_shard(step, mesh, params, _args()[0], profile=PROFILE)
    assert unchecked.candidates == {} and "not checked" in unchecked.method


def test_layouts_that_explicit_axes_refuse_are_rejected_not_raised():
    # With the built-in profile the solver splits x @ w on its contracting dims, which a
    # mesh with Explicit axes (make_mesh's default) leaves ambiguous: tracing it raises
    # ShardingTypeError, as in JAX. auto_shard rejects that layout, says why, and keeps the
    # best one that traces; the plan then runs to the unsharded result.
    xs.set_num_devices(2)
    x = np.random.default_rng(0).standard_normal((2048, 128)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((128, 128)).astype(np.float32)

    def f(x, w):
        return (x @ w).sum()

    explicit = xs.make_mesh({"data": 2})
    plan = xs.auto_shard(f, explicit, x, w)
    assert list(plan.rejected) == ["integer program"]
    assert "Contracting dimensions are sharded" in plan.rejected["integer program"]
    assert plan.chosen in plan.candidates and "integer program" not in plan.candidates
    assert "rejected: integer program" in str(plan)
    result = xs.jit(f, in_shardings=plan.in_shardings)(x, w)
    np.testing.assert_allclose(float(np.asarray(result)), float((x @ w).sum()), rtol=1e-4)
    # On Auto axes the partitioner resolves the same layout: nothing is rejected.
    auto = xs.make_mesh({"data": 2}, axis_types=xs.AxisType.Auto)
    plan = xs.auto_shard(f, auto, x, w)
    assert plan.rejected == {} and "integer program" in plan.candidates
