"""The Z3 engine: the encoding against the executable model, k-induction proofs of P1-P4 on
every tiny configuration, bounded model checking of the variants (each counterexample replayed
by the model), and ``kipcheck prove``.

Proof times are measured by bench/symbolic.py, never asserted here.  The full cross-check
(10,000 sampled states per configuration, 200 solver samples, every variant's design) is
marked slow; the default run checks the pre-proof gate's sample per configuration
(fidelity.SAMPLE: 400 reachable and 200 arbitrary states, 8 solver samples).  The default run
proves P1-P4 on one configuration of each mode and runs BMC on one variant per
property; the slow tier does every configuration and variant (docs/ci.md)."""
import json

import pytest

z3 = pytest.importorskip("z3")

from model import next as model_next  # noqa: E402
from model.config import VARIANTS, Design  # noqa: E402
from model.configs import TINY as ALL_TINY  # noqa: E402
from properties.kafka_spec import get_config  # noqa: E402
from properties.symbolic import actions as sym_actions  # noqa: E402
from properties.symbolic import invariants as inv_mod  # noqa: E402
from properties.symbolic import fidelity  # noqa: E402
from properties.symbolic.crosscheck import crosscheck, reachable_states  # noqa: E402
from properties.symbolic.fidelity import check_encoding  # noqa: E402
from properties.symbolic.engine import bmc, prove  # noqa: E402
from properties.symbolic.props import SUPPORTED  # noqa: E402
from properties.symbolic.state import Layout  # noqa: E402
from properties.symbolic.next import encoded_configs, unencoded_actions  # noqa: E402
from properties.trace import replay  # noqa: E402
from cli_helpers import one_line, run  # noqa: E402
from tiers import slow_unless  # noqa: E402

# the tiny configurations the encoding states every action of (the others are refused:
# test_a_configuration_with_unencoded_actions_is_refused)
TINY = encoded_configs(ALL_TINY)
UNENCODED = tuple(c for c in ALL_TINY if c not in TINY)
# the seeded variants of DESIGN section 5 that break P1-P4, with the property they break
P1_P4_VARIANTS = [(name, next(p for p in v.breaks if p in SUPPORTED))
                  for name, v in VARIANTS.items()
                  if v.kind == "seeded" and any(p in SUPPORTED for p in v.breaks)
                  and v.config in TINY]
# The default tier (docs/ci.md) proves every property on one configuration of each mode and
# finds one variant of each property by BMC; the slow tier does the rest.
PROOF_DEFAULT = ("zk-envelope-security", "kraft-registration")
# the per-configuration checks of the encoding: every configuration but zk-migration-bounce
# (zk-migration is the migration's representative; docs/ci.md)
PER_CONFIG_DEFAULT = tuple(c for c in TINY if c != "zk-migration-bounce")
BMC_DEFAULT = (("brokers-write-zk", "P1"), ("reforward-forwarded", "P2"),
               ("registration-pending-stuck", "P3"), ("envelope-any-listener", "P4"))
# the depth BMC searches to: 8, or a variant's shortest counterexample where that is longer
# (the explorer's, docs/design-variants.md)
BMC_DEPTH = {"registration-bumps-same-incarnation": 11}


def test_every_model_action_has_an_encoding_of_the_same_name():
    """Every encoding is of a model action of the same name; the model actions without one
    are exactly those of KRaft and ZooKeeper broker registration and of the topics requests
    need (not encoded yet: refused below)."""
    assert set(sym_actions.ENCODINGS) <= set(model_next.ACTION_NAMES)
    assert set(model_next.ACTION_NAMES) - set(sym_actions.ENCODINGS) == {
        a.name for a in model_next.ACTION_TABLE
        if a.requires in ("broker_registration", "zk_broker_registration", "internal_topics")}
    for name, fn in sym_actions.ENCODINGS.items():
        assert fn.__name__ == name


