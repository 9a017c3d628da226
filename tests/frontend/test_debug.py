"""``xs.debug.print`` and ``xs.debug.callback`` as JAX documents them (issue 16): under jit
they run with the run-time values, once on the global value by default, on every device's
own shard with ``partitioned=True`` or inside shard_map; under grad, vmap and loops.

Oracle: numpy (the values each call must see, the blocks of each shard)."""

import numpy as np
import pytest

import xla_spmd as xs
import xla_spmd.lax as lax
import xla_spmd.numpy as xnp
from xla_spmd import NamedSharding, P, config

X = np.arange(48, dtype=np.float32).reshape(8, 6)


@pytest.fixture(params=["cpu", "reference"])
def backend(request):
    with config.override(backend=request.param):
        yield request.param


def _blocks(x, rows, cols):
    """The tiles of `x` cut into rows x cols blocks (numpy): the shards of P('a', 'b')."""
    return sorted(tuple(b.ravel().tolist()) for r in np.split(x, rows, 0)
                  for b in np.split(r, cols, 1))


def test_print_inside_jit_formats_run_time_values(capsys, backend):
    def f(x, y):
        xs.debug.print("x = {}, sum = {s}", x, s=y.sum())
        xs.debug.print("no placeholders", x[0], skip_format_check=True)
        return x * 2

    out = xs.jit(f)(X[0, :3], X[1])
    assert np.array_equal(np.asarray(out), X[0, :3] * 2)
    assert capsys.readouterr().out.splitlines() == [
        f"x = {X[0, :3]}, sum = {X[1].sum()}", f"no placeholders {X[0, 0]}"]


def test_sharded_jit_calls_once_on_the_global_value(backend):
    mesh = xs.make_mesh({"a": 4, "b": 2})
    seen = []
    f = xs.jit(lambda x: (xs.debug.callback(seen.append, x * 2), x + 1)[1],
               in_shardings=NamedSharding(mesh, P("a", "b")))
    out = f(X)
    assert np.array_equal(np.asarray(out), X + 1)
    assert len(seen) == 1 and np.array_equal(seen[0], X * 2)
    f(X + 1)  # a second run calls it again, with the new values
    assert len(seen) == 2 and np.array_equal(seen[1], (X + 1) * 2)


def test_partitioned_calls_every_device_on_its_shard(backend):
    mesh = xs.make_mesh({"a": 4, "b": 2})
    seen = []
    f = xs.jit(lambda x: (xs.debug.callback(seen.append, x, partitioned=True), x)[1],
               in_shardings=NamedSharding(mesh, P("a", "b")))
    f(X)
    assert sorted(tuple(s.ravel().tolist()) for s in seen) == _blocks(X, 4, 2)
    # Sharded along one axis and replicated along the other: each replica calls it too.
    seen.clear()
    g = xs.jit(lambda x: (xs.debug.callback(seen.append, x, partitioned=True), x)[1],
               in_shardings=NamedSharding(mesh, P("a")))
    g(X)
    assert sorted(tuple(s.ravel().tolist()) for s in seen) == sorted(_blocks(X, 4, 1) * 2)


def test_partitioned_uneven_shards_see_the_whole_value():
    """A padded shard is no piece of the value: such an operand is gathered first."""
    mesh = xs.make_mesh({"a": 2})
    seen = []
    x = np.arange(5, dtype=np.float32)
    xs.jit(lambda v: (xs.debug.callback(seen.append, v, partitioned=True), v)[1],
           in_shardings=NamedSharding(mesh, P("a")))(x)
    assert len(seen) == 2 and all(np.array_equal(s, x) for s in seen)


def test_shard_map_body_prints_per_device(backend):
    mesh = xs.make_mesh({"a": 4, "b": 2})
    seen = []

    @xs.shard_map(mesh=mesh, in_specs=P("a", "b"), out_specs=P("a", "b"))
    def body(block):
        xs.debug.callback(lambda v, tag: seen.append((tag, v)), block, tag="local")
        return block * 3

    out = xs.jit(body)(X)
    assert np.array_equal(np.asarray(out), X * 3)
    assert {tag for tag, _ in seen} == {"local"}
    assert sorted(tuple(v.ravel().tolist()) for _, v in seen) == _blocks(X, 4, 2)


def test_grad_calls_it_in_the_forward_pass(capsys):
    def loss(w):
        xs.debug.print("w = {w}", w=w)
        return xnp.sum(w ** 2)

    w = np.float32(3.0)
    assert float(xs.jit(xs.grad(loss))(w)) == 6.0
    assert float(xs.grad(loss)(w)) == 6.0
    assert capsys.readouterr().out.splitlines() == ["w = 3.0", "w = 3.0"]


def test_vmap_calls_it_per_batch_element():
    seen = []
    xs.jit(xs.vmap(lambda v: (xs.debug.callback(seen.append, v), v)[1]))(X[:3])
    assert [s.tolist() for s in seen] == X[:3].tolist()


def test_loop_body_calls_it_every_iteration(capsys):
    def body(i, c):
        xs.debug.print("i={i} c={c}", i=i, c=c)
        return c + 0.5

    assert float(xs.jit(lambda: lax.fori_loop(0, 3, body, 0.0))()) == 1.5
    assert capsys.readouterr().out.splitlines() == ["i=0 c=0.0", "i=1 c=0.5", "i=2 c=1.0"]


def test_cond_calls_only_the_branch_taken(capsys):
    def f(p, x):
        return lax.cond(p, lambda v: (xs.debug.print("true {}", v), v)[1],
                        lambda v: (xs.debug.print("false {}", v), v)[1], x)

    xs.jit(f)(True, np.float32(1.0))
    xs.jit(f)(False, np.float32(2.0))
    assert capsys.readouterr().out.splitlines() == ["true 1.0", "false 2.0"]


def test_eager_and_two_call_forms(capsys):
    xs.debug.print("{} and {}", np.float32(1.5), 2)
    xs.debug.print(ordered=True)("two-call {x}", x=np.int32(7))
    seen = []
    xs.debug.callback(ordered=True)(seen.append, np.arange(2))
    xs.jit(lambda x: (xs.debug.print(ordered=True)("jit {}", x), x)[1])(np.int32(4))
    assert capsys.readouterr().out.splitlines() == ["1.5 and 2", "two-call 7", "jit 4"]
    assert seen[0].tolist() == [0, 1]


def test_static_arguments_pass_through():
    seen = []
    xs.jit(lambda x: (xs.debug.callback(lambda a, b, c: seen.append((a, b, c)), x, "tag",
                                        c=None), x)[1])(np.float32(2.0))
    assert seen == [(np.float32(2.0), "tag", None)] and isinstance(seen[0][0], np.ndarray)


def test_bad_uses_fail_as_in_jax():
    with pytest.raises(ValueError, match="Unused positional arguments"):
        xs.debug.print("x", 1)
    with pytest.raises(ValueError, match="f-string"):
        xs.debug.print("x", y=1)
    with pytest.raises(TypeError, match="must be callable"):
        xs.debug.callback(3)
    with pytest.raises(TypeError, match="two-call form"):
        xs.debug.callback(None, 1)


def test_visualize_array_sharding_prints_the_tiles(capsys):
    mesh = xs.make_mesh({"a": 4})
    x = xs.device_put(X, NamedSharding(mesh, P("a")))
    assert xs.debug.visualize_array_sharding(x) is None
    shown = capsys.readouterr().out
    assert shown == xs.render_sharding(x) + "\n" or shown.strip() == xs.render_sharding(x).strip()
    assert all(str(d) in shown for d in range(4))
