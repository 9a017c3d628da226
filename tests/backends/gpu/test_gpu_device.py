"""The GPU backend on a real GPU against the reference backend: every fused elementwise op x
dtype, reductions, dot, and partitioned programs on the visible GPUs. Skipped where CuPy or a
GPU is missing (none of our machines has one: these have not run yet)."""

import sys
from pathlib import Path

import numpy as np
import pytest

from xla_spmd.backends.gpu import GpuBackend
from xla_spmd.backends.gpu.renderer import TRANSCENDENTAL
from xla_spmd.backends.reference import evaluate, leaves


def _gpus() -> int:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 -- no CuPy, no driver, no device
        return 0


pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(_gpus() == 0, reason="needs CuPy and a CUDA GPU")]

TESTS = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(TESTS / "backends" / "gpu"), str(TESTS / "partition")]

from test_gpu_source import DTYPES, _cases_for  # noqa: E402


def _inputs(module, rng):
    args = []
    for p in module.entry.parameters:
        dtype = p.shape.dtype
        if dtype.name == "pred":
            args.append(rng.integers(0, 2, p.shape.dims).astype(bool))
        elif dtype.is_float:
            values = rng.standard_normal(p.shape.dims) * 4
            values.flat[:4] = [0.0, -0.0, np.inf, np.nan]
            args.append(values.astype(dtype.numpy))
        else:
            info = np.iinfo(dtype.numpy)
            args.append(rng.integers(info.min, info.max, p.shape.dims, dtype=dtype.numpy,
                                     endpoint=True))
    return args


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_every_fused_elementwise_op_equals_the_reference_on_the_gpu(dtype):
    module, _ = _cases_for(dtype)
    args = _inputs(module, np.random.default_rng(0))
    executable = GpuBackend().compile(module, (0,))
    got = executable.run(0, args, None)
    want = leaves(evaluate(module, args))
    for inst, g, w in zip(module.entry.root.operands, got, want):
        if inst.op.name in TRANSCENDENTAL or inst.op.name in ("cbrt", "erf", "rsqrt"):
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64),
                                       rtol=1e-5 if dtype.bits > 16 else 1e-2, atol=0,
                                       equal_nan=True, err_msg=inst.name)
        else:
            _same(g, w, inst.name)


def _same(got, want, name):
    """Equal values, zeros of the same sign, NaN where NaN (whose bits may differ)."""
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=name)
        return
    got, want = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(got, want, err_msg=name)
    assert ((np.signbit(got) == np.signbit(want)) | np.isnan(want)).all(), name


def test_partitioned_programs_on_the_gpus_equal_the_unpartitioned_reference():
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from spmd_oracle import check
    from test_partition_property import build_program

    from xla_spmd.mesh import make_mesh

    axes = {"x": _gpus()} if _gpus() > 1 else {"x": 1}

    @settings(max_examples=10, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data):
        module = build_program(data, make_mesh(axes))
        rng = np.random.default_rng(0)
        args = [rng.standard_normal(p.shape.dims).astype(np.float32)
                for p in module.entry.parameters]
        check(module, args, rtol=1e-4, atol=1e-4, backend=GpuBackend())

    run()
