"""Where checkpoints live on disk, and how one becomes complete in a single rename.

A checkpoint root holds one folder per step::

    root/
      10/                 complete: a Zarr v3 group (one array per leaf) + manifest.json
      20/
      30.partial/         a save in flight, or one a crash interrupted: never read
      5.deleting/         an old step being removed: never read

A save writes everything into ``<step>.partial``, fsyncs every file and folder, and only then
renames it to ``<step>`` and fsyncs the root. A folder named by digits alone therefore holds
a whole checkpoint (rename is atomic on POSIX file systems); a crash at any point leaves the
previous steps untouched and at most a ``.partial`` folder behind, which the next save of
that step, or a `CheckpointManager`, removes. Removal renames to ``.deleting`` first, so a
half-deleted step never looks complete either.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from xla_spmd.checkpoint.manifest import MANIFEST
from xla_spmd.errors import CheckpointError

PARTIAL = ".partial"
DELETING = ".deleting"


def step_dir(root: Path, step: int) -> Path:
    return root / str(step)


def partial_dir(root: Path, step: int) -> Path:
    return root / f"{step}{PARTIAL}"


def check_step(step) -> int:
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise CheckpointError(f"step={step!r}: expected a non-negative integer")
    return step


def all_steps(root: str | os.PathLike) -> list[int]:
    """The steps of the complete checkpoints under `root`, ascending.

    >>> all_steps("/no/such/folder")
    []
    """
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(int(entry.name) for entry in root.iterdir()
                  if entry.name.isdigit() and (entry / MANIFEST).is_file())


def latest_step(root: str | os.PathLike) -> int | None:
    """The step of the latest complete checkpoint under `root`, or None."""
    steps = all_steps(root)
    return steps[-1] if steps else None


def leftovers(root: Path) -> list[Path]:
    """Folders that interrupted saves or deletions left behind."""
    if not root.is_dir():
        return []
    return [entry for entry in root.iterdir()
            if entry.name.endswith((PARTIAL, DELETING)) and entry.is_dir()]


def remove_step(root: Path, step: int) -> None:
    """Delete a complete step: rename it out of the way first, then remove the files."""
    doomed = root / f"{step}{DELETING}"
    os.rename(step_dir(root, step), doomed)
    fsync_dir(root)
    shutil.rmtree(doomed, ignore_errors=True)


def fsync_file(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def fsync_dir(path: Path) -> None:
    """Make the folder's entries (files created or renamed in it) durable."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # platforms that cannot open folders (Windows) have no folder fsync
    try:
        os.fsync(descriptor)
    except OSError:
        pass  # some file systems refuse fsync on folders; their renames are durable anyway
    finally:
        os.close(descriptor)


def fsync_tree(files: Iterable[Path], top: Path, files_synced: bool = False) -> None:
    """fsync each file (unless `files_synced`), then every folder from each file's up to
    `top` (included)."""
    folders: set[Path] = set()
    for path in files:
        if not files_synced:
            fsync_file(path)
        folder = path.parent
        while folder not in folders:
            folders.add(folder)
            if folder == top or top not in folder.parents:
                break
            folder = folder.parent
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        fsync_dir(folder)


def commit(partial: Path, final: Path) -> None:
    """Rename the finished `partial` folder to `final` and make the rename durable."""
    if final.exists():
        raise CheckpointError(f"{final} appeared while this save was writing; another job "
                              "is saving into the same folder")
    os.rename(partial, final)
    fsync_dir(final.parent)
