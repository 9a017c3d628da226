"""Write the small programs, inputs and MPI scripts that `scripts/check_reliability.sh` runs
(issue 12: faults and hostile inputs, as a user meets them) into one folder.

    python scripts/reliability_files.py /tmp/v12

Every file is tiny except `bomb.npz` (1.5 MB, inflating to 1.5 GB) and the nesting files
(a few hundred KB).
"""

from __future__ import annotations

import importlib.util
import sys
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _test_module(path: str):
    """A test module of this checkout, loaded by path (tests/ is not a package): the programs
    written here are the ones the unit tests run."""
    name = Path(path).stem
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_HOSTILE = _test_module("test_cli_hostile.py")
DOUBLE, SINGLE_WHILE, nested_calls = _HOSTILE.DOUBLE, _HOSTILE.WHILE, _HOSTILE.nested_calls
spin = _test_module("runtime/test_no_hang.py").spin_program


def npz_member(path: Path, header: str, payload: bytes = b"", compress=False) -> None:
    """An npz whose arg0.npy has the header text `header`, followed by `payload`."""
    text = header + " " * (64 - (len(header) + 11) % 64) + "\n"
    member = b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode() + payload
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED,
                         compresslevel=9) as archive:
        archive.writestr("arg0.npy", member)


def zip_bomb(path: Path, zeros: int = 1_500_000_000) -> None:
    """arg0's header says f32[4], as the program wants; `zeros` zero bytes follow (written in
    pieces: 1.5 GB inflate from about 1.5 MB)."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"
    text = header + " " * (64 - (len(header) + 11) % 64) + "\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("arg0.npy", "w", force_zip64=True) as member:
            member.write(b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode()
                         + np.full(4, 3, np.float32).tobytes())
            piece = bytes(1 << 24)
            for _ in range(zeros // len(piece)):
                member.write(piece)
            member.write(bytes(zeros % len(piece)))


def collective(op: str) -> str:
    return ("HloModule m, num_partitions=4\nadd {\n  a = f32[] parameter(0)\n  b = f32[] "
            "parameter(1)\n  ROOT c = f32[] add(a, b)\n}\nENTRY %main (x: f32[8]) -> f32[8] {\n"
            f"  %x = f32[8] parameter(0)\n  ROOT %y = f32[8] {op}\n}}\n")


def sharded_param(sharding: str) -> str:
    return ("HloModule m\nENTRY %main (x: f32[8,4]) -> f32[8,4] {\n  %x = f32[8,4] "
            f"parameter(0), sharding={sharding}\n  ROOT %y = f32[8,4] add(%x, %x)\n}}\n")



SHARDED = """HloModule m, num_partitions=2
ENTRY %main (x: f32[8,4]) -> f32[8,4] {
  %x = f32[8,4] parameter(0), sharding={devices=[2,1]<=[2]}
  ROOT %y = f32[8,4] add(%x, %x), sharding={devices=[2,1]<=[2]}
}
"""

# Section 0: the all-reduce and reduce-scatter of every rank against numpy's left fold in
# group order, at sizes that take each path (gathered whole, shared slots, Alltoallv).
FOLD = '''
import sys
import numpy as np
from xla_spmd.collectives import LocalWorld
from xla_spmd.runtime.devices import launched_by_mpi

SIZES = [8, 1 << 16, 1 << 20, 1 << 22]  # float32 elements: 32 B, 256 KiB, 4 MiB, 16 MiB


def rows(n, size):
    return [np.random.default_rng(1000 * size + m).standard_normal(size).astype(np.float32)
            for m in range(n)]


def left_fold(parts):
    out = parts[0].copy()
    for part in parts[1:]:
        out += part
    return out


def tree(parts):
    """The pairwise tree order of MPI's recursive doubling: (x0+x1)+(x2+x3) on 4."""
    while len(parts) > 1:
        parts = [parts[i] + parts[i + 1] if i + 1 < len(parts) else parts[i]
                 for i in range(0, len(parts), 2)]
    return parts[0]


def check(comm, n):
    lines = []
    for size in SIZES:
        parts = rows(n, size)
        want = left_fold(parts)
        got = comm.all_reduce(parts[comm.rank], tuple(range(n)), "sum")
        other = tree(parts)
        scattered = comm.reduce_scatter(parts[comm.rank], tuple(range(n)), 0, "sum")
        chunk = size // n
        mine = want[comm.rank * chunk:(comm.rank + 1) * chunk]
        lines.append(f"size {size * 4} B: all-reduce differs from the left fold in "
                     f"{int((got != want).sum())} elements, reduce-scatter in "
                     f"{int((scattered != mine).sum())} (the tree order (x0+x1)+(x2+x3)... "
                     f"differs in {int((other != want).sum())})")
    return lines


