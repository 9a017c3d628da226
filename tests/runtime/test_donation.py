"""Donated arguments on the CPU backend through ``xs.jit``: an elementwise update is computed
in the donated buffers themselves (no copy afterwards), and what is not handed over is never
written."""

import numpy as np
import pytest

import xla_spmd as xs
from xla_spmd.runtime import jit_runtime


class _CountingNumpy:
    """numpy, with the calls of ``copyto`` counted (jit_runtime's copy into donated
    buffers)."""

    def __init__(self):
        self.copies = 0

    def __getattr__(self, name):
        return getattr(np, name)

    def copyto(self, *args, **kwargs):
        self.copies += 1
        return np.copyto(*args, **kwargs)


@pytest.fixture
def counted(monkeypatch):
    numpy = _CountingNumpy()
    monkeypatch.setattr(jit_runtime, "np", numpy)
    return numpy


# 2 MB shards: a program above the lockstep limit runs a thread per device (`run`), one
# below it runs every device on this thread (`run_together`); both hand donations over.
@pytest.mark.parametrize("n", [1 << 8, 1 << 20])
def test_an_elementwise_update_is_computed_in_the_donated_buffers(counted, n):
    xs.config.update("backend", "cpu")
    xs.config.update("cpu_stacked", False)
    mesh = xs.make_mesh({"x": 2})
    sharding = xs.NamedSharding(mesh, xs.P("x"))
    update = xs.jit(lambda w, g: w - 0.5 * g * g, in_shardings=(sharding, sharding),
                    out_shardings=sharding, donate_argnums=0)
    rng = np.random.default_rng(0)
    w0, g0 = (rng.standard_normal(2 * n).astype(np.float32) for _ in range(2))
    w, g = xs.device_put(w0, sharding), xs.device_put(g0, sharding)
    want = w0
    for _ in range(3):
        buffers = [shard.data for shard in w.addressable_shards]
        w = update(w, g)
        want = want - np.float32(0.5) * g0 * g0
        assert all(np.shares_memory(old, new.data)
                   for old, new in zip(buffers, w.addressable_shards))
        np.testing.assert_array_equal(np.asarray(w), want)
    assert counted.copies == 0
    np.testing.assert_array_equal(np.asarray(g), g0)  # not donated: unchanged


def test_a_donated_numpy_array_is_never_written():
    xs.config.update("backend", "cpu")
    mesh = xs.make_mesh({"x": 2})
    sharding = xs.NamedSharding(mesh, xs.P("x"))
    update = xs.jit(lambda w, g: w + g, in_shardings=(sharding, sharding),
                    out_shardings=sharding, donate_argnums=0)
    w0 = np.arange(8, dtype=np.float32)
    saved = w0.copy()
    result = update(w0, np.ones(8, np.float32))
    np.testing.assert_array_equal(np.asarray(result), saved + 1)
    np.testing.assert_array_equal(w0, saved)


def test_a_donated_argument_the_program_cannot_update_in_place_is_released(counted):
    # The result reads the donated parameter reversed: no fusion may write over it, so the
    # result keeps its own buffers, nothing is copied, and the argument is deleted.
    xs.config.update("backend", "cpu")
    mesh = xs.make_mesh({"x": 2})
    sharding = xs.NamedSharding(mesh, xs.P("x"))
    flip = xs.jit(lambda w: w[:, ::-1] + 1.0, in_shardings=sharding, out_shardings=sharding,
                  donate_argnums=0)
    w0 = np.arange(16, dtype=np.float32).reshape(4, 4)
    w = xs.device_put(w0, sharding)
    buffers = [shard.data for shard in w.addressable_shards]
    result = flip(w)
    np.testing.assert_array_equal(np.asarray(result), w0[:, ::-1] + 1)
    assert counted.copies == 0
    assert w.is_deleted()
    assert not any(np.shares_memory(old, new.data)
                   for old, new in zip(buffers, result.addressable_shards))
