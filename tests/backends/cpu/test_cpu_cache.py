"""The compilation cache: a second process loads the machine code from disk, and a changed
program misses it."""

import json
import os
import subprocess
import sys

PROGRAM = """HloModule m
ENTRY %e (x: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  %c = f32[] constant(CONSTANT)
  %b = f32[8] broadcast(%c), dimensions={}
  %y = f32[8] multiply(%x, %b)
  ROOT %z = f32[8] add(%y, %x)
}"""

SCRIPT = """
import json, sys
import numpy as np
from xla_spmd.backends import get_backend
from xla_spmd.backends.cpu import compiler
from xla_spmd.ir.hlo_parser import parse_hlo
module = parse_hlo(sys.argv[1])
executable = get_backend("cpu").compile(module, (0,))
(out,) = executable.run(0, [np.arange(8, dtype=np.float32)], None)
print(json.dumps({"stats": dict(compiler.STATS), "out": out.tolist()}))
"""


def _run(program: str, cache_dir) -> dict:
    env = dict(os.environ, XLA_SPMD_CACHE_DIR=str(cache_dir))
    done = subprocess.run([sys.executable, "-c", SCRIPT, program], env=env, check=True,
                          capture_output=True, text=True, timeout=300)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_cache_survives_a_restart_and_a_changed_program_misses_it(tmp_path):
    first = _run(PROGRAM.replace("CONSTANT", "2"), tmp_path)
    assert first["stats"] == {"compiles": 1}
    assert first["out"] == [3.0 * i for i in range(8)]
    assert len(list(tmp_path.glob("*.o"))) == 1

    again = _run(PROGRAM.replace("CONSTANT", "2"), tmp_path)
    assert again["stats"] == {"disk_hits": 1}
    assert again["out"] == first["out"]

    changed = _run(PROGRAM.replace("CONSTANT", "3"), tmp_path)
    assert changed["stats"] == {"compiles": 1}
    assert changed["out"] == [4.0 * i for i in range(8)]
    assert len(list(tmp_path.glob("*.o"))) == 2


def test_the_same_program_compiled_twice_in_a_process_hits_memory(tmp_path, monkeypatch):
    from xla_spmd.backends.cpu import compiler
    from xla_spmd.backends.cpu.executable import CpuBackend
    from xla_spmd.ir.hlo_parser import parse_hlo

    monkeypatch.setenv("XLA_SPMD_CACHE_DIR", str(tmp_path))
    module = parse_hlo(PROGRAM.replace("CONSTANT", "5"))
    before = dict(compiler.STATS)
    CpuBackend().compile(module, (0,))
    CpuBackend().compile(module, (0,))
    after = dict(compiler.STATS)
    assert after.get("memory_hits", 0) - before.get("memory_hits", 0) >= 1
