"""The inspection report as rich tables: the values, then a summary (step time, top
collectives by time, peak memory per device)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table


def human_bytes(count: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(count) < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} GiB"


def human_time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} us"


def _shape(dtype: str, dims) -> str:
    return f"{dtype}[{','.join(str(d) for d in dims)}]"


def _short(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def values_table(report, *, all_values: bool = False) -> Table:
    """One row per value: by default the arguments, the values that caused a collective,
    and the sharded results of contractions (the rest follow their operands)."""
    table = Table(title=f"{report.name}: values", show_lines=False)
    for column in ("value", "op", "global shape", "sharding", "local shape",
                   "collectives caused", "source", "why"):
        table.add_column(column, overflow="fold")
    for value in report.values:
        shown = (all_values or value.opcode == "parameter" or value.collectives
                 or value.opcode in ("dot", "convolution"))
        if not shown:
            continue
        caused = "\n".join(f"{c.opcode} x{c.group_size} {human_bytes(c.bytes)} "
                           f"{human_time(c.time)}" for c in value.collectives)
        table.add_row(value.name, value.opcode, _shape(value.dtype, value.global_shape),
                      value.sharding, _shape(value.dtype, value.local_shape), caused,
                      value.source.rsplit("/", 1)[-1], _short(value.provenance))
    return table


def summary_table(report) -> Table:
    cost = report.cost
    table = Table(title="summary (predicted, per device)", show_header=False)
    table.add_column("measure")
    table.add_column("value")
    table.add_row("mesh", " x ".join(f"{k}={v}" for k, v in report.mesh_axes.items()))
    table.add_row("profile", cost.profile.name)
    table.add_row("step time", human_time(cost.step_time))
    if report.measured_step_time is not None:
        table.add_row("measured step time", human_time(report.measured_step_time))
    table.add_row("compute", human_time(cost.compute_time))
    table.add_row("collectives", f"{human_time(cost.collective_time)} "
                                 f"({len(report.collectives)} ops, "
                                 f"{human_bytes(cost.collective_bytes)}/device)")
    table.add_row("peak memory per device",
                  f"{human_bytes(cost.peak_memory)} on each of the "
                  f"{len(_flat(report.mesh_devices))} devices")
    return table


def _flat(nested) -> list:
    if isinstance(nested, list):
        return [x for item in nested for x in _flat(item)]
    return [nested]


def top_table(report, count: int = 5) -> Table:
    table = Table(title=f"top {count} collectives by time")
    for column in ("collective", "kind", "group", "bytes/device", "time", "forced by",
                   "source"):
        table.add_column(column, overflow="fold")
    for op in report.top_collectives(count):
        table.add_row(op.name, op.opcode, str(op.group_size), human_bytes(op.bytes),
                      human_time(op.time), op.cause, op.source.rsplit("/", 1)[-1])
    return table


def print_report(report, console: Console | None = None, *, all_values: bool = False) -> None:
    console = console or Console()
    console.print(values_table(report, all_values=all_values))
    console.print(top_table(report))
    console.print(summary_table(report))
