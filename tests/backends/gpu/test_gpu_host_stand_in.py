"""HOST-ONLY CHECKS of the GPU executable: numpy stands in for CuPy and the reference rules
for the generated kernels (``GpuBackend(host_stand_in=True)``), so the GPU backend's dispatch,
schedule, buffer planning, collectives and fallbacks run here without a GPU. No CUDA code runs
in this file; ``test_gpu_device.py`` holds the checks that need a GPU.

The oracle is the reference backend: partitioned programs on N in-process devices give the
unpartitioned reference result (the central property), and XLA's programs give JAX's values.
"""

import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xla_spmd.backends import get_backend
from xla_spmd.backends.gpu import GpuBackend
from xla_spmd.backends.gpu.runtime import gpu_for_device
from xla_spmd.backends.reference import evaluate, evaluate_spmd, leaves
from xla_spmd.backends.reference.numeric import flush_denormals
from xla_spmd.collectives import LocalWorld
from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir.hlo_parser import parse_hlo
from xla_spmd.mesh import make_mesh

TESTS = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(TESTS / "backends"), str(TESTS / "partition")]

from spmd_oracle import check  # noqa: E402
from test_jax_cases import CASES, ONE_DEVICE, assert_matches_xla, load_case  # noqa: E402
from test_partition_property import MESHES, build_program  # noqa: E402

STAND_IN = GpuBackend(host_stand_in=True)


@pytest.mark.parametrize("mesh_axes", MESHES, ids=lambda m: "x".join(map(str, m.values())))
@settings(max_examples=5, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_host_only_partitioned_programs_equal_the_unpartitioned_reference(mesh_axes, data):
    module = build_program(data, make_mesh(mesh_axes))
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.shape.dims).astype(np.float32)
            for p in module.entry.parameters]
    check(module, args, rtol=1e-5, atol=1e-5, backend=STAND_IN)


@pytest.mark.parametrize("name", ONE_DEVICE)
def test_host_only_xla_programs_give_jax_values(name):
    case, module, args, expected = load_case(name, ".hlo")
    if any(i["dtype"] == "bfloat16" for i in case["inputs"]):
        args = [a.astype(ml_dtypes.bfloat16) if i["dtype"] == "bfloat16" else a
                for a, i in zip(args, case["inputs"])]
    args = [flush_denormals(a) if np.asarray(a).dtype.kind == "f" else a for a in args]
    executable = STAND_IN.compile(module, (0,))
    outputs = executable.run(0, args, None)
    assert len(outputs) == len(expected)
    for i, (got, want, spec) in enumerate(zip(outputs, expected, CASES[name]["outputs"])):
        assert_matches_xla(f"{name} out{i}", got, want, spec["dtype"])
    # Every fusion of the plan has a kernel in the generated source.
    for program in executable.programs.values():
        for step in program.steps:
            if step.kind == "fusion":
                assert f"void {step.fusion.name}(" in executable.cuda_source


def test_host_only_dot_with_batch_dims_and_bf16_and_the_float_sum_kernel():
    module = parse_hlo("""HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %e (a: bf16[3,4,5], b: bf16[3,5,2], c: s32[4,6], d: s32[6,3], f: f32[4,6])
    -> (bf16[3,4,2], s32[4,3], f32[6]) {
  %a = bf16[3,4,5] parameter(0)
  %b = bf16[3,5,2] parameter(1)
  %c = s32[4,6] parameter(2)
  %d = s32[6,3] parameter(3)
  %f = f32[4,6] parameter(4)
  %x = bf16[3,4,2] dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={2},
    rhs_batch_dims={0}, rhs_contracting_dims={1}
  %y = s32[4,3] dot(%c, %d), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %z = f32[] constant(0.5)
  %s = f32[6] reduce(%f, %z), dimensions={0}, to_apply=%add
  ROOT %t = (bf16[3,4,2], s32[4,3], f32[6]) tuple(%x, %y, %s)
}""")
    rng = np.random.default_rng(1)
    args = [rng.standard_normal((3, 4, 5)).astype(ml_dtypes.bfloat16),
            rng.standard_normal((3, 5, 2)).astype(ml_dtypes.bfloat16),
            rng.integers(-2**31, 2**31, (4, 6), dtype=np.int32),
            rng.integers(-2**31, 2**31, (6, 3), dtype=np.int32),
            rng.standard_normal((4, 6)).astype(np.float32)]
    executable = STAND_IN.compile(module, (0,))
    got = executable.run(0, args, None)
    want = leaves(evaluate(module, args))
    assert got[0].dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got[1], want[1])     # integers wrap exactly
    np.testing.assert_allclose(got[0].astype(np.float32), want[0].astype(np.float32),
                               rtol=1e-2)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-6)
    report = executable.report()
    assert report["fallbacks"] == {} and report["steps"]["kernel"] >= 3
    assert report["device"] == "host stand-in (numpy)"
    assert "device: host stand-in (numpy)" in executable.as_text()


