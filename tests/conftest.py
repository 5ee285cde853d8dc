"""Shared pytest configuration for the kipcheck test suite.

The `slow` marker is declared in pyproject.toml and deselected by default
(`-m "not slow"`); run slow tests with `make test-slow` or `pytest -m slow`.
"""
