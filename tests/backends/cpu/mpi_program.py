"""Run under mpirun -n 2: the CPU backend on MPI ranks gives the reference's values."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_cpu_programs import OVERLAP  # noqa: E402

from xla_spmd.backends import get_backend  # noqa: E402
from xla_spmd.backends.reference import evaluate_spmd, leaves  # noqa: E402
from xla_spmd.collectives.mpi import MpiCommunicator  # noqa: E402
from xla_spmd.ir.hlo_parser import parse_hlo  # noqa: E402

communicator = MpiCommunicator()
module = parse_hlo(OVERLAP)
executable = get_backend("cpu").compile(module, (communicator.rank,))
rng = np.random.default_rng(0)
arguments = [[rng.standard_normal(4).astype(np.float32) for _ in range(2)] for _ in range(2)]
got = executable.run(communicator.rank, arguments[communicator.rank], communicator)
want = leaves(evaluate_spmd(module, arguments, 2)[communicator.rank])
assert all(np.array_equal(g, w) for g, w in zip(got, want)), (got, want)
print(f"rank {communicator.rank} ok", flush=True)
