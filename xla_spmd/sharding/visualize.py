"""Draw which devices hold which tile of a 1-D or 2-D array, like
``jax.debug.visualize_array_sharding``: one box per tile, labelled with its devices.

>>> from xla_spmd.mesh import make_mesh
>>> from .partition_spec import NamedSharding, P
>>> sharding = NamedSharding(make_mesh({"x": 2, "y": 2}), P("x"))
>>> print(visualize_sharding(sharding, (4, 4), use_color=False))
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

from .partition_spec import NamedSharding
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


def visualize_sharding(sharding, shape: Sequence[int] | None = None, *,
                       use_color: bool | None = None, console: Console | None = None,
                       cell_width: int = 10) -> str:
    """Render the tiles of a 1-D or 2-D array; print to ``console`` if given, return the text.

    `sharding` is a TensorSharding or NamedSharding with the array's `shape`, or a sharded
    array (anything with ``.sharding`` and ``.shape``, such as the runtime's ShardedArray).
    Without colour the result is plain box-drawing text (stable for tests and logs).
    ``use_color=None`` colours only for a terminal: ``console``'s, or else ``sys.stdout``.
    """
    if use_color is None:
        use_color = console.is_terminal if console is not None else _stdout_is_terminal()
    if shape is None:
        if not (hasattr(sharding, "sharding") and hasattr(sharding, "shape")):
            raise ShardingError("visualize_sharding: give the array's shape with a sharding, "
                                "or pass a sharded array")
        sharding, shape = sharding.sharding, sharding.shape
    shape = tuple(int(d) for d in shape)
    if isinstance(sharding, NamedSharding):
        sharding = sharding.to_tensor_sharding(len(shape))
    if len(shape) not in (1, 2):
        raise ShardingError(f"visualize_sharding draws 1-D or 2-D arrays; shape {shape} has "
                            f"rank {len(shape)}")
    sharding.check_rank(shape)
    tiles = tile_devices(sharding, shape)
    if len(shape) == 1:
        tiles = {((0, 1), region[0]): devices for region, devices in tiles.items()}
    rows = sorted({region[0] for region in tiles})
    cols = sorted({region[1] for region in tiles})
    groups = sorted(set(tiles.values()))
    # Widen the cells so the longest device list fits on one line.
    cell_width = max(cell_width, 2 + max((len(",".join(map(str, g))) for g in groups),
                                         default=0))
    table = Table(show_header=False, show_lines=True, padding=0, box=_box(), pad_edge=False)
    for _ in cols:
        table.add_column(width=cell_width, justify="center")
    for row in rows:
        cells = []
        for col in cols:
            devices = tiles.get((row, col), ())
            label = ",".join(map(str, devices))
            style = f"white on {_COLORS[groups.index(devices) % len(_COLORS)]}" \
                if use_color and devices else ""
            cells.append(Padding(Text(label, justify="center"), (1, 0), style=style,
                                 expand=True))
        table.add_row(*cells)
    buffer = io.StringIO()
    width = (cell_width + 1) * len(cols) + 1
    render = Console(file=buffer, width=width, color_system="truecolor" if use_color else None,
                     force_terminal=use_color, no_color=not use_color, highlight=False)
    render.print(table)
    text = buffer.getvalue().rstrip("\n")
    if console is not None:
        console.print(table)
    return text


def _stdout_is_terminal() -> bool:
    isatty = getattr(sys.stdout, "isatty", None)
    return bool(isatty and isatty())


def _box():
    from rich import box
    return box.SQUARE
