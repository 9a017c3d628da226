"""The lockstep SPMD evaluator and every collective on 8 devices, vs numpy."""

import json
from pathlib import Path

import numpy as np
import pytest

from xla_spmd.backends.reference import evaluate, evaluate_spmd, leaves
from xla_spmd.errors import EvaluationError
from xla_spmd.ir import (
    F32,
    PRED,
    ArrayShape,
    Builder,
    ComparisonDirection,
    Module,
    ReplicaGroups,
    TupleShape,
)
from xla_spmd.ir.hlo_parser import parse_hlo

N = 8
SHAPE = ArrayShape(F32, (4, 8))
RNG = np.random.default_rng(3)
INPUTS = [RNG.normal(size=SHAPE.dims).astype(np.float32) for _ in range(N)]


def binary(opname):
    b = Builder(opname)
    x, y = b.parameter(ArrayShape(F32, ()), "x"), b.parameter(ArrayShape(F32, ()), "y")
    return b.build(b.op(opname, x, y))


def run(build, num_replicas=1, inputs=INPUTS):
    b = Builder("entry")
    x = b.parameter(SHAPE, "x")
    module = Module.from_entry("m", b.build(build(b, x)))
    return evaluate_spmd(module, [[v] for v in inputs], N, num_replicas)


def groups_of(*groups):
    return ReplicaGroups.listed(groups)


FLAT = dict(channel_id=1, use_global_device_ids=True)


def check_groups(results, groups, reference):
    for group in groups:
        for rank, device in enumerate(group):
            np.testing.assert_allclose(results[device], reference(group, rank), rtol=1e-5,
                                       err_msg=f"device {device}")


@pytest.mark.parametrize("replica_groups,groups", [
    (groups_of([0, 1, 2, 3], [4, 5, 6, 7]), [[0, 1, 2, 3], [4, 5, 6, 7]]),
    (ReplicaGroups.iota((2, 4), (4, 2), (1, 0)), [[0, 2, 4, 6], [1, 3, 5, 7]]),
    (groups_of([5, 2], [0, 7], [1, 3], [4, 6]), [[5, 2], [0, 7], [1, 3], [4, 6]]),
])
def test_all_reduce_flattened_ids(replica_groups, groups):
    results = run(lambda b, x: b.all_reduce(x, replica_groups=replica_groups,
                                            to_apply=binary("add"), **FLAT))
    check_groups(results, groups, lambda g, r: sum(INPUTS[d] for d in g))
    results = run(lambda b, x: b.all_reduce(x, replica_groups=replica_groups,
                                            to_apply=binary("maximum"), **FLAT))
    check_groups(results, groups, lambda g, r: np.max([INPUTS[d] for d in g], axis=0))


def test_all_reduce_cross_replica_and_partition_modes():
    # 2 replicas x 4 partitions; device d = (d // 4, d % 4).
    results = run(lambda b, x: b.all_reduce(x, replica_groups=groups_of([0, 1]),
                                            to_apply=binary("add")), num_replicas=2)
    check_groups(results, [[p, 4 + p] for p in range(4)], lambda g, r: sum(INPUTS[d] for d in g))
    results = run(lambda b, x: b.all_reduce(x, replica_groups=groups_of([0], [1]), channel_id=1,
                                            to_apply=binary("add")), num_replicas=2)
    check_groups(results, [[0, 1, 2, 3], [4, 5, 6, 7]], lambda g, r: sum(INPUTS[d] for d in g))
    # Empty groups without a channel: all replicas of one partition (1 replica -> itself).
    results = run(lambda b, x: b.all_reduce(x, to_apply=binary("add")))
    check_groups(results, [[d] for d in range(N)], lambda g, r: INPUTS[g[0]])


