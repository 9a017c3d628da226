"""Stacked execution (``backends/cpu/stacked.py``): every in-process device's value held as
one ``(D, *shape)`` array and each step launched once. Each device's results must be bit for
bit those of running it alone, of the per-device lockstep run and of one thread per device;
collectives must give the reference evaluator's values; partitioned programs run stacked must
give the unpartitioned reference result (the oracle property)."""

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xla_spmd.backends.cpu import BACKEND
from xla_spmd.backends.cpu import stacked as stacked_steps
from xla_spmd.backends.reference import evaluate_spmd, leaves
from xla_spmd.collectives import LocalWorld
from xla_spmd.ir.hlo_parser import parse_hlo
from xla_spmd.mesh import make_mesh

TESTS = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(TESTS / "backends"), str(TESTS / "partition")]

from cpu_bits import exact_bits  # noqa: E402
from spmd_oracle import check  # noqa: E402
from test_partition_property import MESHES, build_program  # noqa: E402

SUM = """%sum (a: {t}[], b: {t}[]) -> {t}[] {{
  %a = {t}[] parameter(0)
  %b = {t}[] parameter(1)
  ROOT %c = {t}[] {op}(%a, %b)
}}
"""
PAIRS = "{{0,1},{2,3},{4,5},{6,7}}"
QUADS = "{{0,1,2,3},{4,5,6,7}}"
STRIDED = "{{0,2,4,6},{1,3,5,7}}"
UNORDERED = "{{3,1},{0,2},{7,5},{6,4}}"   # members out of order: the fold follows the group
UNEVEN = "{{0,1,2},{3,4,5,6,7}}"          # no stacked form: the communicators run it


def _run_all_ways(module, per_device):
    """Stacked, per-device lockstep and threaded results of ``module`` (asserted equal, bit
    for bit); returns the stacked run's, per device."""
    n = len(per_device)
    executable = BACKEND.compile(module, tuple(range(n)))
    assert executable.lockstep and executable.stackable
    world = LocalWorld(n)
    arguments = dict(enumerate(per_device))
    runs = []
    for stack in (True, False):
        world.reset()
        runs.append(executable.run_together(
            arguments, {d: world.communicator(d) for d in range(n)}, stack=stack))
    world.reset()
    runs.append(dict(enumerate(world.run(lambda comm: executable.run(
        comm.rank, per_device[comm.rank], comm)))))
    for device in range(n):
        expected = [exact_bits(x) for x in runs[2][device]]
        for run in runs[:2]:
            assert [exact_bits(x) for x in run[device]] == expected, f"device {device}"
    return [runs[0][d] for d in range(n)]


def _module(body: str, params: str, root_type: str, head: str = "") -> str:
    return (f"HloModule m, num_partitions=8\n{head}ENTRY %e ({params}) -> {root_type} {{\n"
            f"{body}\n}}")


