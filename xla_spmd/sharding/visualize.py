"""Draw which devices hold which tile of a 1-D or 2-D array, like
``jax.debug.visualize_array_sharding``: one box per tile, labelled with its devices.

>>> from xla_spmd.mesh import make_mesh
>>> from .named_sharding import NamedSharding
>>> from .partition_spec import P
>>> sharding = NamedSharding(make_mesh({"x": 2, "y": 2}), P("x"))
>>> visualize_sharding(sharding, (4, 4), use_color=False)
┌──────────┐
│          │
│   0,1    │
│          │
├──────────┤
│          │
│   2,3    │
│          │
└──────────┘
"""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from xla_spmd.errors import ShardingError

from .named_sharding import NamedSharding
from .tensor_sharding import TensorSharding

_COLORS = ["blue", "green", "magenta", "cyan", "red", "yellow", "bright_blue", "bright_green",
           "bright_magenta", "bright_cyan", "bright_red", "bright_yellow"]


def tile_devices(sharding: TensorSharding, shape: Sequence[int]
                 ) -> dict[tuple[tuple[int, int], ...], tuple[int, ...]]:
    """Map each tile ``((offset, size) per dim)`` with data to the devices holding it."""
    tiles: dict[tuple[tuple[int, int], ...], list[int]] = {}
    for device in sharding.mesh.all_device_ids:
        region = sharding.shard_offsets(shape, device)
        if all(size > 0 for _, size in region):
            tiles.setdefault(region, []).append(device)
    return {region: tuple(sorted(devices)) for region, devices in tiles.items()}


def render_sharding(sharding, shape: Sequence[int] | None = None, *,
                    use_color: bool | None = None, cell_width: int = 10) -> str:
    """The picture `visualize_sharding` prints, as text: one box per tile of a 1-D or 2-D
    array, sized in proportion to the tile (uneven tiles are drawn to scale).

    `sharding` is a TensorSharding or NamedSharding with the array's `shape`, or a sharded
    array (anything with ``.sharding`` and ``.shape``, such as the runtime's ShardedArray).
    Without colour the result is plain box-drawing text (stable for tests and logs).
    ``use_color=None`` colours only when ``sys.stdout`` is a terminal.
    """
    if use_color is None:
        use_color = _stdout_is_terminal()
    if shape is None:
        if not (hasattr(sharding, "sharding") and hasattr(sharding, "shape")):
            raise ShardingError("visualize_sharding: give the array's shape with a sharding, "
                                "or pass a sharded array")
        sharding, shape = sharding.sharding, tuple(sharding.shape)
    shape = tuple(int(d) for d in shape)
    if isinstance(sharding, NamedSharding):
        sharding = sharding.to_tensor_sharding(len(shape))
    if len(shape) not in (1, 2):
        raise ShardingError(f"visualize_sharding draws 1-D or 2-D arrays; shape {shape} has "
                            f"rank {len(shape)}")
    sharding.check_rank(shape)
    tiles = tile_devices(sharding, shape)
    grid = shape if len(shape) == 2 else (1, shape[0])
    if len(shape) == 1:
        tiles = {((0, 1), region[0]): devices for region, devices in tiles.items()}
    rows = sorted({region[0] for region in tiles})
    cols = sorted({region[1] for region in tiles})
    groups = sorted(set(tiles.values()))
    # Widen the cells so the longest device list fits on one line; then size each column
    # and row in proportion to its tiles' extent.
    cell_width = max(cell_width, 2 + max((len(",".join(map(str, g))) for g in groups),
                                         default=0))
    widths = [max(2 + max(len(",".join(map(str, tiles.get((r, c), ())))) for r in rows),
                  round(cell_width * len(cols) * c[1] / max(grid[1], 1))) for c in cols]
    heights = [max(0, round(len(rows) * r[1] / max(grid[0], 1))) for r in rows]
    table = Table(show_header=False, show_lines=True, padding=0, box=_box(), pad_edge=False)
    for width in widths:
        table.add_column(width=width, justify="center")
    for row, height in zip(rows, heights):
        cells = []
        for col in cols:
            devices = tiles.get((row, col), ())
            label = ",".join(map(str, devices))
            style = f"white on {_COLORS[groups.index(devices) % len(_COLORS)]}" \
                if use_color and devices else ""
            cells.append(Padding(Text(label, justify="center"), (height, 0), style=style,
                                 expand=True))
        table.add_row(*cells)
    buffer = io.StringIO()
    width = sum(w + 1 for w in widths) + 1
    render = Console(file=buffer, width=width, color_system="truecolor" if use_color else None,
                     force_terminal=use_color, no_color=not use_color, highlight=False)
    render.print(table)
    return buffer.getvalue().rstrip("\n")


def visualize_sharding(*args, use_color: bool | None = None, console: Console | None = None,
                       cell_width: int = 10) -> None:
    """Print which devices hold which tile of a 1-D or 2-D array, as JAX's
    ``jax.debug.visualize_array_sharding(array)`` and ``visualize_sharding(shape,
    sharding)`` do; returns nothing (`render_sharding` gives the text).

    Takes a sharded array, ``(sharding, shape)``, or JAX's order ``(shape, sharding)``;
    prints to `console` when given, else to standard output.
    """
    if len(args) == 2 and isinstance(args[0], (tuple, list)):
        args = (args[1], args[0])
    if console is not None and use_color is None:
        use_color = console.is_terminal
    text = render_sharding(*args, use_color=use_color, cell_width=cell_width)
    if console is not None:
        console.print(Text.from_ansi(text))
    else:
        print(text)


def _stdout_is_terminal() -> bool:
    isatty = getattr(sys.stdout, "isatty", None)
    return bool(isatty and isatty())


def _box():
    from rich import box
    return box.SQUARE
