"""Reference evaluation rules: reduction (being written)."""

from xla_spmd.backends.reference.evaluator import EVALUATE  # noqa: F401