COLLECTIVES = {
    "all-reduce-sum-pairs": (SUM.format(t="f32", op="add"), "f32[5]", "f32[5]",
                             f"  %x = f32[5] parameter(0)\n  ROOT %r = f32[5] all-reduce(%x), "
                             f"channel_id=1, replica_groups={PAIRS}, use_global_device_ids=true,"
                             " to_apply=%sum"),
    "all-reduce-max-strided": (SUM.format(t="f32", op="maximum"), "f32[2,3]", "f32[2,3]",
                               "  %x = f32[2,3] parameter(0)\n  ROOT %r = f32[2,3] all-reduce(%x)"
                               f", channel_id=1, replica_groups={STRIDED}, "
                               "use_global_device_ids=true, to_apply=%sum"),
    "all-reduce-unordered": (SUM.format(t="f32", op="add"), "f32[7]", "f32[7]",
                             f"  %x = f32[7] parameter(0)\n  ROOT %r = f32[7] all-reduce(%x), "
                             f"channel_id=1, replica_groups={UNORDERED}, "
                             "use_global_device_ids=true, to_apply=%sum"),
    "all-reduce-s32-all": (SUM.format(t="s32", op="multiply"), "s32[4]", "s32[4]",
                           "  %x = s32[4] parameter(0)\n  ROOT %r = s32[4] all-reduce(%x), "
                           "channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, "
                           "use_global_device_ids=true, to_apply=%sum"),
    "all-reduce-variadic": (SUM.format(t="f32", op="add"), "f32[3]", "(f32[3], f32[3])",
                            "  %x = f32[3] parameter(0)\n  %y = f32[3] negate(%x)\n"
                            "  ROOT %r = (f32[3], f32[3]) all-reduce(%x, %y), channel_id=1, "
                            f"replica_groups={QUADS}, use_global_device_ids=true, "
                            "to_apply=%sum"),
    "all-reduce-uneven": (SUM.format(t="f32", op="add"), "f32[4]", "f32[4]",
                          f"  %x = f32[4] parameter(0)\n  ROOT %r = f32[4] all-reduce(%x), "
                          f"channel_id=1, replica_groups={UNEVEN}, use_global_device_ids=true,"
                          " to_apply=%sum"),
    "all-gather-dim0": ("", "f32[2,3]", "f32[8,3]",
                        "  %x = f32[2,3] parameter(0)\n  ROOT %r = f32[8,3] all-gather(%x), "
                        f"channel_id=1, replica_groups={STRIDED}, dimensions={{0}}, "
                        "use_global_device_ids=true"),
    "all-gather-dim1": ("", "f32[2,3]", "f32[2,6]",
                        "  %x = f32[2,3] parameter(0)\n  ROOT %r = f32[2,6] all-gather(%x), "
                        f"channel_id=1, replica_groups={UNORDERED}, dimensions={{1}}, "
                        "use_global_device_ids=true"),
    "reduce-scatter-dim1": (SUM.format(t="f32", op="add"), "f32[3,8]", "f32[3,2]",
                            "  %x = f32[3,8] parameter(0)\n  ROOT %r = f32[3,2] "
                            f"reduce-scatter(%x), channel_id=1, replica_groups={QUADS}, "
                            "dimensions={1}, use_global_device_ids=true, to_apply=%sum"),
    "reduce-scatter-dim0": (SUM.format(t="f32", op="add"), "f32[4,3]", "f32[2,3]",
                            "  %x = f32[4,3] parameter(0)\n  ROOT %r = f32[2,3] "
                            f"reduce-scatter(%x), channel_id=1, replica_groups={UNORDERED}, "
                            "dimensions={0}, use_global_device_ids=true, to_apply=%sum"),
    "all-to-all-dim0": ("", "f32[4,3]", "f32[4,3]",
                        "  %x = f32[4,3] parameter(0)\n  ROOT %r = f32[4,3] all-to-all(%x), "
                        f"channel_id=1, replica_groups={STRIDED}, dimensions={{0}}"),
    "all-to-all-dim1": ("", "f32[3,4,2]", "f32[3,4,2]",
                        "  %x = f32[3,4,2] parameter(0)\n  ROOT %r = f32[3,4,2] all-to-all(%x),"
                        " channel_id=1, replica_groups={{1,0},{3,2},{5,4},{7,6}}, "
                        "dimensions={1}"),
    "collective-permute": ("", "f32[3]", "f32[3]",
                           "  %x = f32[3] parameter(0)\n  ROOT %r = f32[3] collective-permute("
                           "%x), channel_id=1, source_target_pairs={{0,1},{1,2},{5,0},{7,6}}"),
    "partition-id": ("", "f32[3]", "u32[]",
                     "  %x = f32[3] parameter(0)\n  ROOT %r = u32[] partition-id()"),
}


@pytest.mark.parametrize("name", COLLECTIVES)
def test_stacked_collectives_give_the_reference_values(name):
    head, param, root, body = COLLECTIVES[name]
    module = parse_hlo(_module(body, f"x: {param}", root, head))
    dtype = np.int32 if param.startswith("s32") else np.float32
    dims = tuple(int(d) for d in param[4:-1].split(","))
    rng = np.random.default_rng(len(name))
    per_device = [[(rng.standard_normal(dims) * 4).astype(dtype)] for _ in range(8)]
    stacked = _run_all_ways(module, per_device)
    executable = BACKEND.compile(module, tuple(range(8)))
    contexts = [executable._context(d, None) for d in range(8)]
    starts = [s for s in executable.programs[id(module.entry)].steps if s.kind == "start"]
    forms = [stacked_steps.collective_launch(s, contexts) is not None for s in starts]
    assert forms == ([] if name == "partition-id" else [name != "all-reduce-uneven"])
    reference = evaluate_spmd(module, per_device, 8)
    for device in range(8):
        want = [exact_bits(x) for x in leaves(reference[device])]
        assert [exact_bits(x) for x in stacked[device]] == want, f"device {device}"