if launched_by_mpi():
    from xla_spmd.runtime.executable import mpi_communicator
    comm = mpi_communicator()
    lines = check(comm, comm.size)
    every = comm.mpi_comm.gather(lines)
    if comm.rank == 0:
        for rank, mine in enumerate(every):
            for line in mine:
                print(f"rank {rank}: {line}")
else:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    for rank, mine in enumerate(LocalWorld(n).run(lambda comm: check(comm, n))):
        for line in mine:
            print(f"device {rank}: {line}")
'''

# Section 1: ranks that disagree about a collective (argv[1] names how).
DISAGREE = '''
import sys
import numpy as np
from xla_spmd.runtime.executable import mpi_communicator

comm = mpi_communicator()
rank, everyone, how = comm.rank, tuple(range(comm.size)), sys.argv[1]
x = np.ones(8, np.float32)
if how == "op":
    out = comm.all_reduce(x, everyone, "prod" if rank == 1 else "sum")
elif how == "kind":
    out = comm.broadcast(x, everyone, 0) if rank == 1 else comm.all_reduce(x, everyone, "sum")
elif how == "size":
    out = comm.all_reduce(np.ones(16 if rank == 2 else 8, np.float32), everyone, "sum")
elif how == "size-large":
    out = comm.all_reduce(np.ones((1 << 20) + (5 if rank == 2 else 0), np.float32), everyone,
                          "sum")
elif how == "shape":
    out = comm.all_gather(x.reshape((2, 4) if rank == 3 else (4, 2)), everyone, 0)
elif how == "dtype":
    out = comm.all_reduce(x.astype(np.float64 if rank == 3 else np.float32), everyone, "sum")
print(f"rank {rank} returned {out.ravel()[:4]}, which it should not", flush=True)
'''

# Section 1, through the runtime: rank 2 trains on a different batch size.
BATCH = '''
import numpy as np
import xla_spmd as xs
import xla_spmd.numpy as xnp
from xla_spmd import NamedSharding, P
from xla_spmd.runtime.executable import mpi_communicator

rank = mpi_communicator().rank
mesh = xs.make_mesh((4,), ("data",))
batch = 12 if rank == 2 else 8
x = np.arange(batch * 4, dtype=np.float32).reshape(batch, 4)
step = xs.jit(lambda x: xnp.sum(x * x), in_shardings=(NamedSharding(mesh, P("data")),),
              out_shardings=NamedSharding(mesh, P()))
print(f"rank {rank}: {np.asarray(step(x))}, which it should not", flush=True)
'''

# Section 2: under MPI rank 3 never reaches the all-reduce (it sleeps); the others wait.
HANG_RANK = '''
import os, time
import numpy as np
from xla_spmd.runtime.executable import mpi_communicator

comm = mpi_communicator()
print(f"rank {comm.rank} pid {os.getpid()}", flush=True)
if comm.rank == 3:
    time.sleep(600)
comm.all_reduce(np.ones(4, np.float32), tuple(range(comm.size)), "sum")
print(f"rank {comm.rank} finished, which it should not", flush=True)
'''

# Section 2, in-process: device 3 blocks in C, deaf to every stop request.
HANG_DEVICE = '''
import threading
import numpy as np
from xla_spmd.collectives import LocalWorld

def body(comm):
    if comm.rank == 3:
        threading.Event().wait()   # hangs forever
    comm.all_reduce(np.ones(2), (0, 1, 2, 3))