def test_host_only_ops_without_a_gpu_kernel_fall_back_and_are_counted():
    module = parse_hlo("""HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %e (x: f32[5], i: s32[2,1], u: f32[2]) -> (f32[2], f32[5]) {
  %x = f32[5] parameter(0)
  %i = s32[2,1] parameter(1)
  %u = f32[2] parameter(2)
  %r = f32[5] reverse(%x), dimensions={0}
  %g = f32[2] gather(%r, %i), offset_dims={}, collapsed_slice_dims={0},
    start_index_map={0}, index_vector_dim=1, slice_sizes={1}
  %s = f32[5] scatter(%x, %i, %u), update_window_dims={}, inserted_window_dims={0},
    scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
  ROOT %t = (f32[2], f32[5]) tuple(%g, %s)
}""")
    executable = STAND_IN.compile(module, (0,))
    args = [np.arange(5, dtype=np.float32), np.array([[4], [1]], np.int32),
            np.array([10, 20], np.float32)]
    for _ in range(2):
        got = executable.run(0, args, None)
        for g, w in zip(got, leaves(evaluate(module, args))):
            np.testing.assert_array_equal(g, w)
    report = executable.report()
    assert report["fallbacks"] == {"scatter": 1}
    assert report["fallback_runs"] == {"scatter": 2}
    assert "[fallback]" in executable.as_text()


@pytest.mark.parametrize("algorithm, out", [("rng_three_fry", "u32[7,3]"),
                                            ("rng_philox", "u64[5]"),
                                            ("rng_default", "bf16[3,3]")])
def test_host_only_rng_bit_generator_is_bit_exact_with_the_reference(algorithm, out):
    module = parse_hlo(f"""HloModule m
ENTRY %e (k: u64[2]) -> (u64[2], {out}) {{
  %k = u64[2] parameter(0)
  ROOT %b = (u64[2], {out}) rng-bit-generator(%k), algorithm={algorithm}
}}""")
    executable = STAND_IN.compile(module, (0,))
    state = np.array([7, 2**64 - 3], np.uint64)     # the counter wraps
    got = executable.run(0, [state], None)
    want = leaves(evaluate(module, [state]))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))
    assert executable.report()["fallbacks"] == {}


OVERLAP = """HloModule m, num_partitions=2
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = f32[] add(%a, %b)
}
ENTRY %e (x: f32[4], y: f32[4]) -> (f32[4], f32[4]) {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %square = f32[4] multiply(%y, %y)
  %r = f32[4] all-reduce(%x), channel_id=1, replica_groups={{0,1}},
    use_global_device_ids=true, to_apply=%sum
  %z = f32[4] add(%r, %square)
  ROOT %t = (f32[4], f32[4]) tuple(%z, %square)
}"""


def test_host_only_collectives_overlap_compute_as_on_the_cpu_backend():
    module = parse_hlo(OVERLAP)
    executable = STAND_IN.compile(module, (0, 1))
    entry = executable.programs[id(module.entry)]
    order = [(step.kind, step.inst.name) for step in entry.steps]
    assert order[:3] == [("start", "r"), ("fusion", "square"), ("wait", "r")]
    assert entry.peak_bytes == 3 * 16
    rng = np.random.default_rng(0)
    args = [[rng.standard_normal(4).astype(np.float32) for _ in range(2)] for _ in range(2)]
    got = LocalWorld(2).run(lambda comm: executable.run(comm.rank, args[comm.rank], comm))
    want = evaluate_spmd(module, args, 2)
    for device in range(2):
        for got_leaf, want_leaf in zip(got[device], leaves(want[device])):
            np.testing.assert_array_equal(got_leaf, want_leaf)


def test_one_gpu_per_rank_under_mpirun_and_one_per_device_in_process(monkeypatch):
    monkeypatch.delenv("OMPI_COMM_WORLD_LOCAL_RANK", raising=False)
    assert [gpu_for_device(d, 4, mpi=False) for d in range(4)] == [0, 1, 2, 3]
    with pytest.raises(XlaSpmdError, match="device 2 has no GPU: 2 GPU"):
        gpu_for_device(2, 2, mpi=False)
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3")
    assert gpu_for_device(7, 2, mpi=True) == 1     # local rank 3 of a node with 2 GPUs