@pytest.mark.parametrize("config", UNENCODED)
def test_a_configuration_with_unencoded_actions_is_refused(config, capsys):
    """Fail closed: no proof, no BMC and no fidelity pass for a configuration that can take
    an action the encoding does not state; the refusal names the actions."""
    cfg = get_config(config)
    missing = unencoded_actions(cfg)
    assert missing
    v = check_encoding(cfg, Design())
    assert not v.ok and v.kind == fidelity.NOT_ENCODED and missing[0] in v.reason
    for engine in (lambda: prove(cfg, Design(), "P1"), lambda: bmc(cfg, Design(), "P1", 3)):
        with pytest.raises(fidelity.EncodingRefused, match=missing[0]):
            engine()
    code, out, err = run(["prove", "--config", config, "--property", "P1"], capsys)
    assert code != 0 and missing[0] in err and "PROVED" not in out
    # kipcheck check asks no proof of it and reports it "not encoded", which does not fail
    from kipcheck.checkjob import _encoding, plan
    jobs = plan([config], [], ["prove"], symmetry=False, seed=0)
    assert not [j for j in jobs if j[0] == "prove"] and ("encoding", config, None) in jobs
    enc = _encoding(config, None)
    assert not enc["ok"] and enc["kind"] == fidelity.NOT_ENCODED and not enc["blocking"]


@pytest.mark.parametrize("config", slow_unless(TINY, PER_CONFIG_DEFAULT))
def test_capacities_hold_every_reachable_state(config):
    """The bounds every proof states: no explored state needs more slots than the layout
    has (Layout.values raises CapacityExceeded otherwise)."""
    cfg = get_config(config)
    lay = Layout(cfg)
    states, total = reachable_states(cfg, Design())
    assert len(states) == total > 100
    for s in states:
        lay.values(s)


@pytest.mark.parametrize("config", slow_unless(TINY, PER_CONFIG_DEFAULT))
def test_encoding_agrees_with_the_model(config):
    """The sample every proof checks first (fidelity.SAMPLE: reachable and arbitrary states,
    solver samples); cached, so the proofs below find it done.  The slow tier checks 10,000
    states."""
    v = check_encoding(get_config(config), Design())
    assert v.ok, v.reason
    from tests.test_tiny_configs import PINNED      # a tiny configuration may have fewer
    assert v.states == min(fidelity.SAMPLE["limit"], PINNED[config][0])
    assert v.arbitrary == fidelity.SAMPLE["arbitrary"]
    assert v.steps > v.states + v.arbitrary


@pytest.mark.slow
@pytest.mark.parametrize("config", TINY)
def test_encoding_agrees_with_the_model_on_10000_states(config):
    res = crosscheck(get_config(config), Design(), limit=10000, seed=2, solver_samples=200)
    assert res.ok, res.mismatches
    assert res.states == min(10000, res.reachable)


@pytest.mark.slow
@pytest.mark.parametrize("variant", [v for v in VARIANTS if VARIANTS[v].config in TINY])
def test_encoding_agrees_with_the_model_under_each_variant(variant):
    v = VARIANTS[variant]
    res = crosscheck(get_config(v.config), v.design, variant, limit=3000, seed=3,
                     solver_samples=30)
    assert res.ok, res.mismatches


def _elect_without_bumping_the_epoch(S, cfg, d, n):
    """broker_elects_controller with a seeded bug: /controller_epoch is not incremented."""
    enabled, S2 = _ORIGINAL["broker_elects_controller"](S, cfg, d, n)
    return enabled, S2.set({"zk.epoch": S["zk.epoch"]}).set_node(n, zk_epoch=S["zk.epoch"])


_ORIGINAL = dict(sym_actions.ENCODINGS)


def test_crosscheck_catches_an_altered_action(monkeypatch):
    """The cross-check is not vacuous: alter one action's encoding and it reports where."""
    monkeypatch.setitem(sym_actions.ENCODINGS, "broker_elects_controller",
                        _elect_without_bumping_the_epoch)
    res = crosscheck(get_config("zk-forward-zombie"), Design(), solver_samples=0)
    assert not res.ok
    assert all(m.startswith("broker_elects_controller[") for m in res.mismatches)
    assert any("zk:" in m and "epoch=" in m for m in res.mismatches)


