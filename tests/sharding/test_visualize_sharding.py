"""visualize_sharding: which devices hold which tile, plain text and colour."""

import io

import pytest
from rich.console import Console

from xla_spmd.errors import ShardingError
from xla_spmd.mesh import make_mesh
from xla_spmd.sharding import (
    NamedSharding,
    P,
    TensorSharding,
    render_sharding,
    tile_devices,
    visualize_sharding,
)

MESH = make_mesh({"x": 2, "y": 4})


def test_two_dims_plain():
    text = render_sharding(NamedSharding(MESH, P("x", "y")), (8, 8), use_color=False)
    lines = text.splitlines()
    assert lines[0] == "┌" + "┬".join(["─" * 10] * 4) + "┐"
    assert "│    0     │    1     │    2     │    3     │" in lines
    assert "│    4     │    5     │    6     │    7     │" in lines
    assert "\x1b[" not in text


def test_replicated_tiles_list_devices():
    text = render_sharding(NamedSharding(MESH, P("y")), (7,), use_color=False)
    for label in ("0,4", "1,5", "2,6", "3,7"):
        assert label in text
    full = render_sharding(NamedSharding(MESH, P()), (3, 3), use_color=False)
    assert "0,1,2,3,4,5,6,7" in full


def test_colour_and_console():
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=80)
    assert visualize_sharding(TensorSharding(MESH, [["x"]]), (4,), console=console) is None
    assert "\x1b[" in buffer.getvalue() and "0,1,2,3" in buffer.getvalue()


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
    plain = render_sharding(sharding, (4,))
    assert "\x1b[" not in plain and plain == render_sharding(sharding, (4,), use_color=False)
    monkeypatch.setattr("sys.stdout", Terminal())
    assert "\x1b[" in render_sharding(sharding, (4,))
    assert "\x1b[" not in render_sharding(sharding, (4,), use_color=False)


def test_prints_and_returns_nothing_in_either_argument_order(capsys):
    sharding = NamedSharding(MESH, P("x", "y"))
    assert visualize_sharding(sharding, (8, 8), use_color=False) is None
    printed = capsys.readouterr().out
    assert printed.rstrip("\n") == render_sharding(sharding, (8, 8), use_color=False)
    visualize_sharding((8, 8), sharding, use_color=False)  # JAX's (shape, sharding)
    assert capsys.readouterr().out == printed


def test_uneven_tiles_are_drawn_to_scale():
    """10 elements over 4 devices: tiles of 3, 3, 3 and 1 elements; the boxes' widths
    follow (the last one is a third of the others, rounded)."""
    text = render_sharding(NamedSharding(make_mesh({"x": 4}), P("x")), (10,), use_color=False)
    top = text.splitlines()[0]
    widths = [len(part) for part in top.strip("┌┐").split("┬")]
    assert widths == [12, 12, 12, 4]
    rows = render_sharding(NamedSharding(make_mesh({"x": 4}), P("x")), (10, 2),
                           use_color=False).splitlines()
    heights = [len(list(group)) for is_line, group in
               __import__("itertools").groupby(rows[1:-1], key=lambda r: r[0] == "├")
               if not is_line]
    assert heights == [3, 3, 3, 1]