def _have_gpu() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001
        return False


@pytest.mark.skipif(_have_gpu(), reason="a GPU is present: the backend loads")
def test_selecting_the_gpu_backend_without_a_gpu_is_a_clear_error(tmp_path):
    module = parse_hlo(OVERLAP.replace(", num_partitions=2", ""))
    with pytest.raises(XlaSpmdError, match="the GPU backend needs"):
        get_backend("gpu").compile(module, (0,))
    path = tmp_path / "m.hlo"
    path.write_text("""HloModule m
ENTRY %e () -> f32[2] {
  %x = f32[2] constant({1, 2})
  ROOT %y = f32[2] add(%x, %x)
}""")
    done = subprocess.run([sys.executable, "-m", "xla_spmd.cli", "run", str(path),
                           "--backend", "gpu"], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, XLA_SPMD_BACKEND="gpu"))
    assert done.returncode != 0
    assert "the GPU backend needs" in done.stderr and "Traceback" not in done.stderr


SORT = """HloModule m
%lexicographic (a: s32[], b: s32[], c: f32[], d: f32[], e: u8[], f: u8[]) -> pred[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  %c = f32[] parameter(2)
  %d = f32[] parameter(3)
  %e = u8[] parameter(4)
  %f = u8[] parameter(5)
  %lt = pred[] compare(%a, %b), direction=LT
  %eq = pred[] compare(%a, %b), direction=EQ
  %gt = pred[] compare(%c, %d), direction=GT, type=KIND
  %tie = pred[] and(%eq, %gt)
  ROOT %r = pred[] or(%lt, %tie)
}
ENTRY %e (k: s32[3,40], v: f32[3,40], p: u8[3,40]) -> (s32[3,40], f32[3,40], u8[3,40]) {
  %k = s32[3,40] parameter(0)
  %v = f32[3,40] parameter(1)
  %p = u8[3,40] parameter(2)
  ROOT %s = (s32[3,40], f32[3,40], u8[3,40]) sort(%k, %v, %p), dimensions={1},
    is_stable=true, to_apply=%lexicographic
}"""


@pytest.mark.parametrize("kind, nan", [("FLOAT", False), ("TOTALORDER", True),
                                       ("FLOAT", True)])
def test_host_only_sorts_by_stable_argsorts_and_nan_keys_fall_back(kind, nan):
    module = parse_hlo(SORT.replace("KIND", kind))
    rng = np.random.default_rng(3)
    values = rng.integers(-3, 3, (3, 40)).astype(np.float32)   # many ties on both keys
    values[0, 5] = -0.0
    if nan:
        values[1, ::7] = np.nan
    args = [rng.integers(0, 4, (3, 40), dtype=np.int32), values,
            np.tile(np.arange(40, dtype=np.uint8), (3, 1))]    # the payload shows stability
    executable = STAND_IN.compile(module, (0,))
    got = executable.run(0, args, None)
    for g, w in zip(got, leaves(evaluate(module, args))):
        np.testing.assert_array_equal(g, w)
    report = executable.report()
    assert report["fallbacks"] == {} and report["steps"]["kernel"] == 1
    host_decides = kind == "FLOAT" and nan
    assert report["fallback_runs"] == ({"sort": 1} if host_decides else {})


def test_host_only_debug_callbacks_run_from_the_gpu_executable():
    """xs.debug.callback's custom-call runs on the host from the GPU executable: once on
    the global value, and per device on its shard with partitioned=True."""
    import xla_spmd as xs
    from xla_spmd import NamedSharding, P

    seen = []
    x = np.arange(16, dtype=np.float32).reshape(8, 2)
    f = xs.jit(lambda v: (xs.debug.callback(lambda a: seen.append(("once", a)), v * 2),
                          xs.debug.callback(lambda a: seen.append(("part", a)), v,
                                            partitioned=True), v + 1)[2],
               in_shardings=NamedSharding(make_mesh({"d": 4}), P("d")))
    check(f.lower(x).module, [x], backend=STAND_IN)  # the reference run calls them too
    once = [a for kind, a in seen if kind == "once"]
    parts = sorted(tuple(a.ravel()) for kind, a in seen if kind == "part" and a.shape == (2, 2))
    assert len(once) == 2 and all(np.array_equal(a, x * 2) for a in once)
    assert parts == sorted(tuple(b.ravel()) for b in np.split(x, 4))