def test_bf16_all_reduce_folds_in_f32_everywhere():
    """bf16 sums fold in f32 and round once, as XLA:CPU promotes a bf16 all-reduce to f32:
    stacked, per-device, threaded (the in-process communicator) and the reference evaluator
    give the same bits. Element 0 is 1 on a group's first member and 2^-9 on the others: in
    f32 the sum is 1 + 3 * 2^-9, which rounds to 1 + 2^-7 (JAX's psum on CPU gives it too);
    rounded after every step it would stay 1."""
    module = parse_hlo(_module(
        "  %x = bf16[6] parameter(0)\n  ROOT %r = bf16[6] all-reduce(%x), channel_id=1, "
        f"replica_groups={QUADS}, use_global_device_ids=true, to_apply=%sum",
        "x: bf16[6]", "bf16[6]", SUM.format(t="bf16", op="add")))
    rng = np.random.default_rng(1)
    per_device = []
    for device in range(8):
        x = rng.standard_normal(6).astype(ml_dtypes.bfloat16)
        x[0] = 1.0 if device % 4 == 0 else 2.0**-9
        per_device.append([x])
    stacked = _run_all_ways(module, per_device)
    reference = evaluate_spmd(module, per_device, 8)
    for device in range(8):
        assert exact_bits(stacked[device][0]) == exact_bits(reference[device]), f"device {device}"
        assert float(stacked[device][0][0]) == 1.0 + 2.0**-7


REDUCE_SHAPES = [((3, 200), "{1}"), ((200, 3), "{0}"), ((1, 1000), "{1}"), ((1000, 1), "{0}"),
                 ((17, 33, 5), "{0,2}"), ((17, 33, 5), "{0,1,2}"), ((9, 4100), "{1}"),
                 ((4100, 9), "{0}")]


@pytest.mark.parametrize("dims, axes", REDUCE_SHAPES)
@pytest.mark.parametrize("dtype, op", [("f32", "add"), ("f64", "multiply"), ("bf16", "add"),
                                       ("f32", "maximum"), ("s32", "add")])
def test_stacked_reductions_sum_in_each_devices_order(dims, axes, dtype, op):
    """numpy's (pairwise) float reductions with a device axis in front sum each device's
    elements in the order of the device's own call."""
    reduced = {int(a) for a in axes[1:-1].split(",")}
    kept = [n for d, n in enumerate(dims) if d not in reduced]
    out = f"{dtype}[{','.join(map(str, kept))}]"
    shape = f"{dtype}[{','.join(map(str, dims))}]"
    module = parse_hlo(_module(
        f"  %x = {shape} parameter(0)\n  %y = {shape} multiply(%x, %x)\n"
        f"  %z = {dtype}[] constant(1)\n"
        f"  ROOT %r = {out} reduce(%y, %z), dimensions={axes}, to_apply=%sum",
        f"x: {shape}", out, SUM.format(t=dtype, op=op)))
    numpy_dtype = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16,
                   "s32": np.int32}[dtype]
    rng = np.random.default_rng(2)
    per_device = [[rng.uniform(0.5, 1.5, dims).astype(numpy_dtype)] for _ in range(8)]
    stacked = _run_all_ways(module, per_device)
    executable = BACKEND.compile(module, tuple(range(8)))
    for device in range(8):  # and as the device run alone
        alone = executable.run(device, per_device[device], None)
        assert [exact_bits(x) for x in stacked[device]] == [exact_bits(x) for x in alone]