def test_variadic_all_reduce_with_general_reducer():
    b = Builder("sub")  # not commutative: shows the left fold in group order
    x, y = b.parameter(ArrayShape(F32, ()), "x"), b.parameter(ArrayShape(F32, ()), "y")
    subtract = b.build(b.subtract(x, y))
    results = run(lambda b, x: b.get_tuple_element(b.all_reduce(
        x, b.negate(x), replica_groups=groups_of([3, 1, 0, 2], [4, 5, 6, 7]),
        to_apply=subtract, **FLAT), index=1))
    check_groups(results, [[3, 1, 0, 2], [4, 5, 6, 7]],
                 lambda g, r: -INPUTS[g[0]] + sum(INPUTS[d] for d in g[1:]))


def test_all_gather_order_and_replica_major_mode():
    groups = [[3, 2, 1, 0], [7, 6, 5, 4]]
    results = run(lambda b, x: b.all_gather(x, replica_groups=groups_of(*groups),
                                            dimensions=(1,), **FLAT))
    check_groups(results, groups, lambda g, r: np.concatenate([INPUTS[d] for d in g], axis=1))
    # cross_replica_and_partition: replica-major member order (XLA), one group of all 8.
    results = run(lambda b, x: b.all_gather(x, replica_groups=groups_of([1, 0]), channel_id=1,
                                            dimensions=(0,)), num_replicas=2)
    order = [4, 5, 6, 7, 0, 1, 2, 3]
    check_groups(results, [order], lambda g, r: np.concatenate([INPUTS[d] for d in g]))


def test_reduce_scatter():
    groups = [[0, 2, 4, 6], [1, 3, 5, 7]]
    results = run(lambda b, x: b.reduce_scatter(x, replica_groups=groups_of(*groups),
                                                dimensions=(1,), to_apply=binary("add"),
                                                **FLAT))
    check_groups(results, groups,
                 lambda g, r: np.split(sum(INPUTS[d] for d in g), len(g), axis=1)[r])


def test_all_to_all_array_and_tuple_forms():
    groups = [[0, 1, 2, 3], [7, 6, 5, 4]]
    results = run(lambda b, x: b.all_to_all(x, replica_groups=groups_of(*groups),
                                            dimensions=(1,), channel_id=1))
    check_groups(results, groups, lambda g, r: np.concatenate(
        [np.split(INPUTS[d], len(g), axis=1)[r] for d in g], axis=1))
    pairs = [[0, 4], [1, 5], [2, 6], [3, 7]]
    shape = TupleShape((SHAPE, SHAPE))
    results = run(lambda b, x: b.get_tuple_element(b.all_to_all(
        x, b.negate(x), replica_groups=groups_of(*pairs), channel_id=1, shape=shape), index=1))
    # result j comes from rank j's operand number (my rank)
    check_groups(results, pairs,
                 lambda g, r: INPUTS[g[1]] if r == 0 else -INPUTS[g[1]])
    # cross_replica: no channel, ids are replica ids (8 replicas x 1 partition)
    results = run(lambda b, x: b.all_to_all(x, replica_groups=groups_of(*pairs),
                                            dimensions=(0,)), num_replicas=8)
    check_groups(results, pairs, lambda g, r: np.concatenate(
        [np.split(INPUTS[d], 2, axis=0)[r] for d in g]))


def test_collective_permute_and_broadcast():
    pairs = ((0, 1), (1, 2), (2, 0), (5, 7))
    results = run(lambda b, x: b.collective_permute(x, source_target_pairs=pairs, channel_id=1))
    sources = {t: s for s, t in pairs}
    for d in range(N):
        want = INPUTS[sources[d]] if d in sources else np.zeros(SHAPE.dims, np.float32)
        np.testing.assert_array_equal(results[d], want)
    # no channel, 2 replicas x 4 partitions: ids are replica ids within each partition
    results = run(lambda b, x: b.collective_permute(x, source_target_pairs=((0, 1),)),
                  num_replicas=2)
    for d in range(N):
        want = INPUTS[d - 4] if d >= 4 else np.zeros(SHAPE.dims, np.float32)
        np.testing.assert_array_equal(results[d], want)
    results = run(lambda b, x: b.collective_broadcast(
        x, replica_groups=groups_of([2, 1, 0, 3]), channel_id=1))
    for d in range(N):
        want = INPUTS[2] if d < 4 else np.zeros(SHAPE.dims, np.float32)
        np.testing.assert_array_equal(results[d], want)


