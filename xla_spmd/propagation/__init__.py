"""Sharding propagation (placeholder)."""
