"""Coordinators: groups (consumer offsets and membership) and, later, transactions."""