def test_crosscheck_catches_an_altered_migration_action(monkeypatch):
    """The migration's actions are checked like the others: an encoding of the entity-config
    write whose CheckOp passes on any /controller (the 3.8.0 finding's check) under the
    correct design disagrees with the model there."""
    from dataclasses import replace

    def check_passes_recreated(S, cfg, d, n):
        return _ORIGINAL["broker_writes_entity_config"](
            S, cfg, replace(d, entity_config_check_passes_recreated_controller=True), n)
    monkeypatch.setitem(sym_actions.ENCODINGS, "broker_writes_entity_config",
                        check_passes_recreated)
    res = crosscheck(get_config("zk-migration"), Design(), solver_samples=0)
    assert not res.ok
    assert all(m.startswith("broker_writes_entity_config[") for m in res.mismatches)


def test_crosscheck_catches_an_altered_guard(monkeypatch):
    def times_out_early(S, cfg, d, n):
        enabled, S2 = _ORIGINAL["channel_times_out_request"](S, cfg, d, n)
        return z3.Or(enabled, S.node(n, "ch.queue.len") > 0), S2
    monkeypatch.setitem(sym_actions.ENCODINGS, "channel_times_out_request", times_out_early)
    res = crosscheck(get_config("kraft-forward-leader-change"), Design(), solver_samples=0,
                     limit=500)
    assert any("model disabled, encoding enabled" in m for m in res.mismatches)


def _differ(a, b):
    """A Z3 formula satisfiable iff the two symbolic states differ somewhere (or in fits)."""
    diffs = [a.v[k] != b.v[k] for k in a.lay.keys if not a.v[k].eq(b.v[k])]
    return z3.Or(*diffs, a.fits != b.fits)


def test_flat_updates_equal_the_step_by_step_ones():
    """Two updates written flat for the solver's sake (the commit of a batch of records,
    P3's slowest query) are the step-by-step ones on an *arbitrary* state: Sym.seq_extend is
    one seq_append per record of the source, and _send_reply's one network add is the two
    exclusive adds of an envelope or a registration response."""
    from properties.symbolic.state import And, Eq, If, Not
    cfg = get_config("kraft-registration")
    S = Layout(cfg).fresh("s")
    fields = ("kind", "a", "b", "epoch", "writer", "via_envelope", "sender_cluster_action")
    chained = S
    for k, used in S.seq_items("q.uncommitted"):
        chained = chained.seq_append("q.log", {f: S[f"q.uncommitted.{k}.{f}"] for f in fields},
                                     when=used)
    flat = S.seq_extend("q.log", "q.uncommitted", {f: f for f in fields})
    solver = z3.Solver()
    solver.add(_differ(chained, flat))
    assert solver.check() == z3.unsat

    A = sym_actions

    def two_adds(S, src, reply, env_err, inner_err, when):      # the former _send_reply
        how = reply["how"]
        code = If(Not(Eq(env_err, 0)), env_err, inner_err)
        S2 = A._respond(S, cfg, reply["to"], code, envelope_error=env_err,
                        when=And(when, Eq(how, A.REPLY_CLIENT)))
        alive = S.node(reply["to"], "alive")
        S2 = S2.net_add(A._msg(A.ENVELOPE_RESPONSE, src, reply["to"], reply["listener"],
                               reply["key"], env_err, inner_err),
                        when=And(when, Eq(how, A.REPLY_ENVELOPE), alive))
        reg = And(when, Eq(how, A.REPLY_REGISTRATION), alive,
                  Eq(S.node(reply["to"], "incarnation"), reply["key"]))
        return S2.net_add(A._msg(A.REGISTRATION_RESPONSE, src, reply["to"], reply["listener"],
                                 reply["to"], If(Not(Eq(env_err, 0)), env_err, inner_err),
                                 reply["key"]), when=reg)
    reply = {f: z3.Int(f"reply.{f}") for f in ("how", "to", "key", "listener", "hops")}
    args = (z3.Int("src"), reply, z3.Int("env_err"), z3.Int("inner_err"), z3.Bool("when"))
    solver = z3.Solver()
    solver.add(_differ(two_adds(S, *args), A._send_reply(S, cfg, *args)))
    assert solver.check() == z3.unsat


