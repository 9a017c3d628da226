"""Suite-wide fixtures, and hypothesis settings: every property test draws the same examples
on every run and machine (derandomized, no example database), so an outcome never depends on
the order tests ran in or on what an earlier run found."""

import pytest
from hypothesis import settings

settings.register_profile("xla-spmd", derandomize=True, database=None)
settings.load_profile("xla-spmd")


@pytest.fixture(autouse=True)
def default_device_count():
    """Every test starts with the default 8 in-process devices, whatever the one before
    it set (xs.set_num_devices, `xla-spmd run --devices`)."""
    from xla_spmd.runtime.devices import DEFAULT_NUM_DEVICES, set_num_devices

    set_num_devices(DEFAULT_NUM_DEVICES)
    yield


@pytest.fixture(autouse=True)
def fresh_config():
    """Every test reads the process options afresh (from its environment, which a test may
    monkeypatch) and leaves no `xs.config.update` behind."""
    from xla_spmd import config

    config.reset()
    yield
    config.reset()


@pytest.fixture
def x64():
    """64-bit types on for one test (``xs.config.enable_x64``, as JAX's ``jax_enable_x64``):
    for checks in float64 against numpy or finite differences."""
    from xla_spmd import config

    with config.override(enable_x64=True):
        yield


def pytest_addoption(parser):
    parser.addoption("--update-goldens", action="store_true", default=False,
                     help="write the output of each golden case (tests/golden) as its "
                          "expected output instead of comparing with it")


@pytest.fixture
def update_goldens(request) -> bool:
    return request.config.getoption("--update-goldens")
