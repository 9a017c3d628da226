"""Batched dots split over threads (``backends/cpu/blas.py``): the same bits as the reference
evaluator's one ``numpy.matmul`` with BLAS on one thread (what each chunk runs with: a
comparison that holds whatever the BLAS kernel) and as the unsplit kernel, alone and
stacked; f64 products are not split."""

import ml_dtypes
import numpy as np
import pytest
from cpu_bits import exact_bits
from threadpoolctl import threadpool_limits

from xla_spmd.backends.cpu import BACKEND, blas
from xla_spmd.backends.reference import evaluate
from xla_spmd.collectives import LocalWorld
from xla_spmd.ir.hlo_parser import parse_hlo

DOTS = [("f32[16,128,64]", "f32[16,64,96]", "f32[16,128,96]",
         "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
         "rhs_contracting_dims={1}"),
        # attention's scores: batch dims (b, h) not leading, contracting d
        ("f32[4,96,8,64]", "f32[4,96,8,64]", "f32[4,8,96,96]",
         "lhs_batch_dims={0,2}, rhs_batch_dims={0,2}, lhs_contracting_dims={3}, "
         "rhs_contracting_dims={3}"),
        ("bf16[9,128,70]", "bf16[9,70,128]", "bf16[9,128,128]",
         "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
         "rhs_contracting_dims={1}"),
        ]
F64 = ("f64[3,100,100]", "f64[3,100,300]", "f64[3,100,300]",
       "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
       "rhs_contracting_dims={1}")


def _module(lhs, rhs, out, dims, devices=1):
    return parse_hlo(f"""HloModule m, num_partitions={devices}
ENTRY %e (a: {lhs}, b: {rhs}) -> {out} {{
  %a = {lhs} parameter(0)
  %b = {rhs} parameter(1)
  ROOT %r = {out} dot(%a, %b), {dims}
}}""")


def _array(rng, text):
    dtype = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f64": np.float64}[
        text[:text.index("[")]]
    shape = tuple(int(d) for d in text[text.index("[") + 1:-1].split(","))
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("lhs, rhs, out, dims", DOTS)
def test_split_batched_dots_equal_the_reference_and_the_unsplit_kernel(lhs, rhs, out, dims,
                                                                       monkeypatch,
                                                                       split_parts):
    module = _module(lhs, rhs, out, dims)
    rng = np.random.default_rng(0)
    args = [_array(rng, lhs), _array(rng, rhs)]
    executable = BACKEND.compile(module, (0,))
    splits = split_parts("batched_matmul")
    monkeypatch.setattr(blas, "process_cores", lambda: 3)  # one device on all 3 cores
    with threadpool_limits(limits=3, user_api="blas"):
        (split,) = executable.run(0, args, None)
    with threadpool_limits(limits=1, user_api="blas"):
        (whole,) = executable.run(0, args, None)
    assert splits == [3]  # split into 3 once, not at all on one thread
    with threadpool_limits(limits=1, user_api="blas"):
        want = np.asarray(evaluate(module, args))
    assert exact_bits(split) == exact_bits(whole) == exact_bits(want)


def test_f64_batched_dots_keep_the_callers_blas_threads(monkeypatch):
    module = _module(*F64)
    rng = np.random.default_rng(0)
    args = [_array(rng, F64[0]), _array(rng, F64[1])]
    executable = BACKEND.compile(module, (0,))
    monkeypatch.setattr(blas, "batched_matmul", None)  # never called
    with threadpool_limits(limits=2, user_api="blas"):
        (got,) = executable.run(0, args, None)
        want = np.asarray(evaluate(module, args))
    assert exact_bits(got) == exact_bits(want)


def test_split_batched_dots_run_stacked_as_alone(monkeypatch):
    lhs, rhs, out, dims = DOTS[1]
    module = _module(lhs, rhs, out, dims, devices=2)
    rng = np.random.default_rng(1)
    per_device = [[_array(rng, lhs), _array(rng, rhs)] for _ in range(2)]
    executable = BACKEND.compile(module, (0, 1))
    world = LocalWorld(2)
    monkeypatch.setattr(blas, "process_cores", lambda: 2)  # the lockstep run on all 2 cores
    with threadpool_limits(limits=2, user_api="blas"):
        results = executable.run_together(dict(enumerate(per_device)),
                                          {d: world.communicator(d) for d in range(2)},
                                          stack=True)
    for device in range(2):
        with threadpool_limits(limits=1, user_api="blas"):
            want = np.asarray(evaluate(module, per_device[device]))
        assert [exact_bits(r) for r in results[device]] == [exact_bits(want)]


def test_small_or_unbatched_products_are_not_split():
    assert not blas.splittable(1, 2048, 2048, 2048, np.float32)  # one gemm: BLAS threads it
    assert not blas.splittable(8, 16, 16, 16, np.float32)        # below SPLIT_MIN_FLOPS
    assert not blas.splittable(64, 256, 256, 64, np.int32)       # numpy's loop, no BLAS
    assert not blas.splittable(64, 256, 256, 64, np.float64)     # dgemm: see blas.py
    assert blas.splittable(64, 256, 256, 64, np.float32)


def test_no_split_where_devices_share_the_cores(monkeypatch, split_parts):
    """A split holds BLAS on one thread process-wide: on 2 of 4 cores (two in-process devices
    on threads) it would change the other device's BLAS threads, so the product runs whole;
    on 2 of 2 cores (one device) it is split."""
    lhs, rhs, out, dims = DOTS[0]
    module = _module(lhs, rhs, out, dims)
    rng = np.random.default_rng(0)
    args = [_array(rng, lhs), _array(rng, rhs)]
    executable = BACKEND.compile(module, (0,))
    splits = split_parts("batched_matmul")
    results, wants = {}, {}
    for cores in (4, 2):
        monkeypatch.setattr(blas, "process_cores", lambda cores=cores: cores)
        with threadpool_limits(limits=2, user_api="blas"):
            (results[cores],) = executable.run(0, args, None)
        assert splits == ([] if cores == 4 else [2])
    # whole: the reference's call on the same 2 BLAS threads; split: each gemm on one thread
    for threads in (2, 1):
        with threadpool_limits(limits=threads, user_api="blas"):
            wants[threads] = np.asarray(evaluate(module, args))
    assert exact_bits(results[4]) == exact_bits(wants[2])
    assert exact_bits(results[2]) == exact_bits(wants[1])