LocalWorld(4).run(body)
print("finished, which it should not")
'''

LOOP_CONFIG = '''
import sys
import numpy as np
import xla_spmd as xs
from xla_spmd.backends.reference import evaluate
xs.config.update("max_loop_iterations", 1000)
module = xs.parse_hlo(open(sys.argv[1]).read())
evaluate(module, [np.ones(4, np.float32)])
'''


def write(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "x4.npz").unlink(missing_ok=True)
    np.savez(folder / "x4.npz", arg0=np.ones(4, np.float32))
    (folder / "double.hlo").write_text(DOUBLE)
    (folder / "negate.hlo").write_text(DOUBLE.replace("add(%x, %x)", "negate(%x)"))
    # Section 2
    (folder / "spin_all.hlo").write_text(spin("constant(true)"))
    (folder / "spin_none.hlo").write_text(spin("constant(false)"))
    (folder / "spin_3.hlo").write_text(spin("compare(%pid, %three), direction=EQ"))
    one = spin("constant(true)", partitions=1)
    (folder / "spin_one.hlo").write_text(one)
    (folder / "loop_config.py").write_text(LOOP_CONFIG)
    (folder / "hang_rank.py").write_text(HANG_RANK)
    (folder / "hang_device.py").write_text(HANG_DEVICE)
    # Sections 0, 1
    (folder / "fold.py").write_text(FOLD)
    (folder / "disagree.py").write_text(DISAGREE)
    (folder / "batch.py").write_text(BATCH)
    # Section 3: encodings
    text = DOUBLE.replace("HloModule m\n", "HloModule m\n// résumé\n")
    (folder / "binary.hlo").write_bytes(b"\x00\x01\x02" + bytes(range(256)))
    (folder / "utf16.hlo").write_bytes(text.encode("utf-16"))
    (folder / "latin1.hlo").write_bytes(text.encode("latin-1"))
    (folder / "binary.mlir").write_bytes(b"func.func @t() {\n  \xff\xfe\n}\n")
    (folder / "latin1.mlir").write_bytes("// résumé\n".encode("latin-1"))
    # nesting
    tuple_3000 = "(" * 3000 + "f32[]" + ")" * 3000
    (folder / "tuple3000.hlo").write_text(
        f"HloModule m\nENTRY %e (x: {tuple_3000}) -> f32[] {{\n  %x = {tuple_3000} "
        "parameter(0)\n  ROOT %c = f32[] constant(1)\n}\n")
    (folder / "calls2000.hlo").write_text(nested_calls(2000))
    parens = "(" * 100_000 + ")" * 100_000
    (folder / "parens100k.hlo").write_text(
        "HloModule m\nENTRY %e () -> f32[] {\n  ROOT %c = f32[] constant(1), "
        f"metadata={parens}\n}}\n")
    (folder / "parens100k.mlir").write_text(
        "func.func @main() -> tensor<f32> {\n  %0 = stablehlo.constant dense<" + "[" * 100_000
        + "1.0" + "]" * 100_000 + "> : tensor<f32>\n  return %0 : tensor<f32>\n}\n")
    # huge shapes (1e11 elements, as in the issue)
    big = 100_000_000_000
    (folder / "huge_broadcast.hlo").write_text(
        f"HloModule m\nENTRY %e () -> f32[{big}] {{\n  %c = f32[] constant(1)\n"
        f"  ROOT %b = f32[{big}] broadcast(%c), dimensions={{}}\n}}\n")
    (folder / "huge_constant.mlir").write_text(
        f"func.func @main() -> tensor<{big}xf32> {{\n  %0 = stablehlo.constant dense<1.0> : "
        f"tensor<{big}xf32>\n  return %0 : tensor<{big}xf32>\n}}\n")
    npz_member(folder / "claims_1e11.npz",
               "{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000,), }")
    zip_bomb(folder / "bomb.npz")
    (folder / "iota4e9.hlo").write_text(
        "HloModule m\nENTRY %e () -> s32[4000000000] {\n  ROOT %i = s32[4000000000] "
        "iota(), iota_dimension=0, sharding={devices=[4]<=[4]}\n}\n")
    # output paths
    (folder / "outdir").mkdir(exist_ok=True)
    (folder / "folder.hlo").mkdir(exist_ok=True)
    # npz contents
    np.savez(folder / "strings.npz", arg0=np.array(["a", "b", "c", "d"]))
    np.savez(folder / "records.npz", arg0=np.zeros(4, [("a", "f4"), ("b", "i4")]))
    # accepted but wrong
    (folder / "device9.hlo").write_text(sharded_param("{devices=[4,1]0,1,2,9}"))
    (folder / "rank3tiles.hlo").write_text(sharded_param("{devices=[2,2,2]<=[8]}"))
    (folder / "groups9.hlo").write_text(
        collective("all-reduce(%x), replica_groups={{0,1},{2,9}}, to_apply=add"))
    (folder / "groups_2e64.hlo").write_text(collective(
        "all-reduce(%x), replica_groups={{0,1},{2,99999999999999999999}}, to_apply=add"))
    (folder / "groups_2e63.hlo").write_text(collective(
        "all-reduce(%x), replica_groups={{0,1},{2,9223372036854775809}}, to_apply=add"))
    (folder / "permute7.hlo").write_text(
        collective("collective-permute(%x), source_target_pairs={{0,1},{1,7}}"))
    (folder / "frob.hlo").write_text(DOUBLE.replace("add(%x, %x)", "add(%x, %x), "
                                                    "frobnication={1}"))
    (folder / "empty.mlir").write_text("")
    (folder / "while1.mlir").write_text(SINGLE_WHILE)
    np.savez(folder / "i1.npz", arg0=np.int32(1))
    (folder / "sharded.hlo").write_text(SHARDED)
    np.savez(folder / "x44.npz", arg0=np.ones((4, 4), np.float32))


if __name__ == "__main__":
    write(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/v12"))
