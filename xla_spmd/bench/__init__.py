"""Benchmarking sharding strategies: hand-written strategies by parameter role, and the
runner that measures and predicts each (mesh, strategy), in-process or under mpirun."""

from xla_spmd.bench.runner import BenchResult, BenchRow, bench, bench_mpirun, bench_script, run_one
from xla_spmd.bench.strategies import HAND_STRATEGIES, batch_spec, param_shardings, spec_for

__all__ = ["BenchResult", "BenchRow", "bench", "bench_mpirun", "bench_script", "run_one",
           "HAND_STRATEGIES", "batch_spec", "param_shardings", "spec_for"]
