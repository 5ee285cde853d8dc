"""The test tiers (docs/ci.md, "This project's own tests"): where one test runs once per
configuration or variant, the default run (``make test``) keeps a representative of each kind
and the others carry the ``slow`` mark, so that ``make test-slow`` runs them."""
import pytest


def slow_unless(values, keep):
    """``values`` as ``parametrize`` arguments, each one not in ``keep`` marked ``slow`` (a
    tuple is one case of several arguments)."""
    values = list(values)
    unknown = set(keep) - set(values)
    assert not unknown, f"representatives that are not among the values: {sorted(unknown)}"

    def case(v):
        if v in keep:
            return v
        return pytest.param(*(v if isinstance(v, tuple) else (v,)), marks=pytest.mark.slow)
    return [case(v) for v in values]