def test_async_collectives():
    groups = groups_of(list(range(N)))
    gathered = ArrayShape(F32, (4, 8 * N))
    results = run(lambda b, x: b.all_gather_done(b.all_gather_start(
        x, replica_groups=groups, dimensions=(1,), shape=TupleShape((SHAPE, gathered)), **FLAT),
        shape=gathered))
    check_groups(results, [list(range(N))],
                 lambda g, r: np.concatenate([INPUTS[d] for d in g], axis=1))
    results = run(lambda b, x: b.all_reduce_done(b.all_reduce_start(
        x, replica_groups=groups, to_apply=binary("add"), shape=SHAPE, **FLAT), shape=SHAPE))
    check_groups(results, [list(range(N))], lambda g, r: sum(INPUTS))


def test_one_device_collectives_and_missing_peers():
    b = Builder("entry")
    x = b.parameter(SHAPE, "x")
    single = Module.from_entry("m", b.build(b.all_reduce(
        x, replica_groups=groups_of([0]), to_apply=binary("add"), **FLAT)))
    np.testing.assert_array_equal(evaluate(single, [INPUTS[0]]), INPUTS[0])
    b = Builder("entry")
    x = b.parameter(SHAPE, "x")
    pair = Module.from_entry("m", b.build(b.all_reduce(
        x, replica_groups=groups_of([0, 1]), to_apply=binary("add"), **FLAT)))
    with pytest.raises(EvaluationError, match="evaluate_spmd"):
        evaluate(pair, [INPUTS[0]])


def test_device_ids_beyond_the_devices_are_an_evaluation_error():
    module = parse_hlo("""HloModule m, num_partitions=4
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), channel_id=1, replica_groups=[2,2]<=[2,2]T(1,0),
    use_global_device_ids=true, to_apply=add
}""")
    args = [[np.ones(2, np.float32)]] * 3
    with pytest.raises(EvaluationError, match=r"ar \(all-reduce\) in e: replica_groups name id "
                       r"3, but the run has 1 replica\(s\) x 3 partition\(s\) = 3 device"):
        evaluate_spmd(module, args, 3)
    # By default the module runs on num_partitions x replica_count devices.
    results = evaluate_spmd(module, [[np.full(2, d, np.float32)] for d in range(4)])
    assert [r.tolist() for r in results] == [[2, 2], [4, 4], [2, 2], [4, 4]]


def test_permute_ids_beyond_the_partitions_are_an_evaluation_error():
    module = parse_hlo("""HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  ROOT cp = f32[2] collective-permute(p), channel_id=1, source_target_pairs={{0,1},{1,5}}
}""")
    with pytest.raises(EvaluationError, match="source_target_pairs name id 5.*partition ids "
                                              "are 0..1"):
        evaluate_spmd(module, [[np.ones(2, np.float32)]] * 2, 2)


def test_evaluation_errors_are_public_evaluation_errors():
    module = parse_hlo("""HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  ROOT c = f32[2] custom-call(p), custom_call_target="boom"
}""")
    with pytest.raises(EvaluationError) as info:
        evaluate(module, [np.ones(2, np.float32)])
    assert type(info.value) is EvaluationError and info.value.located
    assert "evaluating c (custom-call) in e failed" in str(info.value)
    with pytest.raises(EvaluationError) as info:
        evaluate_spmd(module, [[np.ones(2, np.float32)]] * 2, 2)
    assert "failed: EvaluationError: evaluating c" in str(info.value)
    assert "_Located" not in str(info.value)


def on_device(b, x, device, then_computation, else_computation):
    is_device = b.compare(b.partition_id(), b.constant(np.uint32(device)),
                          direction=ComparisonDirection.EQ)
    assert is_device.shape.dtype is PRED
    return b.conditional(is_device, x, x, true_computation=then_computation,
                         false_computation=else_computation)


def branch(name, build):
    b = Builder(name)
    x = b.parameter(SHAPE, "x")
    return b.build(build(b, x))


