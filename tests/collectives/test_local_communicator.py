"""LocalWorld against numpy: every op x dtype x group layout over 8 in-process devices."""

from __future__ import annotations

import math
import threading

import ml_dtypes
import numpy as np
import pytest
from collective_cases import build_cases, mismatch

from xla_spmd.collectives import Communicator, LocalWorld, fold
from xla_spmd.collectives.base import collective_timeout, split_stacked
from xla_spmd.errors import CommunicationError

CASES = build_cases(8)


@pytest.fixture(scope="module")
def world8():
    return LocalWorld(8, timeout=20)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_case_matches_numpy(world8, case):
    results = world8.run(case.run)
    for device, result in enumerate(results):
        problem = mismatch(result, case.expect(device), exact=True)
        assert problem is None, f"device {device}: {problem}"


@pytest.mark.parametrize("devices", [1, 2, 3])
def test_small_worlds(devices):
    group = tuple(range(devices))
    out = LocalWorld(devices).run(
        lambda comm: (comm.all_reduce(np.array([comm.rank + 1]), group, "prod"),
                      comm.all_gather(np.array([comm.rank]), group)))
    factorial = int(np.prod(np.arange(1, devices + 1)))
    for reduced, gathered in out:
        assert reduced.tolist() == [factorial]
        assert gathered.tolist() == list(group)


def test_results_are_private_copies():
    world = LocalWorld(4)
    group = (0, 1, 2, 3)

    def body(comm):
        x = np.full(3, comm.rank, np.int64)
        reduced = comm.all_reduce(x, group)
        gathered = comm.all_gather(x, group)
        shared = comm.broadcast(x, group, root=0)
        x[:] = 100  # the input is free again once the call returns
        reduced += comm.rank
        comm.barrier(group)
        return reduced, gathered, shared

    for rank, (reduced, gathered, shared) in enumerate(world.run(body)):
        assert reduced.tolist() == [6 + rank] * 3
        assert gathered.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
        assert shared.tolist() == [0, 0, 0]


def test_satisfies_protocol():
    assert isinstance(LocalWorld(2).communicator(1), Communicator)


def test_reduction_is_a_left_fold_in_group_order():
    # weighted(a, b) = 2a + b is not commutative: the group order shows in the result.
    def body(comm):
        return comm.all_reduce(np.array([comm.rank]), (3, 1, 0, 2), lambda a, b: 2 * a + b)

    expected = ((3 * 2 + 1) * 2 + 0) * 2 + 2
    assert [r.item() for r in LocalWorld(4).run(body)] == [expected] * 4


def test_bfloat16_reduces_in_float32():
    values = [np.array([1.0], ml_dtypes.bfloat16)] + [np.array([2.0**-9], ml_dtypes.bfloat16)] * 4
    # Rounded after every step, 1 + 2^-9 stays 1; in float32 the four add up to 2^-7.
    assert float(fold(values, "sum")[0]) == 1.0 + 2.0**-7
    assert fold(values, "sum").dtype == ml_dtypes.bfloat16


@pytest.mark.parametrize("op", ["sum", "prod", "max"])
def test_large_fold_is_the_plain_left_fold_bit_for_bit(op):
    # From 512 KiB per input, three or more inputs are folded tile by tile: the same bits as
    # one numpy step per input over the whole arrays, into a fresh array or into ``out``, and
    # for inputs that are not contiguous (which take the untiled path).
    ufunc = {"sum": np.add, "prod": np.multiply, "max": np.maximum}[op]
    rng = np.random.default_rng(5)
    rows = [rng.standard_normal((3, (1 << 16) + 7)).astype(np.float32) for _ in range(5)]
    rows[2][0, :5] = np.nan
    expected = rows[0]
    for row in rows[1:]:
        expected = ufunc(expected, row)
    out = np.empty_like(rows[0])
    assert fold(rows, op).tobytes() == expected.tobytes()
    assert fold(rows, op, out=out) is out and out.tobytes() == expected.tobytes()
    strided = [np.asfortranarray(row) for row in rows]
    assert fold(strided, op).tobytes() == expected.tobytes()


def test_split_stacked_matches_numpy_split():
    x = np.arange(2 * 6 * 3).reshape(2, 6, 3)
    stacked = split_stacked("t", x, 3, 1)
    for k, chunk in enumerate(np.split(x, 3, 1)):
        np.testing.assert_array_equal(stacked[k], chunk)


