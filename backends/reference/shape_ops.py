"""Reference evaluation rules: shape_ops (being written)."""

from xla_spmd.backends.reference.evaluator import EVALUATE  # noqa: F401