def test_failing_device_does_not_hang():
    boom = branch("boom", lambda b, x: b.custom_call(x, custom_call_target="boom", shape=SHAPE))
    identity = branch("identity", lambda b, x: b.negate(x))
    with pytest.raises(EvaluationError, match=r"device 3 .*boom"):
        run(lambda b, x: b.all_reduce(on_device(b, x, 3, boom, identity),
                                      replica_groups=groups_of(list(range(N))),
                                      to_apply=binary("add"), **FLAT))


def test_divergent_collectives_fail_instead_of_hanging():
    reduce = branch("reduce", lambda b, x: b.all_reduce(
        x, replica_groups=groups_of(list(range(N))), to_apply=binary("add"), **FLAT))
    identity = branch("identity", lambda b, x: b.negate(x))
    with pytest.raises(EvaluationError, match="diverged"):
        run(lambda b, x: on_device(b, x, 0, reduce, identity))


# ---------------------------------------------------------------------------------------------
# XLA's own SPMD-partitioned programs (tests/data/jax/sharded_*/*.optimized.hlo): evaluated on
# 8 devices in lockstep, each device's outputs equal its tile of the global outputs XLA computed.

DATA = Path(__file__).resolve().parents[1] / "data" / "jax"
PARTITIONED = ["sharded_mlp_dp8", "sharded_mlp_fsdp8", "sharded_mlp_megatron_2x4",
               "sharded_transformer_2x4", "sharded_wsc", "sharded_shard_map_gspmd"]


def tile_of(array: np.ndarray, sharding, device: int) -> np.ndarray:
    if sharding is None or not sharding.is_tiled:
        return array
    assignment = sharding.tile_assignment.array()
    position = [int(i[0]) for i in np.nonzero(assignment == device)]
    index = tuple(slice(p * (n // assignment.shape[d]), (p + 1) * (n // assignment.shape[d]))
                  for d, (p, n) in enumerate(zip(position, array.shape)))
    return array[index]


@pytest.mark.parametrize("name", PARTITIONED)
def test_xla_partitioned_program_matches_global_outputs(name):
    case = {c["name"]: c for c in json.loads((DATA / "MANIFEST.json").read_text())["cases"]}[name]
    module = parse_hlo((DATA / name / f"{name}.optimized.hlo").read_text())
    global_root = parse_hlo((DATA / name / f"{name}.hlo").read_text()).entry.root
    with np.load(DATA / name / f"{name}.npz") as data:
        inputs = [data[i["name"]] for i in case["inputs"]]
        outputs = [data[o["name"]] for o in case["outputs"]]
    params = module.entry.parameters
    per_device = [[tile_of(inputs[p.attrs.parameter_number], p.sharding, d) for p in params]
                  for d in range(N)]
    results = evaluate_spmd(module, per_device, N)
    out_shardings = (global_root.sharding.elements if global_root.sharding is not None
                     else [o.sharding for o in global_root.operands])
    for device, result in enumerate(results):
        for i, (got, want) in enumerate(zip(leaves(result), outputs)):
            np.testing.assert_allclose(got, tile_of(want, out_shardings[i], device), rtol=2e-4,
                                       atol=2e-5, err_msg=f"{name} device {device} out{i}")


LONG_LOOP = """HloModule m, num_partitions=2

cond {
  s = s32[] parameter(0)
  limit = s32[] constant(2000000000)
  ROOT lt = pred[] compare(s, limit), direction=LT
}

body {
  s = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT next = s32[] add(s, one)
}

ENTRY e {
  zero = s32[] constant(0)
  ROOT loop = s32[] while(zero), condition=cond, body=body
}
"""


def test_an_exception_in_the_caller_stops_the_devices():
    """A caller's timeout (a signal raising in the main thread) stops the device threads
    at their next loop iteration instead of leaving them running."""
    import signal
    import threading

    class Stop(BaseException):
        pass

    def alarm(signum, frame):
        raise Stop

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(Stop):
            evaluate_spmd(parse_hlo(LONG_LOOP), [[], []], max_loop_iterations=2_000_000_000)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert not [t for t in threading.enumerate()
                if t.name.startswith("device-") and t.is_alive()]
