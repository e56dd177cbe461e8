"""Delayed operations (DelayedProduce, DelayedFetch, ...) watched by key and expired by a hierarchical timing wheel."""
