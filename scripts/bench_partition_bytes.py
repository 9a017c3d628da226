"""Bytes moved per device by the partitioner, beside the textbook minimum and beside XLA.

    python scripts/bench_partition_bytes.py [--json]

Part 1: the classic patterns (data parallel, Megatron column/row MLP, FSDP, 2D, sequence-
sharded attention) with their textbook minimum. Part 2: the JAX programs in tests/data/jax
whose XLA-partitioned programs (``*.optimized.hlo``) are there: their collectives' bytes are
counted with the same report code (`xla_spmd.partition.collective_table`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "partition"))

from classic_patterns import PATTERNS  # noqa: E402

from xla_spmd.ir import parse_hlo  # noqa: E402
from xla_spmd.partition import collective_table  # noqa: E402
from xla_spmd.partition.report import totals  # noqa: E402
from xla_spmd.pipeline import lower  # noqa: E402

JAX_CASES = ["sharded_mlp_dp8", "sharded_mlp_fsdp8", "sharded_mlp_megatron_2x4",
             "sharded_mlp_megatron_2x4_gspmd", "sharded_transformer_dp8",
             "sharded_transformer_2x4", "sharded_wsc", "sharded_wsc_gspmd", "sharded_shard_map",
             "sharded_shard_map_gspmd"]


def total(module) -> float:
    return totals(collective_table(module))["total"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for name, build in PATTERNS.items():
        module, minimum = build()
        rows.append({"case": name, "ours": total(lower(module).spmd_module), "textbook": minimum,
                     "xla": None})
    data = ROOT / "tests" / "data" / "jax"
    for case in JAX_CASES:
        module = parse_hlo((data / case / f"{case}.hlo").read_text())
        xla = parse_hlo((data / case / f"{case}.optimized.hlo").read_text())
        rows.append({"case": case, "ours": total(lower(module).spmd_module), "textbook": None,
                     "xla": total(xla)})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'case':<34} {'ours':>10} {'textbook':>10} {'XLA':>10}")
    print("-" * 67)
    for row in rows:
        def cell(value):
            return f"{value:>10.0f}" if value is not None else f"{'-':>10}"
        print(f"{row['case']:<34} {cell(row['ours'])} {cell(row['textbook'])} {cell(row['xla'])}")
    print("(bytes moved per device, standard formulas; see xla_spmd/partition/report.py)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