DOTS = [("f32[6,5]", "f32[5,7]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
         "f32[6,7]"),
        ("f32[5,6]", "f32[7,5]", "lhs_contracting_dims={0}, rhs_contracting_dims={1}",
         "f32[6,7]"),
        ("f32[3,6,5]", "f32[3,5,7]", "lhs_batch_dims={0}, rhs_batch_dims={0}, "
         "lhs_contracting_dims={2}, rhs_contracting_dims={1}", "f32[3,6,7]"),
        ("f32[6,3,5]", "f32[5,7,3]", "lhs_batch_dims={1}, rhs_batch_dims={2}, "
         "lhs_contracting_dims={2}, rhs_contracting_dims={0}", "f32[3,6,7]"),
        ("f32[1,64]", "f32[64,1]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
         "f32[1,1]"),
        ("bf16[4,33]", "bf16[33,9]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
         "bf16[4,9]"),
        ("s32[4,6]", "s32[6,3]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
         "s32[4,3]")]


@pytest.mark.parametrize("lhs, rhs, dims, out", DOTS)
def test_stacked_dots_make_each_devices_blas_call(lhs, rhs, dims, out):
    module = parse_hlo(_module(
        f"  %a = {lhs} parameter(0)\n  %b = {rhs} parameter(1)\n"
        f"  %t = {lhs} negate(%a)\n  ROOT %r = {out} dot(%t, %b), {dims}",
        f"a: {lhs}, b: {rhs}", out))
    numpy_dtype = {"f32": np.float32, "bf16": ml_dtypes.bfloat16,
                   "s32": np.int32}[lhs[:lhs.index("[")]]
    rng = np.random.default_rng(3)

    def array(text):
        shape = tuple(int(d) for d in text[text.index("[") + 1:-1].split(","))
        return (rng.standard_normal(shape) * 3).astype(numpy_dtype)
    per_device = [[array(lhs), array(rhs)] for _ in range(8)]
    stacked = _run_all_ways(module, per_device)
    executable = BACKEND.compile(module, tuple(range(8)))
    for device in range(8):
        alone = executable.run(device, per_device[device], None)
        assert [exact_bits(x) for x in stacked[device]] == [exact_bits(x) for x in alone]


def test_stacked_runs_per_device_where_values_differ_in_control_flow():
    """A loop whose trip count depends on the device runs each device on its own slice."""
    module = parse_hlo("""HloModule m, num_partitions=4
%cond (s: (s32[], f32[3])) -> pred[] {
  %s = (s32[], f32[3]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %p = u32[] partition-id()
  %n = s32[] convert(%p)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[3])) -> (s32[], f32[3]) {
  %s = (s32[], f32[3]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[3] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  %y = f32[3] multiply(%x, %x)
  ROOT %t = (s32[], f32[3]) tuple(%j, %y)
}
ENTRY %e (x: f32[3]) -> (s32[], f32[3]) {
  %x = f32[3] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[3]) tuple(%zero, %x)
  ROOT %w = (s32[], f32[3]) while(%init), condition=%cond, body=%body
}""")
    per_device = [[np.array([1.5, -2.0, 0.5], np.float32)] for _ in range(4)]
    stacked = _run_all_ways(module, per_device)
    reference = evaluate_spmd(module, per_device, 4)
    for device in range(4):
        assert [exact_bits(x) for x in stacked[device]] == [
            exact_bits(x) for x in leaves(reference[device])]
        assert int(stacked[device][0]) == device


def test_the_transformer_step_runs_stacked_bit_for_bit():
    """The README's transformer step on 8 devices, 2-D sharded: stacked, lockstep per device
    and threaded runs agree bit for bit."""
    import importlib.util

    import xla_spmd as xs
    from xla_spmd.frontend.pytree import tree_leaves
    from xla_spmd.pipeline import lower
    from xla_spmd.runtime.sharded_array import device_put

    spec = importlib.util.spec_from_file_location(
        "train_transformer", TESTS.parent / "examples" / "train_transformer.py")
    sys.path.insert(0, str(TESTS.parent / "examples"))
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    from training import spec_for

    params, roles = example.init_params(0)
    tokens, targets = example.make_batches(0)(0)
    mesh = xs.make_mesh({"data": 4, "model": 2}, axis_types=xs.AxisType.Auto)
    shardings = ({k: xs.NamedSharding(mesh, spec_for("2d", roles[k], v.ndim))
                  for k, v in params.items()},
                 xs.NamedSharding(mesh, xs.PartitionSpec("data", None)),
                 xs.NamedSharding(mesh, xs.PartitionSpec("data", None)))
    xs.set_num_devices(8)
    lowered = xs.jit(example.train_step, in_shardings=shardings).lower(
        params, tokens, targets)
    program = lower(lowered.module, mesh=mesh)
    leaves_in = tree_leaves((params, tokens, targets))
    placed = [device_put(np.asarray(v), p.sharding)
              for v, p in zip(leaves_in, program.module.entry.parameters)]
    _run_all_ways(program.spmd_module,
                  [[a.shard_data(d, padded=True) for a in placed] for d in range(8)])