@pytest.mark.parametrize(("body", "message"), [
    (lambda comm: comm.all_reduce(np.ones(2), (0, 1), "sum"), "does not contain it"),
    (lambda comm: comm.all_reduce(np.ones(2), tuple(range(4)), "median"), "unknown reduction"),
    (lambda comm: comm.reduce_scatter(np.ones(3), tuple(range(4))), "not divisible"),
    (lambda comm: comm.all_reduce(np.ones(2), (0, 0, 1), "sum"), "repeats a device"),
    (lambda comm: comm.all_reduce(np.ones(2), tuple(range(4)), "and"), "boolean or integer"),
    (lambda comm: comm.collective_permute(np.ones(2), [(0, 1), (2, 1)]), "twice"),
])
def test_bad_arguments_are_reported(body, message):
    with pytest.raises(CommunicationError, match=message):
        LocalWorld(4, timeout=5).run(body)


def test_mismatched_collectives_fail_everyone():
    def body(comm):
        if comm.rank == 1:
            return comm.all_gather(np.ones(2), (0, 1))
        return comm.all_reduce(np.ones(2), (0, 1))

    with pytest.raises(CommunicationError, match="mismatched collectives"):
        LocalWorld(2, timeout=5).run(body)


def test_mismatched_shapes_fail_everyone():
    def body(comm):
        return comm.all_reduce(np.ones(2 + comm.rank), (0, 1))

    with pytest.raises(CommunicationError, match="same shape"):
        LocalWorld(2, timeout=5).run(body)


def test_world_is_reusable_after_failure():
    world = LocalWorld(2, timeout=5)
    with pytest.raises(ZeroDivisionError):
        world.run(lambda comm: 1 / 0 if comm.rank else comm.barrier((0, 1)))
    assert world.run(lambda comm: comm.all_reduce(np.array([1]), (0, 1)).item()) == [2, 2]


def test_explicit_threads_with_communicators():
    world = LocalWorld(3)
    results = [None] * 3

    def body(device):
        results[device] = world.communicator(device).all_gather(np.array([device]), (2, 0, 1))

    threads = [threading.Thread(target=body, args=(d,)) for d in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.tolist() for r in results] == [[2, 0, 1]] * 3


def test_timeout_from_environment(monkeypatch):
    monkeypatch.setenv("XLA_SPMD_COLLECTIVE_TIMEOUT", "2.5")
    assert collective_timeout() == 2.5
    assert collective_timeout(1) == 1.0


@pytest.mark.parametrize("text", ["inf", "none", "Infinity"])
def test_timeout_without_limit(monkeypatch, text):
    monkeypatch.setenv("XLA_SPMD_COLLECTIVE_TIMEOUT", text)
    assert collective_timeout() == math.inf
    # A wait without limit works (Condition.wait refuses inf) and still ends when all arrive.
    out = LocalWorld(2).run(lambda comm: comm.all_reduce(np.array([comm.rank]), (0, 1)))
    assert [o.item() for o in out] == [1, 1]


@pytest.mark.parametrize("text", ["0", "-5", "soon", "-inf", "nan"])
def test_bad_timeout_names_the_variable(monkeypatch, text):
    monkeypatch.setenv("XLA_SPMD_COLLECTIVE_TIMEOUT", text)
    with pytest.raises(CommunicationError, match=f"XLA_SPMD_COLLECTIVE_TIMEOUT='{text}'"):
        collective_timeout()
    with pytest.raises(CommunicationError, match="XLA_SPMD_COLLECTIVE_TIMEOUT"):
        LocalWorld(2).run(lambda comm: comm.barrier((0, 1)))


def test_timeout_from_config_overrides_environment(monkeypatch):
    import xla_spmd as xs

    monkeypatch.setenv("XLA_SPMD_COLLECTIVE_TIMEOUT", "100")
    xs.config.update("collective_timeout", 0.2)
    with pytest.raises(CommunicationError, match="timed out after 0.2 s") as info:
        LocalWorld(2).run(lambda comm: comm.stopped.wait() if comm.rank
                          else comm.barrier((0, 1)))
    # The message says how to change the timeout.
    assert "XLA_SPMD_COLLECTIVE_TIMEOUT=SECONDS" in str(info.value)
    assert "xs.config.update('collective_timeout', SECONDS)" in str(info.value)
