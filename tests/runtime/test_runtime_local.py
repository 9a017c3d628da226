"""The runtime on in-process devices: devices, device_put/gather, and running XLA's
partitioned programs through the communicators."""

import json
from pathlib import Path

import numpy as np
import pytest

import xla_spmd as xs
from xla_spmd.backends import get_backend
from xla_spmd.errors import ShardingError, XlaSpmdError
from xla_spmd.runtime import ShardedArray, execute, topology
from xla_spmd.sharding import hlo_to_axes, render_sharding

DATA = Path(__file__).resolve().parent.parent / "data" / "jax"


def test_devices_default_and_set():
    assert [d.id for d in xs.devices()] == list(range(8))
    assert topology().kind == "local" and xs.process_count() == 1
    xs.set_num_devices(2)
    assert xs.device_count() == 2 and [d.id for d in xs.local_devices()] == [0, 1]
    with pytest.raises(XlaSpmdError, match="positive"):
        xs.set_num_devices(0)


@pytest.mark.parametrize("spec, shape", [
    (("data", "model"), (4, 8)), (("model", None), (7, 3)), ((None, ("data", "model")), (2, 13)),
    ((), ()), (("data",), (5,)),
])
def test_device_put_and_gather_round_trip(spec, shape):
    mesh = xs.make_mesh({"data": 2, "model": 4})
    value = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    placed = xs.device_put(value, xs.NamedSharding(mesh, xs.P(*spec)))
    assert isinstance(placed, ShardedArray) and placed.shape == shape
    np.testing.assert_array_equal(np.asarray(placed), value)
    for shard in placed.addressable_shards:
        np.testing.assert_array_equal(shard.data, value[shard.index])
    # Uneven shards pad to the ceiling shard shape for a partitioned program.
    ceiling = tuple(placed.sharding.shard_shape(shape))
    assert all(placed.shard_data(d, padded=True).shape == ceiling for d in range(8))


def test_device_put_pytree_and_errors():
    mesh = xs.make_mesh({"data": 8})
    tree = {"w": np.ones((8, 2)), "b": [np.zeros(8)]}
    placed = xs.device_put(tree, xs.NamedSharding(mesh, xs.P("data")))
    assert placed["w"].addressable_shards[3].data.shape == (1, 2)
    with pytest.raises(ShardingError, match="list of 1 entries is not a prefix"):
        xs.device_put([np.ones(2), np.ones(2)], [xs.NamedSharding(mesh, xs.P())])
    with pytest.raises(ShardingError, match="has 2 entries"):
        xs.device_put(np.ones(8), xs.NamedSharding(mesh, xs.P("data", None)))


def test_mesh_must_fit_in_the_job():
    mesh = xs.make_mesh({"data": 16})
    with pytest.raises(ShardingError, match="mesh has 16 devices, the job has 8"):
        xs.device_put(np.ones(16), xs.NamedSharding(mesh, xs.P("data")))


@pytest.mark.parametrize("case", ["sharded_mlp_megatron_2x4", "sharded_mlp_fsdp8",
                                  "sharded_transformer_dp8"])
def test_xla_partitioned_program_runs_through_communicators(case):
    meta = next(c for c in json.loads((DATA / "MANIFEST.json").read_text())["cases"]
                if c["name"] == case)
    mesh = xs.make_mesh(dict(zip(meta["mesh"]["axis_names"], meta["mesh"]["shape"])))
    global_program = xs.parse_hlo((DATA / case / f"{case}.hlo").read_text())
    spmd_program = xs.parse_hlo((DATA / case / f"{case}.optimized.hlo").read_text())
    with np.load(DATA / case / f"{case}.npz") as data:
        inputs = [data[i["name"]] for i in meta["inputs"]]
        expected = [data[o["name"]] for o in meta["outputs"]]
    in_shardings = [hlo_to_axes(p.sharding, rank=x.ndim, mesh=mesh).sharding
                    for p, x in zip(spmd_program.entry.parameters, inputs)]
    out_shardings = [hlo_to_axes(h, rank=e.ndim, mesh=mesh).sharding
                     for h, e in zip(global_program.entry.root.sharding.elements, expected)]
    placed = xs.device_put(inputs, in_shardings)
    results = execute(get_backend("reference").compile(spmd_program, range(8)),
                      {d: [a.shard_data(d, padded=True) for a in placed] for d in range(8)})
    for i, (want, sharding) in enumerate(zip(expected, out_shardings)):
        got = ShardedArray.from_padded_shards(
            want.shape, want.dtype, sharding, {d: r[i] for d, r in results.items()})
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


