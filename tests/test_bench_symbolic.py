"""bench/symbolic.py asks Z3 only about the configurations its encoding states (it refuses the
others, fail closed), and a refusal is one target's result, not the end of the run.  No timing
is asserted."""
from __future__ import annotations

import pytest

pytest.importorskip("z3")

from bench import symbolic
from model.configs import CONFIGS, SMALL, TINY
from properties.symbolic.next import encoded_configs, unencoded_actions


def test_targets_are_the_encoded_configurations():
    targets = symbolic._targets(False)
    named = {t["config"] for t in targets}
    assert named == set(encoded_configs(TINY + SMALL))
    assert any(unencoded_actions(CONFIGS[c]) for c in TINY)    # some are left out
    kinds = {t["kind"] for t in targets}
    assert kinds == {"prove", "bmc", "crosscheck", "gate", "bmc-deep"}


def test_a_refused_configuration_is_a_result():
    refused = next(c for c in TINY if unencoded_actions(CONFIGS[c]))
    r = symbolic._run({"kind": "prove", "config": refused, "property": "P1"})
    assert r["status"] == "refused" and refused in r["detail"] and not r["ok"]