@pytest.mark.parametrize("pid", SUPPORTED)
@pytest.mark.parametrize("config", slow_unless(TINY, PROOF_DEFAULT))
def test_property_is_proved_by_induction(config, pid):
    res = prove(get_config(config), Design(), pid, max_k=1)
    assert res.status == "proved", res.detail
    assert res.depth == 1
    if pid == "P3":         # both clauses: the quiescent one follows from the invariants
        assert "registration-carries-current-incarnation" in res.detail
    assert set(res.invariants) <= set(inv_mod.INVARIANTS)
    assert "unbounded: epochs, zkVersions, incarnations" in res.bounds


def test_a_proof_needs_its_invariants():
    """Without the invariant tying a zkVersion to its epoch, P1 is not inductive: the CTI is
    a state where a zombie's write lands with a stale epoch."""
    cfg = get_config("zk-forward-zombie")
    invs = [i for i in inv_mod.for_property(cfg, "P1")
            if i.name != "current-version-current-epoch"]
    res = prove(cfg, Design(), "P1", max_k=1, invariants=invs)
    assert res.status == "unknown"
    assert "controller_processes_event" in res.detail
    assert "zk-writes-carry-current-epoch" in res.detail


@pytest.mark.parametrize("variant,pid", slow_unless(P1_P4_VARIANTS, BMC_DEFAULT))
def test_bmc_finds_each_variant_and_the_model_replays_it(variant, pid):
    v = VARIANTS[variant]
    cfg = get_config(v.config)
    depth = BMC_DEPTH.get(variant, 8)
    res = bmc(cfg, v.design, pid, depth, variant)
    assert res.found, f"{variant}: no counterexample to {pid} within depth {depth}"
    # bmc replays internally; replay again through the trace format, as a user would
    trace = res.trace()
    assert trace.engine == "bmc" and len(trace.steps) == res.depth <= depth
    outcome = replay(trace)
    assert outcome.reproduced and outcome.violation == (pid, res.clause)
    proof = prove(cfg, v.design, pid, variant, max_k=1)
    assert proof.status != "proved", proof.detail
    assert proof.cti is not None or proof.counterexample is not None


@pytest.mark.parametrize("variant,pid", [("brokers-write-zk", "P1"),
                                         ("registration-pending-stuck", "P3")])
def test_bmc_beyond_the_shortest_finds_the_shortest(variant, pid):
    """The first query asks for a violation at step k with the property holding at steps
    1..k-1 (``engine._holds_before``): a shorter counterexample must still be found, padded by
    stutters at the start, and then reported at the explorer's shortest length."""
    from properties.explore import explore as bfs
    from properties.kafka_spec import KafkaSpec
    v = VARIANTS[variant]
    shortest = len(bfs(KafkaSpec.named(v.config, variant)).trace)
    res = bmc(get_config(v.config), v.design, pid, shortest + 4, variant)
    assert res.found and res.depth == shortest
    assert replay(res.trace()).reproduced


def test_no_lemmas_when_the_initial_state_violates():
    """The padding argument needs the initial state to satisfy the property: where it does
    not, ``_holds_before`` adds nothing (the path of length 0 is then the answer)."""
    from properties.symbolic.engine import _holds_before
    ok, bad = [("c", z3.BoolVal(True))], [("c", z3.BoolVal(False))]
    assert len(_holds_before(lambda d: ok, 5)) == 4
    assert _holds_before(lambda d: bad if d == 0 else ok, 5) == []
    assert _holds_before(lambda d: ok, 1) == []


