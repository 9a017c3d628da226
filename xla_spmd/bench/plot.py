"""The benchmark plot (matplotlib, an optional dependency): measured against predicted step
time per (mesh, strategy), and the predicted time broken into compute and collectives."""

from __future__ import annotations

from pathlib import Path


def plot_result(result, stem: Path) -> list[Path]:
    """Write STEM.png and STEM.svg; raises ImportError without matplotlib."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    rows = result.rows
    labels = [f"{r.mesh} {r.strategy}" for r in rows]
    positions = range(len(rows))
    figure, (left, right) = plt.subplots(2, 1, figsize=(max(7, 0.45 * len(rows) + 3), 8),
                                         sharex=True)
    width = 0.4
    left.bar([p - width / 2 for p in positions], [r.measured_s * 1e3 for r in rows], width,
             label="measured", color="#59a14f")
    left.bar([p + width / 2 for p in positions], [r.predicted_s * 1e3 for r in rows], width,
             label="predicted", color="#4c78a8")
    left.set_ylabel("step time (ms)")
    left.set_title("measured vs predicted")
    left.legend()
    compute = [r.compute_s * 1e3 for r in rows]
    collectives = [r.collective_s * 1e3 for r in rows]
    overhead = [max(0.0, (r.predicted_s - r.compute_s - r.collective_s) * 1e3) for r in rows]
    right.bar(positions, compute, label="compute", color="#4c78a8")
    right.bar(positions, collectives, bottom=compute, label="collectives", color="#e8833a")
    right.bar(positions, overhead, bottom=[a + b for a, b in zip(compute, collectives)],
              label="step and call overhead", color="#bab0ac")
    right.set_xticks(list(positions), labels, fontsize=8, rotation=60, ha="right")
    right.set_ylabel("predicted time (ms)")
    right.set_title("predicted breakdown")
    right.legend()
    figure.suptitle(f"{result.name}: step time per mesh and strategy")
    figure.tight_layout()
    written = []
    for suffix in (".png", ".svg"):
        path = stem.with_suffix(suffix)
        figure.savefig(path, dpi=110)
        written.append(path)
    plt.close(figure)
    return written
