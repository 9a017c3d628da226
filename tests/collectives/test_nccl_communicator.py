"""NcclCommunicator: importable everywhere, a clear error without CuPy/GPU, and a
single-rank smoke test where CuPy and a GPU exist."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from xla_spmd.errors import CommunicationError


def _has_gpu() -> bool:
    if importlib.util.find_spec("cupy") is None:
        return False
    import cupy

    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 -- no driver, no device
        return False


def test_module_imports_without_cupy():
    import xla_spmd.collectives.nccl as nccl

    assert hasattr(nccl, "NcclCommunicator")


@pytest.mark.skipif(_has_gpu(), reason="CuPy and a GPU are present")
def test_constructing_without_cupy_or_gpu_is_a_clear_error():
    from xla_spmd.collectives.nccl import NcclCommunicator

    with pytest.raises(CommunicationError, match="needs CuPy|needs a CUDA GPU"):
        NcclCommunicator()


@pytest.mark.gpu
@pytest.mark.skipif(not _has_gpu(), reason="needs CuPy with NCCL and a CUDA GPU")
def test_single_rank_collectives_on_gpu():
    pytest.importorskip("mpi4py")
    cupy = pytest.importorskip("cupy")
    from xla_spmd.collectives.nccl import NcclCommunicator

    comm = NcclCommunicator()
    if comm.size != 1:
        pytest.skip("runs as a single process")
    group = (0,)
    x = cupy.arange(8, dtype=cupy.float32).reshape(2, 4)
    np.testing.assert_array_equal(comm.all_reduce(x, group).get(), x.get())
    np.testing.assert_array_equal(comm.all_gather(x, group, 1).get(), x.get())
    np.testing.assert_array_equal(comm.reduce_scatter(x, group, 1, "max").get(), x.get())
    np.testing.assert_array_equal(comm.all_to_all(x, group, 1, 0).get(), x.get())
    np.testing.assert_array_equal(comm.broadcast(x, group, 0).get(), x.get())
    np.testing.assert_array_equal(comm.collective_permute(x, [(0, 0)]).get(), x.get())
    comm.barrier(group)
    comm.free()
