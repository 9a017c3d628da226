"""Bytes moved per device by the partitioner, beside the textbook minimum and beside XLA.

    python scripts/bench_partition_bytes.py [--json] [CASE ...]

Part 1: the classic patterns (data parallel, Megatron column/row MLP, FSDP, 2D, sequence-
sharded attention) with their textbook minimum. Part 2: every sharded JAX program in
tests/data/jax (MANIFEST.json) beside XLA's partitioned program (``*.optimized.hlo``), both
counted with the same report code (`xla_spmd.partition.collective_table`), and, for the
one-pattern programs, the textbook minimum (`TEXTBOOK`, worked out below).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "partition"))

from classic_patterns import PATTERNS, XLA_BY_HAND  # noqa: E402

from xla_spmd.errors import XlaSpmdError  # noqa: E402
from xla_spmd.ir import parse_hlo  # noqa: E402
from xla_spmd.partition import collective_table  # noqa: E402
from xla_spmd.partition.report import totals  # noqa: E402
from xla_spmd.pipeline import lower  # noqa: E402

DATA = ROOT / "tests" / "data" / "jax"

# The least bytes any device must receive, per one-pattern program (f32 = 4 bytes, 8 devices;
# an all-reduce of B bytes costs 2*7/8*B, an all-to-all 7/8*B, see report.py).
TEXTBOOK = {
    # [16,64] sharded 8 ways on the reduced dim: one all-reduce of (value, index) pairs,
    # 16 x (4 + 4) bytes, shared by argmax and max.
    "sharded_argmax": 2 * 7 / 8 * 16 * 8,
    # pad (3, 5) of [64,16] rows 8 per device -> 9 per device: device 6 lacks 4 input rows.
    "sharded_pad": 4 * 16 * 4,
    # 3x3 SAME conv on H sharded (4 rows each): a 2-row halo of x (N=2, W=8, C=4) and one of
    # dy, then one all-reduce of the filter gradient [3,3,4,4].
    "sharded_conv_grad": 2 * (2 * 2 * 8 * 4 * 4) + 2 * 7 / 8 * 3 * 3 * 4 * 4 * 4,
    # carries stay sharded; one all-reduce of the weight gradient [8,8].
    "sharded_scan_grad": 2 * 7 / 8 * 8 * 8 * 4,
    # concatenate [64,16] ++ [32,16], 8/4 rows per device -> 12: a device holds none of its.
    "sharded_concat": 12 * 16 * 4,
    # b.T of [64,32] ('x','y') wanted ('x','y'): some device holds none of its 16x16 tile.
    "sharded_mixed_ew": 16 * 16 * 4,
    # all-to-all the sorted dim's sharding onto the other dim, sort, all-to-all back.
    "sharded_sort": 2 * 7 / 8 * 16 * 8 * 4,
    # [16,32] (None,'x') -> [512] ('x'): each device holds 8 of its 64 elements.
    "sharded_reshape_merge": 56 * 4,
    # x.T of [32,64] ('x','y') wanted ('x','y'): some device holds none of its 32x8 tile.
    "sharded_transpose_2d": 32 * 8 * 4,
    # rows -> columns -> rows over all 8 devices: two all-to-alls of the [4,64] shard.
    "sharded_wsc_chain": 2 * 7 / 8 * 4 * 64 * 4,
}


def total(module) -> float:
    return totals(collective_table(module))["total"]


def sharded_cases() -> list[str]:
    manifest = json.loads((DATA / "MANIFEST.json").read_text())
    return [c["name"] for c in manifest["cases"] if c["sharded"]]


def jax_row(case: str) -> dict:
    """Ours, XLA's and the textbook bytes of one JAX program (None where unknown)."""
    module = parse_hlo((DATA / case / f"{case}.hlo").read_text())
    ours = total(lower(module).spmd_module)
    try:
        xla = total(parse_hlo((DATA / case / f"{case}.optimized.hlo").read_text()))
    except XlaSpmdError:  # a form of XLA's text we cannot read yet: counted by hand
        xla = XLA_BY_HAND.get(case)
    return {"case": case, "ours": ours, "textbook": TEXTBOOK.get(case), "xla": xla}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("cases", nargs="*", help="only these JAX programs (default: all)")
    args = parser.parse_args()
    rows = []
    if not args.cases:
        for name, build in PATTERNS.items():
            module, minimum = build()
            rows.append({"case": name, "ours": total(lower(module).spmd_module),
                         "textbook": minimum, "xla": None})
    for case in args.cases or sharded_cases():
        rows.append(jax_row(case))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'case':<34} {'ours':>10} {'textbook':>10} {'XLA':>10} {'ours/XLA':>9}")
    print("-" * 77)
    for row in rows:
        def cell(value):
            return f"{value:>10.0f}" if value is not None else f"{'-':>10}"
        ratio = (f"{row['ours'] / row['xla']:>9.2f}" if row["xla"] else f"{'-':>9}")
        print(f"{row['case']:<34} {cell(row['ours'])} {cell(row['textbook'])} "
              f"{cell(row['xla'])} {ratio}")
    compared = [row for row in rows if row["xla"]]
    if compared:
        worst = max(compared, key=lambda row: row["ours"] / row["xla"])
        at_most = sum(row["ours"] <= row["xla"] for row in compared)
        print(f"ours <= XLA on {at_most}/{len(compared)} programs; worst ours/XLA "
              f"{worst['ours'] / worst['xla']:.2f} ({worst['case']})")
    print("(bytes moved per device, standard formulas; see xla_spmd/partition/report.py)")
    hand = [row["case"] for row in rows if row["case"] in XLA_BY_HAND]
    if hand:
        print(f"(XLA counted by hand for {', '.join(hand)}: see XLA_BY_HAND)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
