"""Inspect the transformer's training step: shardings, why, collectives, predicted timeline.

    python examples/inspect_step.py --mesh data=2,model=4 --strategy tp --html step.html

Prints the values with their global and local shapes, the collectives each caused (with the
line of train_transformer.py that forced it), the top collectives and the peak memory; with
--html, writes the self-contained report (mesh picture, shard views, per-device timeline).
"""

from __future__ import annotations

import argparse

import train_transformer as model
from training import STRATEGIES, make_mesh, sharded_step

import xla_spmd as xs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mesh", default="data=2,model=4")
    parser.add_argument("--strategy", choices=STRATEGIES, default="tp")
    parser.add_argument("--html", default=None, help="write the HTML report here")
    parser.add_argument("--all", action="store_true", help="every value, not only the key ones")
    args = parser.parse_args()
    batch = model.make_batches(0)(0)
    step, params = sharded_step(model.train_step, make_mesh(args.mesh), args.strategy,
                                *model.init_params(0), batch)
    report = xs.inspect(step, params, *batch, measure=3)
    from xla_spmd.inspection.terminal import print_report
    print_report(report, all_values=args.all)
    if args.html:
        report.write_html(args.html)
        print(f"wrote {args.html}")


if __name__ == "__main__":
    main()
