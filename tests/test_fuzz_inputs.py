"""Fuzz every reader of user input with a fixed mutation corpus made from tests/data.

The readers: HLO text and StableHLO text (through the CLI's `load_module`, which reads the
bytes, parses and verifies), GSPMD sharding text, Shardy mesh and sharding text, and the npz
reader of `xla-spmd run --inputs`. The mutations: byte flips, truncations, splices of another
file, deleted and repeated lines, boundary numbers, and nesting bombs.

Each input must give a result or an `XlaSpmdError`, a `ParseError` carrying its position
where the format has lines; never another exception. A reader that loops forever fails the
test after `HANG_SECONDS` naming the input, instead of hanging CI. The corpus is derived from
a fixed seed, so every run reads the same inputs.
"""

from __future__ import annotations

import io
import os
import random
import re
import signal
import time
import zipfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from xla_spmd.cli import load_inputs, load_module
from xla_spmd.errors import ParseError, XlaSpmdError
from xla_spmd.ir.hlo_sharding import HloSharding
from xla_spmd.mesh import parse_mesh
from xla_spmd.sharding import parse_sharding

DATA = Path(__file__).resolve().parent / "data"
HLO_SEEDS = ["nested_call", "shape_ops", "top_k", "while_loop", "cond_switch",
             "sharded_wsc_gspmd", "sharded_shard_map", "sharded_mlp_dp8"]
MLIR_SEEDS = ["nested_call", "while_loop", "sharded_wsc", "sharded_shard_map"]
# FUZZ_N and FUZZ_SEED widen the search by hand; CI runs the defaults, the same every time.
MUTANTS_PER_SEED = int(os.environ.get("FUZZ_N", 90))
SEED = os.environ.get("FUZZ_SEED", "")
HANG_SECONDS = 20  # far above any honest parse of these small files
BOUNDARY_NUMBERS = ["0", "-1", "1", "2147483648", "4294967296", "9223372036854775808",
                    "100000000000", "99999999999999999999999", "007", "1e400"]
OPENERS = ["(", "{", "[", "tuple<", "<", "{a = ", "{{", "((("]


def _seed_texts(names, suffix: str) -> dict[str, str]:
    texts = {}
    for name in names:
        path = DATA / "jax" / name / f"{name}{suffix}"
        if path.is_file():
            texts[name] = path.read_text()
    return texts


def mutate(text: str, rng: random.Random, others: list[str]) -> tuple[str, bytes]:
    """One mutation of `text`: (what was done, the mutated bytes)."""
    data = text.encode()
    kind = rng.choice(["flip", "truncate", "splice", "lines", "number", "bomb", "bomb",
                       "token"])
    at = rng.randrange(len(data) + 1)
    if kind == "flip":
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            if mutated:
                mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        return f"flip near {at}", bytes(mutated)
    if kind == "truncate":
        return f"truncate at {at}", data[:at]
    if kind == "splice":
        other = rng.choice(others).encode()
        start = rng.randrange(len(other))
        return f"splice at {at}", data[:at] + other[start:start + rng.randint(1, 400)] + \
            data[at:]
    if kind == "lines":
        lines = text.splitlines(keepends=True)
        index = rng.randrange(len(lines))
        if rng.random() < 0.5:
            del lines[index]
            return f"delete line {index + 1}", "".join(lines).encode()
        lines.insert(index, lines[index])
        return f"repeat line {index + 1}", "".join(lines).encode()
    if kind == "number":
        numbers = list(re.finditer(rb"\d+", data))
        if not numbers:
            return "unchanged", data
        match = rng.choice(numbers)
        value = rng.choice(BOUNDARY_NUMBERS).encode()
        return f"number at {match.start()} -> {value.decode()}", \
            data[:match.start()] + value + data[match.end():]
    if kind == "token":
        words = list(re.finditer(rb"[A-Za-z_][\w.\-]*", data))
        if not words:
            return "unchanged", data
        match = rng.choice(words)
        word = rng.choice([b"tuple", b"f32", b"ROOT", b"ENTRY", b"sharding", b"func.func",
                           b"stablehlo.while", b"frobnication", b"replica_groups", b"x"])
        return f"word at {match.start()} -> {word.decode()}", \
            data[:match.start()] + word + data[match.end():]
    opener = rng.choice(OPENERS)
    depth = rng.choice([150, 3000])
    closer = opener.translate(str.maketrans("({[<", ")}]>")).replace("a = ", "")[::-1]
    bomb = opener * depth + (closer * depth if rng.random() < 0.5 else "")
    return f"{opener!r} x{depth} at {at}", data[:at] + bomb.encode() + data[at:]