@pytest.mark.parametrize("mesh_axes", MESHES, ids=lambda m: "x".join(map(str, m.values())))
@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_partitioned_programs_run_stacked_equal_the_unpartitioned_reference(mesh_axes, data):
    """The oracle property on the stacked path: random programs, partitioned, run stacked
    (and checked bit for bit against the per-device runs), assembled, equal the reference's
    unpartitioned result."""
    module = build_program(data, make_mesh(mesh_axes))
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.shape.dims).astype(np.float32)
            for p in module.entry.parameters]
    check(module, args, rtol=1e-4, atol=1e-4, backend=_Stacked())


class _Stacked:
    """A backend for ``spmd_oracle.check`` that runs every device stacked (and checks the
    per-device runs against it)."""

    def run_on_devices(self, module, per_device, n):
        return [tuple(results) for results in _run_all_ways(module, per_device)]


INDEXING = {
    "dynamic-slice-scalars": (
        "x: f32[6,5], i: s32[], j: s32[]", "f32[3,2]",
        "  %x = f32[6,5] parameter(0)\n  %i = s32[] parameter(1)\n  %j = s32[] parameter(2)\n"
        "  ROOT %r = f32[3,2] dynamic-slice(%x, %i, %j), dynamic_slice_sizes={3,2}"),
    "dynamic-update-slice": (
        "x: f32[6,5], i: s32[], j: s32[]", "f32[6,5]",
        "  %x = f32[6,5] parameter(0)\n  %i = s32[] parameter(1)\n  %j = s32[] parameter(2)\n"
        "  %u = f32[2,3] constant({{1,2,3},{4,5,6}})\n"
        "  ROOT %r = f32[6,5] dynamic-update-slice(%x, %u, %i, %j)"),
    "gather-rows": (
        "x: f32[6,5], i: s32[], j: s32[]", "f32[2,5]",
        "  %x = f32[6,5] parameter(0)\n  %i = s32[] parameter(1)\n  %j = s32[] parameter(2)\n"
        "  %a = s32[1] reshape(%i)\n  %b = s32[1] reshape(%j)\n"
        "  %k = s32[2] concatenate(%a, %b), dimensions={0}\n"
        "  %v = s32[2,1] reshape(%k)\n"
        "  ROOT %r = f32[2,5] gather(%x, %v), offset_dims={1}, collapsed_slice_dims={0}, "
        "start_index_map={0}, index_vector_dim=1, slice_sizes={1,5}"),
}


@pytest.mark.parametrize("name", INDEXING)
def test_stacked_indexing_clamps_each_devices_starts(name):
    """Gather and dynamic slices read (or write) each device's window at its own starts,
    clamped as the reference clamps them (starts out of range on some devices)."""
    params, root, body = INDEXING[name]
    module = parse_hlo(_module(body, params, root))
    rng = np.random.default_rng(4)
    starts = [(-3, 0), (0, 9), (2, 1), (7, -1), (5, 4), (1, 2), (100, 3), (3, 3)]
    per_device = [[rng.standard_normal((6, 5)).astype(np.float32), np.int32(i), np.int32(j)]
                  for i, j in starts]
    stacked = _run_all_ways(module, per_device)
    reference = evaluate_spmd(module, per_device, 8)
    for device in range(8):
        assert [exact_bits(x) for x in stacked[device]] == [
            exact_bits(x) for x in leaves(reference[device])]


