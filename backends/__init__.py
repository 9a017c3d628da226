"""Backends: `reference` (numpy interpreter, the semantic oracle); `cpu` and `gpu` later."""
