"""visualize_sharding: which devices hold which tile, plain text and colour."""

import io

import pytest
from rich.console import Console

from xla_spmd.errors import ShardingError
from xla_spmd.mesh import make_mesh
from xla_spmd.sharding import NamedSharding, P, TensorSharding, tile_devices, visualize_sharding

MESH = make_mesh({"x": 2, "y": 4})


def test_two_dims_plain():
    text = visualize_sharding(NamedSharding(MESH, P("x", "y")), (8, 8), use_color=False)
    lines = text.splitlines()
    assert lines[0] == "┌" + "┬".join(["─" * 10] * 4) + "┐"
    assert "│    0     │    1     │    2     │    3     │" in lines
    assert "│    4     │    5     │    6     │    7     │" in lines
    assert "\x1b[" not in text


def test_replicated_tiles_list_devices():
    text = visualize_sharding(NamedSharding(MESH, P("y")), (7,), use_color=False)
    for label in ("0,4", "1,5", "2,6", "3,7"):
        assert label in text
    full = visualize_sharding(NamedSharding(MESH, P()), (3, 3), use_color=False)
    assert "0,1,2,3,4,5,6,7" in full


def test_colour_and_console():
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=80)
    text = visualize_sharding(TensorSharding(MESH, [["x"]]), (4,), console=console)
    assert "\x1b[" in text and "0,1,2,3" in buffer.getvalue()


def test_uneven_tiles_skip_padding_only_devices():
    tiles = tile_devices(TensorSharding(MESH, [["y"]]), (3,))
    assert tiles == {((0, 1),): (0, 4), ((1, 1),): (1, 5), ((2, 1),): (2, 6)}


def test_rank_errors():
    with pytest.raises(ShardingError, match="1-D or 2-D arrays"):
        visualize_sharding(NamedSharding(MESH, P()), (2, 2, 2))


def test_colour_by_default_only_on_a_terminal(monkeypatch):
    class Pipe(io.StringIO):
        def isatty(self):
            return False

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    sharding = NamedSharding(MESH, P("x"))
    monkeypatch.setattr("sys.stdout", Pipe())
    plain = visualize_sharding(sharding, (4,))
    assert "\x1b[" not in plain and plain == visualize_sharding(sharding, (4,), use_color=False)
    monkeypatch.setattr("sys.stdout", Terminal())
    assert "\x1b[" in visualize_sharding(sharding, (4,))
    assert "\x1b[" not in visualize_sharding(sharding, (4,), use_color=False)