# The ZK-to-KRaft migration's P1 variants (two seeded, one finding) on their home
# configurations, and the depth of the explorer's shortest counterexample of each
# (docs/design-variants.md)
MIGRATION_VARIANTS = {"claims-before-brokers-ready": 2, "entity-config-write-unchecked": 2,
                      "entity-config-check-passes-recreated-controller": 3}
MIGRATION_CONFIGS = ("zk-migration", "zk-migration-bounce")


@pytest.mark.parametrize("variant", MIGRATION_VARIANTS)
def test_bmc_finds_each_migration_variant_at_the_explorers_depth(variant):
    """BMC finds each migration variant's P1 violation at the depth of the explorer's
    shortest counterexample (BFS), no deeper: the KRaft controller's claim, then a broker's
    own ZooKeeper write of an epoch the KRaft controller holds; the model replays it."""
    from properties.explore import explore as bfs
    from properties.kafka_spec import KafkaSpec
    v = VARIANTS[variant]
    explored = bfs(KafkaSpec.named(v.config, variant))
    depth = len(explored.trace)
    assert explored.violation == "P1" and depth == MIGRATION_VARIANTS[variant]
    res = bmc(get_config(v.config), v.design, "P1", depth, variant)
    assert res.found and res.depth == depth
    assert res.clause == "kraft-controller-sole-zk-writer"
    actions = [st.action for st in res.steps]
    assert "controller_claims_zk_leadership" in actions[:-1]
    assert actions[-1] in ("client_sends_request", "broker_writes_entity_config")
    outcome = replay(res.trace())
    assert outcome.reproduced and outcome.violation == ("P1", res.clause)


@pytest.mark.parametrize("config", slow_unless(MIGRATION_CONFIGS, keep=("zk-migration",)))
def test_bmc_finds_nothing_in_the_correct_migration(config):
    """The correct design of each migration configuration: no P1 violation within 6 steps
    (three times the variants' depth; the slow tier searches the whole state graph's depth)."""
    res = bmc(get_config(config), Design(), "P1", 6)
    assert not res.found and res.depth == 6


@pytest.mark.slow
@pytest.mark.parametrize("config", MIGRATION_CONFIGS)
def test_bmc_finds_nothing_in_the_correct_migration_to_the_graphs_depth(config):
    """Exhaustive within the capacities: BMC searches as deep as the explorer's deepest BFS
    level (15 steps on zk-migration, 18 on zk-migration-bounce), so every reachable state is
    within the bound (about 110 s and 40 s)."""
    from properties.explore import explore as bfs
    from properties.kafka_spec import KafkaSpec
    explored = bfs(KafkaSpec.named(config), stop_at_violation=False)
    assert explored.complete and explored.violation is None
    depth = explored.depth
    res = bmc(get_config(config), Design(), "P1", depth)
    assert not res.found and res.depth == depth


@pytest.mark.parametrize("config,dropped,action", slow_unless([
    ("zk-migration-bounce", "claim-after-bounce", "client_sends_request"),
    ("zk-migration", "entity-config-reads-not-ahead", "broker_writes_entity_config"),
], keep=(("zk-migration", "entity-config-reads-not-ahead", "broker_writes_entity_config"),)))
def test_the_migration_proof_needs_its_invariants(config, dropped, action):
    """P1 on a migration configuration is 1-inductive with the migration invariants; without
    the one that ties a broker's own write to a ZK controller's epoch, the CTI is that write
    landing in an epoch the KRaft controller holds."""
    cfg = get_config(config)
    invs = inv_mod.for_property(cfg, "P1")
    assert dropped in {i.name for i in invs}
    assert prove(cfg, Design(), "P1", max_k=1, invariants=invs).status == "proved"
    res = prove(cfg, Design(), "P1", max_k=1,
                invariants=[i for i in invs if i.name != dropped])
    assert res.status == "unknown"
    assert action in res.detail and "kraft-controller-sole-zk-writer" in res.detail


