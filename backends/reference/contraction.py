"""Reference evaluation rules: contraction (being written)."""

from xla_spmd.backends.reference.evaluator import EVALUATE  # noqa: F401
