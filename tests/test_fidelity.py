"""The Z3 engine fails closed (docs/proofs.md, "Fail closed"): it answers only for a design
whose encoding agrees with the model, statically (the Design flags each action reads) and by
the cross-check on reachable and arbitrary states; a new flag that the encoding does not
handle is refused with one line naming the action, never PROVED."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tiers import slow_unless

z3 = pytest.importorskip("z3")

from model import actions as model_actions  # noqa: E402
from model.config import VARIANTS, Design  # noqa: E402
from properties.kafka_spec import get_config  # noqa: E402
from properties.symbolic import actions as sym_actions  # noqa: E402
from properties.symbolic.next import unencoded_actions  # noqa: E402
from properties.symbolic import fidelity  # noqa: E402
from properties.symbolic.engine import bmc, prove  # noqa: E402
from properties.symbolic.fidelity import (EncodingRefused, check_encoding, flag_reads,  # noqa: E402
                                          static_gaps, unknown_fields)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KIPCHECK_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "encoding"


def test_model_and_encoding_read_the_same_flags_everywhere():
    """Every action, quiescence and every clause of P1-P4 reads the same Design flags in
    the model and in the encoding, and the layout carries every field of the state."""
    assert static_gaps(None) == []
    assert unknown_fields() == []


def test_flag_reads_follow_the_helpers_an_action_calls():
    # controller_handles_envelope reads no flag itself: _receive_envelope and
    # _controller_accepts_mutation do
    reads = flag_reads(model_actions.controller_handles_envelope)
    assert {"envelope_any_listener", "authorize_as_forwarder", "reforward_forwarded",
            "ack_before_commit"} <= set(reads)
    assert reads["envelope_any_listener"].startswith("model/actions.py:")
    assert "registration_trusts_response" not in reads
    assert set(flag_reads(sym_actions.controller_handles_envelope)) == set(reads)


def test_an_indirect_use_of_the_design_reads_every_flag():
    name = "zombie_writes_unfenced"

    def odd(s, cfg, d: Design):
        return getattr(d, name)
    odd.__module__ = "model.actions"
    assert "*" in flag_reads(odd)


def _drops_the_epoch_bump(S, cfg, d, n):
    en, S2 = _ORIGINAL["broker_elects_controller"](S, cfg, d, n)
    return en, S2.set({"zk.epoch": S["zk.epoch"]}).set_node(n, zk_epoch=S["zk.epoch"])


_ORIGINAL = dict(sym_actions.ENCODINGS)


def test_a_disagreeing_encoding_is_refused_naming_action_and_field(monkeypatch, cache):
    monkeypatch.setitem(sym_actions.ENCODINGS, "broker_elects_controller",
                        _drops_the_epoch_bump)
    cfg = get_config("zk-forward-zombie")
    v = check_encoding(cfg, Design())
    assert not v.ok
    assert "broker_elects_controller" in v.reason and "zk" in v.reason
    with pytest.raises(EncodingRefused, match="broker_elects_controller"):
        prove(cfg, Design(), "P1", max_k=1)
    with pytest.raises(EncodingRefused, match="broker_elects_controller"):
        bmc(cfg, Design(), "P1", 3)
    assert not list(cache.glob("*.json")) if cache.exists() else True     # never cached


SMALL_SAMPLE = {"limit": 60, "arbitrary": 30, "solver_samples": 2, "seed": 7}


def test_a_pass_is_cached_by_source_configuration_and_design(cache):
    cfg = get_config("zk-envelope-security")
    first = check_encoding(cfg, Design(), sample=SMALL_SAMPLE)
    assert first.ok and not first.cached and first.states == 60 and first.arbitrary == 30
    again = check_encoding(cfg, Design(), sample=SMALL_SAMPLE)
    assert again.ok and again.cached and again.states == first.states
    # another design, another entry; another sample, another entry
    other = check_encoding(cfg, VARIANTS["leak-envelope-error"].design, "leak-envelope-error",
                           sample=SMALL_SAMPLE)
    assert other.ok and not other.cached
    assert not check_encoding(cfg, Design(), sample={**SMALL_SAMPLE, "seed": 8}).cached
    assert len(list(cache.glob("*.json"))) == 3


def test_a_replaced_action_changes_the_cache_key(monkeypatch):
    cfg, d = get_config("zk-forward-zombie"), Design()
    key = fidelity.cache_key(cfg, d, fidelity.SAMPLE)
    monkeypatch.setitem(sym_actions.ENCODINGS, "broker_elects_controller",
                        _drops_the_epoch_bump)
    assert fidelity.cache_key(cfg, d, fidelity.SAMPLE) != key


def test_an_unwritable_cache_costs_time_not_the_answer(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("KIPCHECK_CACHE_DIR", str(blocker))
    v = check_encoding(get_config("zk-forward-zombie"), Design(), sample=SMALL_SAMPLE)
    assert v.ok and not v.cached


# kraft-listeners' sample is the slowest to cross-check (10-15 s a variant): the default tier
# keeps one of its variants, the slow tier the others (docs/ci.md)
LISTENERS_SLOW = tuple(sorted(n for n, v in VARIANTS.items() if v.config == "kraft-listeners"
                              and n != "describe-controllers-from-voters"))


@pytest.mark.parametrize("variant", slow_unless(sorted(VARIANTS),
                                                set(VARIANTS) - set(LISTENERS_SLOW)))
def test_the_encoding_agrees_under_every_variant(variant, cache):
    """The per-variant cross-check, on the sample the pre-proof gate takes."""
    v = VARIANTS[variant]
    cfg = get_config(v.config)
    got = check_encoding(cfg, v.design, variant)
    missing = unencoded_actions(cfg)
    if missing:             # fail closed: a configuration with actions the encoding lacks
        assert not got.ok and got.kind == fidelity.NOT_ENCODED and missing[0] in got.reason
        return
    assert got.ok, got.reason
    assert got.states > 0 and got.arbitrary > 0


# --------------------------------------------------------------------------------------------
# the researcher's path, on a scratch copy: a new flag with its model branch and nothing else

_FLAG = "envelope_skips_cluster_action"


def _scratch_with_new_variant(tmp_path: Path) -> Path:
    """A copy of the package with the worked example of docs/design-variants.md applied
    (steps 2-4): a Design flag, its branch in model/actions.py, a Variant; no Z3 change."""
    root = tmp_path / "scratch"
    for pkg in ("model", "properties", "kipcheck", "impl"):
        shutil.copytree(ROOT / pkg, root / pkg,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    config = root / "model" / "config.py"
    text = config.read_text()
    anchor = "    registration_no_recheck_after_success: bool = False\n"
    assert anchor in text
    text = text.replace(anchor, anchor + f"    {_FLAG}: bool = False\n")
    end = ')}\n\n\ndef design_for('
    assert end in text
    text = text.replace(end, (
        '    Variant("envelope-skips-cluster-action",\n'
        '            "the KRaft controller accepts envelopes from senders without '
        'CLUSTER_ACTION",\n'
        '            "KIP-590 Routing Request Security; F-28", ("P4",),\n'
        f'            ("{_FLAG}",), "kraft-forward-leader-change"),\n') + end)
    config.write_text(text)
    actions = root / "model" / "actions.py"
    text = actions.read_text()
    old = ("    else:\n        if not sender_ca:\n"
           "            return _send_reply(s, cfg, r, reply, kafka.CLUSTER_AUTHORIZATION_FAILED, "
           "0)  # F-28\n")
    assert old in text
    actions.write_text(text.replace(old, old.replace("if not sender_ca:",
                                                     f"if not sender_ca and not d.{_FLAG}:")))
    return root


def _kipcheck(root: Path, cache_dir: Path, *args):
    env = dict(os.environ, PYTHONPATH=str(root), KIPCHECK_CACHE_DIR=str(cache_dir))
    return subprocess.run([sys.executable, "-m", "kipcheck", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("mode", [[], ["--bmc", "6"]], ids=["prove", "bmc"])
def test_a_new_flag_without_an_encoding_is_refused(tmp_path, mode):
    root = _scratch_with_new_variant(tmp_path)
    r = _kipcheck(root, tmp_path / "cache", "prove", "--config", "kraft-forward-leader-change",
                  "--variant", "envelope-skips-cluster-action", "--property", "all", *mode)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "PROVED" not in r.stdout and "no counterexample" not in r.stdout
    assert "Traceback" not in r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, r.stderr
    assert "controller_handles_envelope" in lines[0] and _FLAG in lines[0]
    assert "model/actions.py:" in lines[0]
    if not mode:
        # the correct design of the same copy is still answered: the flag is off there
        r = _kipcheck(root, tmp_path / "cache", "prove", "--config",
                      "kraft-forward-leader-change", "--property", "P4", "--max-k", "1")
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert "P4 forwarding-authorization: PROVED" in r.stdout
