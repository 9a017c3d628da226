"""Every JAX/XLA-generated HLO file parses, prints back to a module equal to it, prints as a
fixed point, and prints byte for byte as XLA printed it (modulo surrounding blank lines)."""

from pathlib import Path

import pytest

from xla_spmd.ir import parse_hlo, print_module

DATA = Path(__file__).resolve().parent.parent / "data" / "jax"
FILES = sorted(DATA.glob("*/*.hlo"))


def test_files_exist():
    assert FILES, f"no HLO files under {DATA}"


@pytest.fixture(scope="module")
def parsed():
    cache = {}

    def get(path: Path):
        if path not in cache:
            cache[path] = parse_hlo(path.read_text(), str(path))
        return cache[path]
    return get


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_round_trip(path, parsed):
    module = parsed(path)
    text = print_module(module)
    again = parse_hlo(text, "printed")
    assert again == module
    assert print_module(again) == text


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_prints_as_xla_printed(path, parsed):
    assert print_module(parsed(path)).strip() == path.read_text().strip()
