"""`CheckpointManager`: save every N steps, keep the last K, resume from the latest."""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path
from typing import Any

from xla_spmd.checkpoint import layout
from xla_spmd.checkpoint.reader import restore
from xla_spmd.checkpoint.writer import SaveHandle, processes, save, wait_for_saves
from xla_spmd.errors import CheckpointError


class CheckpointManager:
    """Checkpoints of one training run under `directory`, one folder per step.

    ``save(step, tree)`` saves when `step` is a multiple of `save_interval_steps` (or
    ``force=True``), asynchronously by default; after each commit only the last
    `max_to_keep` complete steps are kept (None keeps all). On creation, process 0 removes
    what interrupted saves left behind. ``latest_step()`` and ``restore()`` see complete
    checkpoints only.

    >>> import numpy as np, tempfile, xla_spmd as xs
    >>> xs.set_num_devices(2)
    >>> mesh = xs.make_mesh({"x": 2})
    >>> params = {"w": xs.device_put(np.ones(4), xs.NamedSharding(mesh, xs.P("x")))}
    >>> with xs.checkpoint.CheckpointManager(tempfile.mkdtemp(), max_to_keep=2,
    ...                                      save_interval_steps=10) as manager:
    ...     saved = [manager.save(step, params) for step in range(1, 41)]
    ...     manager.wait()
    ...     manager.all_steps()
    [30, 40]
    """

    def __init__(self, directory: str | os.PathLike, *, max_to_keep: int | None = 3,
                 save_interval_steps: int = 1, async_: bool = True):
        if max_to_keep is not None and (isinstance(max_to_keep, bool) or max_to_keep < 1):
            raise CheckpointError(f"max_to_keep={max_to_keep!r}: expected a positive number "
                                  "or None (keep all)")
        if isinstance(save_interval_steps, bool) or save_interval_steps < 1:
            raise CheckpointError(f"save_interval_steps={save_interval_steps!r}: expected a "
                                  "positive number")
        self.directory = Path(directory)
        self.max_to_keep = max_to_keep
        self.save_interval_steps = save_interval_steps
        self.async_ = async_
        self._handle: SaveHandle | None = None
        wait_for_saves()
        if processes().index == 0:
            for leftover in layout.leftovers(self.directory):
                shutil.rmtree(leftover, ignore_errors=True)

    def all_steps(self) -> list[int]:
        """Steps of the complete checkpoints, ascending."""
        return layout.all_steps(self.directory)

    def latest_step(self) -> int | None:
        """The latest complete step, or None."""
        return layout.latest_step(self.directory)

    def should_save(self, step: int) -> bool:
        return step % self.save_interval_steps == 0

    def save(self, step: int, tree, metadata: Any = None, *, force: bool = False) -> bool:
        """Save `tree` as `step` if it is due (or `force`) and not saved already; True if a
        save started."""
        if not (force or self.should_save(step)):
            return False
        if self._handle is not None and self._handle.step == step:
            return False
        if layout.step_dir(self.directory, step).exists():
            return False
        self._handle = save(self.directory, tree, step=step, metadata=metadata,
                            async_=self.async_, on_commit=self._prune)
        return True

    def _prune(self) -> None:
        """Runs on process 0 after each commit."""
        if self.max_to_keep is None:
            return
        for step in self.all_steps()[:-self.max_to_keep]:
            try:
                layout.remove_step(self.directory, step)
            except OSError as error:  # the new checkpoint is committed; don't fail it
                warnings.warn(f"could not remove old checkpoint step {step}: {error}",
                              stacklevel=1)

    def restore(self, step: int | None = None, target_shardings=None):
        """Restore `step` (default: the latest complete one); see `xs.checkpoint.restore`."""
        return restore(self.directory, target_shardings, step)

    def wait(self) -> None:
        """Block until the save in flight has committed; raise its error."""
        wait_for_saves()

    def close(self) -> None:
        self.wait()

    def __enter__(self) -> CheckpointManager:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