def test_executable_checks_the_device_count():
    module = xs.parse_hlo("HloModule m, num_partitions=16\nENTRY e {\n"
                          "  ROOT x = f32[2] parameter(0)\n}\n")
    with pytest.raises(XlaSpmdError, match="partitioned for 16 devices"):
        execute(get_backend("reference").compile(module, range(16)),
                {d: [np.ones(2, np.float32)] for d in range(8)})
    # fewer partitions than the job: the program runs on the first devices only
    small = xs.parse_hlo("HloModule m, num_partitions=4\nENTRY e {\n"
                         "  ROOT x = f32[2] parameter(0)\n}\n")
    results = execute(get_backend("reference").compile(small, range(4)),
                      {d: [np.full(2, d, np.float32)] for d in range(4)})
    assert sorted(results) == [0, 1, 2, 3] and results[3][0].tolist() == [3.0, 3.0]


def test_a_failing_device_stops_every_device():
    module = xs.parse_hlo("""HloModule m, num_partitions=8
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %e (x: f32[2]) -> f32[2] {
  %x = f32[2] parameter(0)
  ROOT %r = f32[2] all-reduce(%x), channel_id=1, replica_groups=[1,8]<=[8],
      use_global_device_ids=true, to_apply=%add
}""")
    args = {d: [np.ones(2, np.float32)] for d in range(8)}
    args[3] = [np.ones(3, np.float32)]  # device 3 gets a wrong argument and fails
    with pytest.raises(XlaSpmdError, match="device 3"):
        execute(get_backend("reference").compile(module, range(8)), args)


def test_visualize_a_sharded_array():
    mesh = xs.make_mesh({"data": 2, "model": 4})
    placed = xs.device_put(np.zeros((4, 8)), xs.NamedSharding(mesh, xs.P("data", "model")))
    picture = render_sharding(placed, use_color=False)
    assert picture == render_sharding(placed.sharding, (4, 8), use_color=False)
    assert all(str(d) in picture for d in range(8))


def test_donated_arguments_give_their_buffers_to_the_results():
    # Each device runs its own plan (not stacked copies), which computes a * 2 in a's buffer.
    xs.config.update("backend", "cpu")
    xs.config.update("cpu_stacked", False)
    mesh = xs.make_mesh({"x": 8})
    sharding = xs.NamedSharding(mesh, xs.P("x"))
    double = xs.jit(lambda a, b: (a * 2, b + 1), in_shardings=sharding,
                    out_shardings=sharding, donate_argnums=0)
    a = xs.device_put(np.arange(16.0), sharding)
    b = xs.device_put(np.ones(16), sharding)
    buffers = [shard.data for shard in a.addressable_shards]
    doubled, incremented = double(a, b)
    np.testing.assert_array_equal(np.asarray(doubled), np.arange(16.0) * 2)
    np.testing.assert_array_equal(np.asarray(incremented), np.full(16, 2.0))
    assert all(np.shares_memory(old, new.data)
               for old, new in zip(buffers, doubled.addressable_shards))
    assert a.is_deleted() and not b.is_deleted()
    with pytest.raises(XlaSpmdError, match="donated to jit_lambda"):
        np.asarray(a)


def test_arguments_sharded_differently_are_resharded():
    mesh = xs.make_mesh({"data": 2, "model": 4})
    f = xs.jit(lambda a: a + 1, in_shardings=xs.NamedSharding(mesh, xs.P("data", "model")))
    a = xs.device_put(np.arange(32.0).reshape(4, 8), xs.NamedSharding(mesh, xs.P("model")))
    result = f(a)
    # The result follows the parameter's sharding, closed, as a NamedSharding
    assert result.sharding == xs.NamedSharding(mesh, xs.P("data", "model"))
    np.testing.assert_array_equal(np.asarray(result), np.arange(32.0).reshape(4, 8) + 1)


def _blas_threads_now() -> int:
    from threadpoolctl import threadpool_info
    return max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")


def test_blas_threads_share_the_cores_and_never_raise_a_lower_limit():
    """In-process devices run BLAS on the cores over the devices, at least 1 thread each and
    never more than BLAS had; the old count comes back after."""
    from threadpoolctl import threadpool_limits

    from xla_spmd.runtime.executable import blas_threads, blas_threads_per_device

    with threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads_now()
        with blas_threads_per_device(64):
            assert _blas_threads_now() == 1
        with blas_threads(8):
            assert _blas_threads_now() == before  # 8 asked, BLAS had fewer: kept
        assert _blas_threads_now() == before
    with threadpool_limits(limits=1, user_api="blas"), blas_threads_per_device(1):
        assert _blas_threads_now() == 1  # an enclosing limit holds