@contextmanager
def hang_guard(what: str):
    """Fail naming `what` if the body runs longer than HANG_SECONDS (a loop, not slowness).
    The timer pytest-timeout may have set for the whole test is put back afterwards."""
    def expire(signum, frame):
        raise AssertionError(f"{what}: still running after {HANG_SECONDS} s")
    previous = signal.signal(signal.SIGALRM, expire)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
    start = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - start), 0.01))


def accepts_or_locates(read, argument, what: str, lines: bool) -> None:
    """`read(argument)` succeeds or raises an XlaSpmdError; a ParseError of a text with lines
    has its line and column."""
    with hang_guard(what):
        try:
            read(argument)
        except XlaSpmdError as error:
            if isinstance(error, ParseError) and lines:
                assert error.line is not None and error.column is not None, (what, error)
        except AssertionError:
            raise
        except Exception as error:  # noqa: BLE001 -- the point: name any other exception
            raise AssertionError(f"{what}: {type(error).__name__}: {error}") from error


@pytest.mark.parametrize("suffix, seeds", [(".hlo", HLO_SEEDS), (".mlir", MLIR_SEEDS)])
def test_program_readers_survive_mutations(suffix, seeds, tmp_path):
    texts = _seed_texts(seeds, suffix)
    assert len(texts) >= 3, "the corpus needs its seed files"
    others = list(texts.values())
    for name, text in texts.items():
        rng = random.Random(f"{SEED}{name}{suffix}")
        for index in range(MUTANTS_PER_SEED):
            how, data = mutate(text, rng, others)
            path = tmp_path / f"m{index}{suffix}"
            path.write_bytes(data)
            accepts_or_locates(load_module, str(path), f"{name}{suffix} {how}", True)


def _sharding_texts() -> list[str]:
    texts = {"{{replicated}, {devices=[2]0,1}}", "{maximal device=1}", "{manual}",
             "{devices=[2,2]0,1,2,3 last_tile_dims={manual}}", "{unknown}",
             "{devices=[2,1,2]<=[4] last_tile_dim_replicate metadata={op_name=\"a\"}}"}
    for path in sorted((DATA / "jax").glob("*/*.hlo")):
        texts.update(re.findall(r"sharding=(\{[^\n]*?\})(?:, |\n)", path.read_text()))
    return sorted(texts)


def test_gspmd_sharding_text_survives_mutations():
    seeds = _sharding_texts()
    assert len(seeds) >= 5
    rng = random.Random(f"{SEED}hlo-sharding")
    for _ in range(MUTANTS_PER_SEED * 6):
        how, data = mutate(rng.choice(seeds), rng, seeds)
        text = data.decode(errors="replace")
        accepts_or_locates(HloSharding.parse, text, f"sharding {how}: {text[:80]!r}", False)


def _meshes_and_shardings() -> tuple[list[str], list[str]]:
    meshes, shardings = set(), set()
    for path in sorted(DATA.glob("**/*.mlir")):
        text = path.read_text()
        meshes.update(re.findall(r"sdy\.mesh @\w+ = (<.*>)", text))
        shardings.update(re.findall(r"#sdy\.sharding<@\w+, \[.*?\](?: replicated=\{[^}]*\})?>",
                                    text))
    return sorted(meshes), sorted(shardings)


