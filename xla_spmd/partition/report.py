"""A table of a module's collectives and the bytes each device moves.

Standard formulas for a group of n devices, from the operand bytes B of one device:
all-gather (n-1) x B (= (n-1)/n x result), reduce-scatter (n-1)/n x B, all-reduce
2(n-1)/n x B, all-to-all (n-1)/n x B, collective-permute B when the device sends to another
device. Asynchronous pairs (``all-gather-start`` ...) count at their start; tuple operands
(combined collectives) count every element. A collective inside a loop body counts once.

>>> from xla_spmd.ir import parse_hlo
>>> m = parse_hlo('''HloModule m, num_partitions=4
... add { a = f32[] parameter(0)
...   b = f32[] parameter(1)
...   ROOT s = f32[] add(a, b) }
... ENTRY e { p = f32[8] parameter(0)
...   ROOT r = f32[8] all-reduce(p), channel_id=1, replica_groups=[1,4]<=[4],
...     use_global_device_ids=true, to_apply=add }''')
>>> [(r["kind"], r["group_size"], r["bytes"]) for r in collective_table(m)]
[('all-reduce', 4, 48.0)]
"""

from __future__ import annotations

import json

from xla_spmd.ir import Module, TupleShape, map_computations, rebind_called, rewrite

KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
         "collective-broadcast")


def _base(opcode: str) -> str | None:
    name = opcode[:-len("-start")] if opcode.endswith("-start") else opcode
    return name if name in KINDS else None


def _array_leaves(shape):
    if isinstance(shape, TupleShape):
        return [leaf for e in shape.elements for leaf in _array_leaves(e)]
    return [shape]


def collective_bytes(kind: str, operand_bytes: float, n: int) -> float:
    """Bytes one device moves for a collective of `kind` over `n` devices."""
    if kind == "all-gather":
        return (n - 1) * operand_bytes
    if kind == "all-reduce":
        return 2 * (n - 1) / n * operand_bytes if n else 0.0
    if kind in ("reduce-scatter", "all-to-all"):
        return (n - 1) / n * operand_bytes if n else 0.0
    return float(operand_bytes)


def collective_table(module: Module) -> list[dict]:
    """One row per collective: kind, dtype, local shape, group size, bytes per device."""
    rows = []
    partitions = module.num_partitions
    for computation in module.computations:
        for inst in computation.instructions:
            kind = _base(inst.opcode)
            if kind is None:
                continue
            operands = [leaf for o in inst.operands for leaf in _array_leaves(o.shape)]
            operand_bytes = sum(s.byte_size for s in operands)
            if kind in ("collective-permute", "collective-broadcast"):
                pairs = getattr(inst.attrs, "source_target_pairs", None) or ()
                moves = any(s != t for s, t in pairs) if pairs else True
                n = len(pairs) if pairs else partitions
                total = float(operand_bytes) if moves else 0.0
            else:
                groups = inst.attrs.replica_groups
                listed = groups.groups if groups is not None else ()
                n = len(listed[0]) if listed and listed[0] else partitions
                total = collective_bytes(kind, operand_bytes, n)
            first = operands[0] if operands else None
            rows.append({
                "name": inst.name, "computation": computation.name, "kind": kind,
                "dtype": first.dtype.name if first is not None else "",
                "shape": ", ".join(f"{s.dtype.name}{list(s.dims)}" for s in operands),
                "group_size": n, "bytes": float(total)})
    return rows


def totals(rows: list[dict]) -> dict[str, float]:
    result: dict[str, float] = {}
    for row in rows:
        result[row["kind"]] = result.get(row["kind"], 0.0) + row["bytes"]
    result["total"] = sum(row["bytes"] for row in rows)
    return result


def format_table(rows: list[dict]) -> str:
    """The table as text: one line per collective, then totals per kind."""
    header = f"{'kind':<19} {'dtype':<5} {'local shape':<28} {'group':>5} {'bytes/device':>14}"
    lines = [header, "-" * len(header)]
    for row in rows:
        lines.append(f"{row['kind']:<19} {row['dtype']:<5} {row['shape']:<28} "
                     f"{row['group_size']:>5} {row['bytes']:>14.0f}")
    lines.append("-" * len(header))
    for kind, value in totals(rows).items():
        count = sum(1 for r in rows if r["kind"] == kind) if kind != "total" else len(rows)
        lines.append(f"{kind:<19} {'':<5} {f'{count} op(s)':<28} {'':>5} {value:>14.0f}")
    return "\n".join(lines)


def table_json(rows: list[dict]) -> str:
    return json.dumps({"collectives": rows, "totals": totals(rows)}, indent=2)


def strip_shardings(module: Module) -> Module:
    """`module` without shardings: a partitioned program as XLA prints it (the shardings
    on partitioned instructions are for inspection, not for XLA)."""
    def strip(computation, replaced):
        return rewrite(computation, lambda i, ops: rebind_called(i, replaced).replace(
            operands=ops, sharding=None, frontend_attributes=tuple(
                (k, v) for k, v in i.frontend_attributes if not k.startswith("xla.sdy."))))
    return map_computations(module, strip)
