"""The CPU backend's tests compile into a cache of their own, not the user's."""

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def private_compilation_cache(tmp_path_factory):
    saved = os.environ.get("XLA_SPMD_CACHE_DIR")
    os.environ["XLA_SPMD_CACHE_DIR"] = str(tmp_path_factory.mktemp("xla-spmd-cache"))
    yield
    if saved is None:
        os.environ.pop("XLA_SPMD_CACHE_DIR", None)
    else:
        os.environ["XLA_SPMD_CACHE_DIR"] = saved


@pytest.fixture
def split_parts(monkeypatch):
    """``split_parts(name)``: the parts of each call of ``blas.<name>`` (``batched_matmul`` or
    ``rows_matmul``) from now on, in a list that grows as the calls happen."""
    from xla_spmd.backends.cpu import blas

    def record(name: str) -> list[int]:
        parts: list[int] = []
        original = getattr(blas, name)

        def counted(left, right, out, count, **options):
            parts.append(count)
            return original(left, right, out, count, **options)
        monkeypatch.setattr(blas, name, counted)
        return parts
    return record
