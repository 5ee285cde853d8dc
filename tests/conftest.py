"""Shared pytest configuration for the kipcheck test suite.

The `slow` marker is declared in pyproject.toml and deselected by default
(`-m "not slow"`); run slow tests with `make test-slow` or `pytest -m slow`.
"""
import os
from pathlib import Path

# The Z3 engine's encoding checks are cached (properties/symbolic/fidelity.py); the tests keep
# theirs in the checkout, shared by the pytest-xdist workers, not in the user's cache.
os.environ.setdefault("KIPCHECK_CACHE_DIR",
                      str(Path(__file__).resolve().parent.parent / ".kipcheck" / "test-cache"))
