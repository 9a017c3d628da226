"""ruff holds the whole tree to the style in pyproject.toml."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed (dev extra)")
def test_ruff_is_clean():
    result = subprocess.run(["ruff", "check", "--no-cache", "."], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
