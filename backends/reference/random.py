"""Reference evaluation rules: random (being written)."""

from xla_spmd.backends.reference.evaluator import EVALUATE  # noqa: F401
