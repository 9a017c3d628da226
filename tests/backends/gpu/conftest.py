"""The GPU backend's tests compile PTX into a cache of their own, not the user's."""

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def private_compilation_cache(tmp_path_factory):
    saved = os.environ.get("XLA_SPMD_CACHE_DIR")
    os.environ["XLA_SPMD_CACHE_DIR"] = str(tmp_path_factory.mktemp("xla-spmd-gpu-cache"))
    yield
    if saved is None:
        os.environ.pop("XLA_SPMD_CACHE_DIR", None)
    else:
        os.environ["XLA_SPMD_CACHE_DIR"] = saved