@pytest.mark.parametrize("reducer", ["add", "update"])
def test_stacked_scatter_applies_each_devices_updates_in_order(reducer):
    """Scatter with duplicate and out-of-bounds starts that differ per device: each device's
    updates land in its own operand, in its own order, out-of-bounds windows skipped."""
    body_of_reducer = ("  %b = f32[] parameter(1)\n  ROOT %c = f32[] add(%a, %b)"
                       if reducer == "add" else "  ROOT %b = f32[] parameter(1)")
    head = ("%red (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
            f"{body_of_reducer}\n}}\n")
    body = ("  %x = f32[6,5] parameter(0)\n  %i = s32[] parameter(1)\n  %j = s32[] parameter(2)\n"
            "  %u = f32[3,5] parameter(3)\n"
            "  %a = s32[1] reshape(%i)\n  %b = s32[1] reshape(%j)\n"
            "  %k = s32[3] concatenate(%a, %b, %a), dimensions={0}\n"
            "  %v = s32[3,1] reshape(%k)\n"
            "  ROOT %r = f32[6,5] scatter(%x, %v, %u), update_window_dims={1}, "
            "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
            "to_apply=%red")
    module = parse_hlo(_module(body, "x: f32[6,5], i: s32[], j: s32[], u: f32[3,5]",
                               "f32[6,5]", head))
    executable = BACKEND.compile(module, tuple(range(8)))
    steps = executable.programs[id(module.entry)].steps
    assert [s.kind for s in steps if s.inst.op.name == "scatter"] == ["kernel"]
    rng = np.random.default_rng(5)
    starts = [(-1, 0), (0, 0), (2, 5), (6, 1), (5, 5), (1, 2), (3, -4), (4, 3)]
    per_device = [[rng.standard_normal((6, 5)).astype(np.float32), np.int32(i), np.int32(j),
                   rng.standard_normal((3, 5)).astype(np.float32)] for i, j in starts]
    stacked = _run_all_ways(module, per_device)
    reference = evaluate_spmd(module, per_device, 8)
    for device in range(8):
        assert [exact_bits(x) for x in stacked[device]] == [
            exact_bits(x) for x in leaves(reference[device])]


def test_stacked_scatter_into_an_all_gathered_operand():
    """An all-gather along a later dim gives a stacked value in another memory layout; the
    scatter into it (flat row-major targets) must still land each device's updates (from
    spmd_partitioner_test.cc's ScatterMergedOperandPassthroughAndTrivialSlicedOperand)."""
    head = SUM.format(t="s32", op="add")
    body = ("  %x = s32[8,4,1,2] parameter(0)\n  %i = s32[2,8,4] parameter(1)\n"
            "  %u = s32[8,4,2,2] parameter(2)\n"
            "  %g = s32[8,4,2,2] all-gather(%x), channel_id=1, replica_groups=[4,2]<=[8], "
            "dimensions={2}, use_global_device_ids=true\n"
            "  ROOT %r = s32[8,4,2,2] scatter(%g, %i, %u), update_window_dims={2,3}, "
            "inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, "
            "index_vector_dim=0, to_apply=%sum")
    module = parse_hlo(_module(body, "x: s32[8,4,1,2], i: s32[2,8,4], u: s32[8,4,2,2]",
                               "s32[8,4,2,2]", head))
    rng = np.random.default_rng(11)
    per_device = [[rng.integers(0, 4, (8, 4, 1, 2)).astype(np.int32),
                   rng.integers(0, 4, (2, 8, 4)).astype(np.int32),
                   rng.integers(0, 4, (8, 4, 2, 2)).astype(np.int32)] for _ in range(8)]
    stacked = _run_all_ways(module, per_device)
    reference = evaluate_spmd(module, per_device, 8)
    for device in range(8):
        assert [exact_bits(x) for x in stacked[device]] == [
            exact_bits(x) for x in leaves(reference[device])]


def test_stacked_collective_permute_over_no_devices_has_no_stacked_form():
    """With no device contexts the permute has no pairs to run: no stacked form (None, the
    per-device fallback), not a failure iterating missing pairs."""
    head, param, root, body = COLLECTIVES["collective-permute"]
    module = parse_hlo(_module(body, f"x: {param}", root, head))
    executable = BACKEND.compile(module, tuple(range(8)))
    contexts = [executable._context(d, None) for d in range(8)]
    (start,) = [s for s in executable.programs[id(module.entry)].steps if s.kind == "start"]
    assert stacked_steps.collective_launch(start, contexts) is not None
    assert stacked_steps.collective_launch(start, []) is None
