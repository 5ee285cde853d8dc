"""bench/spin.py: the Promela model of TwoPhase (without SPIN), and, when ``spin`` and ``gcc``
are on PATH, SPIN's state count for TwoPhase-3 (TLC's 288).  No timing is asserted."""
from __future__ import annotations

import re
import shutil

import pytest

from bench import spin
from bench.twophase import RM_ACTIONS

ALL_ACTIONS = ("TMCommit", "TMAbort", *RM_ACTIONS)


def test_one_option_per_action_and_rm():
    text = spin.promela(3)
    options = re.findall(r"^\s*:: atomic \{ (.*?) ->\s+/\* (\w+)(?:\((\d+)\))? \*/", text, re.M)
    labels = [(name, int(rm) if rm else None) for _, name, rm in options]
    assert sorted(labels, key=repr) == sorted(
        [("TMCommit", None), ("TMAbort", None)]
        + [(a, rm) for rm in range(3) for a in RM_ACTIONS], key=repr)
    assert len(options) == 2 + 5 * 3
    assert text.count("active proctype") == 1 and text.count("\n  do\n") == 1
    guards = {(name, rm): guard for guard, name, rm in options}
    assert guards["TMCommit", ""] == ("tmState == INIT && tmPrepared[0] && tmPrepared[1] "
                                      "&& tmPrepared[2]")
    assert guards["TMRcvPrepared", "2"] == "tmState == INIT && prepMsg[2]"
    assert guards["RMRcvCommitMsg", "1"] == "commitMsg"       # no guard on the RM's own state


def test_sizes_and_refusals():
    assert spin.promela(8).count(":: atomic") == 2 + 5 * 8
    assert spin.hash_bits(1_745_408) == 22 and spin.hash_bits(288) == 10
    with pytest.raises(ValueError):
        spin.promela(0)


def test_parse_pan():
    out = """State-vector 28 byte, depth reached 10, errors: 0
      288 states, stored
      858 states, matched
     1146 transitions (= stored+matched)
        0 atomic steps
hash conflicts:        89 (resolved)
    0.556	total actual memory usage
pan: elapsed time 0 seconds
Full statespace search for:"""
    figures = spin.parse_pan(out)
    assert figures["stored"] == 288 and figures["transitions"] == 1146
    assert figures["errors"] == 0 and figures["depth_reached"] == 10
    assert figures["memory_mb"] == 0.556 and figures["complete"]


def test_missing_tools_exit_2(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert spin.main(["--n", "3", "--runs", "1", "--out", str(tmp_path / "x.json")]) == 2
    assert "spin and gcc not found" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


@pytest.mark.skipif(spin.missing_tools() != [], reason="spin or gcc not on PATH")
def test_spin_counts_twophase_3(tmp_path):
    from bench.twophase import TwoPhaseSpec
    from properties.explore import explore
    built = spin.build_pan(3, str(tmp_path), memlim_mb=256)
    run = spin.run_pan(built["pan"], ["-w10", "-m1000"])
    assert run["errors"] == 0 and run["complete"]
    assert run["stored"] == 288                           # TLC's count, no extra pc state
    assert run["transitions"] == explore(TwoPhaseSpec(3)).generated