def test_shardy_mesh_and_sharding_text_survive_mutations():
    meshes, shardings = _meshes_and_shardings()
    assert meshes and shardings
    rng = random.Random(f"{SEED}sdy")
    resolver = {"mesh": parse_mesh('<["data"=2, "model"=4, "fsdp"=8, "x"=2, "y"=4]>')}
    for _ in range(MUTANTS_PER_SEED * 4):
        how, data = mutate(rng.choice(meshes), rng, meshes + shardings)
        text = data.decode(errors="replace")
        accepts_or_locates(parse_mesh, text, f"mesh {how}: {text[:80]!r}", False)
        how, data = mutate(rng.choice(shardings), rng, meshes + shardings)
        text = data.decode(errors="replace")
        accepts_or_locates(lambda t: parse_sharding(t, resolver), text,
                           f"sharding {how}: {text[:80]!r}", False)


NPZ_PROGRAM = """HloModule m
ENTRY %main (x: f32[3,4], n: s32[], t: (u8[2], pred[])) -> f32[3,4] {
  %x = f32[3,4] parameter(0)
  %n = s32[] parameter(1)
  %t = (u8[2], pred[]) parameter(2)
  ROOT %y = f32[3,4] add(%x, %x)
}
"""


def _npz_bytes() -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, arg0=np.arange(12, dtype=np.float32).reshape(3, 4),
                        arg1=np.int32(7), arg2=np.array([1, 2], np.uint8),
                        arg3=np.array(True))
    return buffer.getvalue()


def _npy_with_header(header: str, payload: bytes) -> bytes:
    """An npy member with `header` (a dict literal) in format 1.0."""
    text = header + " " * (64 - (len(header) + 11) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode() + payload


def test_npz_reader_survives_mutations(tmp_path):
    program = tmp_path / "p.hlo"
    program.write_text(NPZ_PROGRAM)
    module = load_module(str(program))
    original = _npz_bytes()
    rng = random.Random(f"{SEED}npz")
    headers = ["{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000,), }",
               "{'descr': '|O', 'fortran_order': False, 'shape': (3, 4), }",
               "{'descr': '<U3', 'fortran_order': False, 'shape': (3, 4), }",
               "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3, 4), }",
               "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 4), }",
               "{'descr': '<f4', 'fortran_order': False, 'shape': (-3, 4), }",
               "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4)}",
               "{'descr': 'f4', 'shape': (3, 4), }",
               "__import__('os').system('false')",
               "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }"]
    for index in range(MUTANTS_PER_SEED * 3):
        path = tmp_path / f"in{index}.npz"
        if index % 3 == 0:  # a member with a hand-made header, its payload cut or whole
            payload = np.arange(12, dtype=np.float32).tobytes()[:rng.choice([0, 20, 48])]
            with zipfile.ZipFile(path, "w") as archive:
                archive.writestr("arg0.npy", _npy_with_header(rng.choice(headers), payload))
                for key, value in (("arg1", np.int32(1)), ("arg2", np.zeros(2, np.uint8)),
                                   ("arg3", np.array(False))):
                    member = io.BytesIO()
                    np.save(member, value)
                    archive.writestr(f"{key}.npy", member.getvalue())
            how = "hand-made arg0 header"
        else:
            mutated = bytearray(original)
            for _ in range(rng.randint(1, 6)):
                mutated[rng.randrange(len(mutated))] = rng.randrange(256)
            data = bytes(mutated)
            if rng.random() < 0.3:
                data = data[:rng.randrange(len(data))]
            path.write_bytes(data)
            how = "flipped/truncated bytes"
        accepts_or_locates(lambda p: load_inputs(p, module), str(path), f"npz {index}: {how}",
                           False)