def test_quiescent_clause_needs_the_work_pending_invariant():
    """Without the invariant that unfinished registration work stays visible, the other
    invariants are still inductive, but they allow a quiescent state whose log carries another
    incarnation: the proof says so instead of claiming the quiescent clause."""
    cfg = get_config("kraft-registration")
    invs = [i for i in inv_mod.for_property(cfg, "P3") if i.name != "registration-work-pending"]
    res = prove(cfg, Design(), "P3", max_k=1, invariants=invs)
    assert res.status == "unknown"
    assert "do not imply" in res.detail
    assert "registration-carries-current-incarnation" in res.detail


def test_pending_stuck_breaks_the_pending_rpc_invariant():
    """KAFKA-20247 as the proof sees it: after a registration times out, pendingRpc stays set
    with nothing in the channel, so the invariant that makes P3's quiescent clause provable
    fails on exactly that step (the correct design's proof is 1-inductive)."""
    v = VARIANTS["registration-pending-stuck"]
    proof = prove(get_config(v.config), v.design, "P3", v.name, max_k=1)
    assert proof.status == "unknown"
    assert "channel_times_out_request" in proof.detail
    assert "pending-rpc-has-item" in proof.detail


def test_bmc_finds_nothing_in_the_correct_design():
    res = bmc(get_config("zk-envelope-security"), Design(), "P4", 4)
    assert not res.found and res.depth == 4
    assert "network" in res.capacity


# -- kipcheck prove ----------------------------------------------------------------------------

@pytest.fixture
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_cli_prove_prints_one_line_per_property(_in_tmp, capsys):
    code, out, err = run(["prove", "--config", "zk-envelope-security", "--property", "P1,P4",
                          "--max-k", "1"], capsys)
    assert code == 0, out + err
    lines = out.splitlines()
    assert lines[0].startswith("prove zk-envelope-security [correct]: P1, P4 by k-induction")
    # fail closed: the encoding was checked against the model under this design first
    assert lines[1].startswith("encoding: agrees with the model under this design (")
    assert lines[2].startswith("P1 single-writer: PROVED, 1-induction with ")
    assert lines[3].startswith("P4 forwarding-authorization: PROVED, 1-induction with ")
    assert lines[4].startswith("bounds: fixed: 3 nodes, 3 clients")


def test_cli_bmc_counterexample_replays(_in_tmp, capsys):
    code, out, err = run(["prove", "--config", "zk-envelope-security", "--property", "P4",
                          "--variant", "envelope-any-listener", "--bmc", "3", "--json"], capsys)
    assert code == 1, out + err
    doc = json.loads(out)
    assert doc["results"][0]["found"] and doc["results"][0]["steps"] == 2
    trace_file = doc["trace_files"][0]
    assert (_in_tmp / trace_file).exists()
    code, out, _ = run(["replay", trace_file], capsys)
    assert code == 1 and "reproduced:" in out and "violates P4" in out


def test_cli_unknown_proof_exits_3(_in_tmp, capsys):
    code, out, _ = run(["prove", "--config", "zk-forward-zombie", "--property", "P1",
                        "--variant", "zombie-writes-unfenced", "--max-k", "1"], capsys)
    assert code == 3
    assert "UNKNOWN, not 1-inductive: after controller_processes_event[0]" in out


@pytest.mark.parametrize("argv,needle", [
    (["prove", "--config", "nope"], "unknown configuration 'nope'"),
    (["prove", "--config", "zk-forward-zombie", "--property", "P7"], "--property: P7"),
    (["prove", "--config", "zk-forward-zombie", "--bmc", "-1"], "--bmc"),
    (["prove", "--config", "zk-forward-zombie", "--max-k", "9"], "--max-k"),
    (["prove", "--config", "zk-forward-zombie", "--variant", "nope"], "unknown variant"),
])
def test_cli_prove_bad_input_is_one_line_and_exit_2(_in_tmp, capsys, argv, needle):
    code, _, err = run(argv, capsys)
    assert code == 2
    assert needle in one_line(err)
