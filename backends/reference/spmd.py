"""Reference evaluation rules: spmd (being written)."""

from xla_spmd.backends.reference.evaluator import EVALUATE  # noqa: F401
def evaluate_spmd(*args, **kwargs):
    raise NotImplementedError("being written")
