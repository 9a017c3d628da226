"""The two goals of issue 17 on the training examples: predicted step time within ±25% of the
measured one, and auto within 1.05x of the best hand-written strategy, per mesh.

    python scripts/bench_cost_model.py [--meshes data=2 data=2,model=2 data=2,model=4]
        [--strategies dp,tp,fsdp,2d,auto] [--steps 3] [--rounds 3] [--output STEM]

For each example (MLP, transformer) it runs `xla_spmd.bench.bench` over the grid: each device
count is calibrated in the same run as it is measured (the machine's load changes), and the
strategies of a mesh take turns. It prints each example's table, then the count of runs
predicted within ±25% and, per mesh, auto's measured time over the best hand strategy's.
`--output STEM` writes STEM_<example>.json/.csv and the plots. The load average is printed
before and after: on a shared machine the numbers are as good as the load allows.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rich.console import Console

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
sys.path.insert(0, str(EXAMPLES))


def main() -> None:
    from xla_spmd.bench import bench_script

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", nargs="+", default=["train_mlp", "train_transformer"])
    parser.add_argument("--meshes", nargs="+",
                        default=["data=2", "data=2,model=2", "data=2,model=4"])
    parser.add_argument("--strategies", default="dp,tp,fsdp,2d,auto")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", default=None, help="file stem for JSON, CSV and plots")
    args = parser.parse_args()
    console = Console(width=160)
    console.print(f"load average before: {os.getloadavg()}")
    within = total = 0
    auto_lines = []
    for name in args.examples:
        result = bench_script(EXAMPLES / f"{name}.py", meshes=args.meshes,
                              strategies=[s for s in args.strategies.split(",") if s],
                              steps=args.steps, rounds=args.rounds)
        result.print(console)
        if args.output:
            result.save(f"{args.output}_{name}")
        for row in result.rows:
            total += 1
            within += abs(row.error) <= 0.25
        for mesh in args.meshes:
            rows = [r for r in result.rows if r.mesh == mesh]
            hand = [r for r in rows if r.strategy != "auto"]
            auto = [r for r in rows if r.strategy == "auto"]
            if hand and auto:
                best = min(hand, key=lambda r: r.measured_s)
                auto_lines.append((name, mesh, auto[0].measured_s / best.measured_s,
                                   best.strategy))
    console.print(f"load average after: {os.getloadavg()}")
    console.print(f"predicted within ±25% of measured: {within}/{total}")
    met = sum(ratio <= 1.05 for _, _, ratio, _ in auto_lines)
    for name, mesh, ratio, best in auto_lines:
        console.print(f"auto / best hand ({best}) on {name} {mesh}: {ratio:.2f}")
    console.print(f"auto within 1.05x of the best hand strategy: {met}/{len(auto_lines)}")


if __name__ == "__main__":
    main()
