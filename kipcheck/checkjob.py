"""``kipcheck check``: the standard verification suite on the default configurations.

Every engine that exists runs on every chosen configuration: the exhaustive explorer (correct
design and every design variant), a short Hypothesis stateful run (coverage against the
explorer's reachable set), Z3 k-induction proofs of P1-P4, and conformance of the reference
implementation against the model.  The jobs are independent and run on a process pool; the
results become one table of property x engine (plus the per-configuration and per-variant
tables) and the same tables as report.md / report.html with plots.

An engine whose package is missing is reported as "not installed", never silently skipped.
"""
from __future__ import annotations

import importlib.util
import time

ENGINES = ("explore", "stateful", "prove", "conform")
STATEFUL_PROFILE = "ci"


def available_engines() -> dict:
    """engine -> None if it can run here, else why not."""
    why = {e: None for e in ENGINES}
    if importlib.util.find_spec("z3") is None:
        why["prove"] = "z3-solver, a dependency of kipcheck, is missing (pip install z3-solver)"
    if importlib.util.find_spec("hypothesis") is None:
        why["stateful"] = "hypothesis is not installed"
    if (importlib.util.find_spec("properties.conformance") is None
            or importlib.util.find_spec("impl.cluster") is None):
        why["conform"] = "the conformance engine is not built yet"
    return why


def plan(configs, variants, engines, *, symmetry: bool, seed: int) -> list:
    """The jobs, longest first so that the pool finishes together."""
    from model.configs import CONFIGS
    from properties.symbolic.props import SUPPORTED
    jobs = []
    if "prove" in engines:
        # the encoding against the model under every design checked here (its pass is
        # cached, so the proofs after it find it done), then the proofs
        jobs += [("encoding", c, None) for c in configs]
        jobs += [("encoding", v.config, v.name) for v in variants if v.config in configs]
        # no proof is asked of a configuration that takes an action the encoding does not
        # state: its encoding job reports it "not encoded" (fail closed, docs/proofs.md)
        from properties.symbolic.next import encoded_configs
        jobs += [("prove", c, pid) for c in encoded_configs(configs) for pid in SUPPORTED]
    if "stateful" in engines:
        jobs += [("stateful", c, seed) for c in configs]
    if "conform" in engines:
        from properties.conformance import unsupported
        jobs += [("conform", c, seed) for c in configs if unsupported(CONFIGS[c]) is None]
    if "explore" in engines:
        jobs += [("explore", c, None, symmetry) for c in configs]
        jobs += [("explore", c, v.name, symmetry) for v in variants for c in configs
                 if c == v.config or CONFIGS[c].tier == "tiny"]
    return jobs


def run_job(job) -> dict:
    """One job, in a worker process; returns plain data.  A job that raises returns its
    exception's type and message as ``error`` instead: the other jobs' results are kept, and
    the check names the cause in one line (an exception crossing the process pool would end
    the whole run, and may not even pickle)."""
    kind = job[0]
    t0 = time.perf_counter()
    runner = {"explore": _explore, "stateful": _stateful, "prove": _prove,
              "encoding": _encoding, "conform": _conform}.get(kind)
    if runner is None:
        raise ValueError(f"unknown job {job!r}")
    try:
        out = runner(*job[1:])
    except Exception as e:      # reported as the job's error, never swallowed
        out = {"config": job[1], "variant": (job[2] or "correct")
               if kind in ("explore", "encoding") else "correct",
               "error": f"{type(e).__name__}: {e}"}
        if kind == "prove":
            out["property"] = job[2]
    out["engine"] = kind
    out.setdefault("seconds", time.perf_counter() - t0)
    return out


def describe_error(r: dict) -> str:
    """One line for a job that raised (``run_job``'s ``error``)."""
    what = r["engine"] + (f" {r['property']}" if r.get("property") else "")
    return f"{what} on {r['config']} [{r['variant']}] stopped with {r['error']}"


def _explore(config, variant, symmetry) -> dict:
    from properties.explore import explore
    from properties.kafka_spec import KafkaSpec
    spec = KafkaSpec.named(config, variant)
    r = explore(spec, symmetry=symmetry)
    trace = clause = loop_start = None
    violation = r.violation
    if r.violation:
        clause = spec.clause_violated(r.violating_state)[1]
        trace = [s.to_json() for s in r.trace]
    elif r.graph_violation:
        # SETTLE / DEADLOCK (properties/graphcheck.py) count as the violation of a named check;
        # the trace goes to the deadlocked state, or to the loop (from step loop_start) and
        # once round it
        from properties.graphcheck import GRAPH_CHECKS, SETTLE
        violation = r.graph_violation
        clause = GRAPH_CHECKS[violation][0]
        trace = [s.to_json() for s in r.graph_trace + r.graph_stem + r.graph_loop]
        if violation == SETTLE:
            loop_start = len(r.graph_trace) + len(r.graph_stem)
    return {"config": config, "variant": variant or "correct", "distinct": r.distinct,
            "seconds": r.seconds, "violation": violation, "clause": clause,
            "trace": trace, "loop_start": loop_start, "complete": r.complete,
            "witnesses_missing": list(r.witnesses_missing),
            "flags_unreached": list(spec.flags_unreached())}


def _stateful(config, seed) -> dict:
    from properties.coverage import is_cached, reachable
    from properties.kafka_spec import KafkaSpec
    from properties.stateful import fuzz_spec
    spec = KafkaSpec.named(config, None)
    reach = reachable(spec) if (spec.cfg.tier == "tiny" or is_cached(spec)) else None
    r = fuzz_spec(spec, seed=seed, profile=STATEFUL_PROFILE, reach=reach)
    if r.stop_reason == "interrupted":  # the engine stops gracefully on Ctrl-C; the check stops
        raise KeyboardInterrupt
    return {"config": config, "variant": "correct", "seed": seed, "violation": r.property,
            "clause": r.clause, "trace": r.trace.to_json() if r.trace else None,
            "steps": r.steps_run, "distinct": r.distinct,
            "steps_per_second": round(r.steps_per_second, 1),
            "coverage": r.coverage.states_share if r.coverage else None,
            "reachable": r.coverage.states_reachable if r.coverage else None,
            "timeline": [list(t) for t in r.timeline], "seconds": r.seconds,
            "witnesses_missing": list(r.witnesses_missing)}


def _prove(config, pid) -> dict:
    from properties.kafka_spec import KafkaSpec
    from properties.symbolic.engine import prove
    spec = KafkaSpec.named(config, None)
    r = prove(spec.cfg, spec.design, pid, spec.variant, max_k=2)
    return {"config": config, "variant": "correct", "property": pid, "status": r.status,
            "depth": r.depth, "seconds": r.seconds, "invariants": len(r.invariants),
            "detail": r.detail,
            "trace": r.counterexample.trace().to_json() if r.counterexample else None}


def _encoding(config, variant) -> dict:
    """The Z3 encoding against the model under one design (docs/proofs.md, fail closed)."""
    from properties.kafka_spec import KafkaSpec
    from properties.symbolic.fidelity import check_encoding
    from properties.symbolic.next import unencoded_actions
    spec = KafkaSpec.named(config, variant)
    v = check_encoding(spec.cfg, spec.design, spec.variant)
    # a variant whose flag has no Z3 branch yet, or a configuration that takes an action the
    # encoding does not state, is not answered by Z3 (the explorer and fuzz still check it); a
    # disagreement, or the correct design of an encoded configuration not encoded, blocks
    whole = bool(unencoded_actions(spec.cfg))
    blocking = not v.ok and (v.kind != "not encoded" or (spec.variant == "correct"
                                                          and not whole))
    return {"config": config, "variant": spec.variant, "ok": v.ok, "kind": v.kind,
            "blocking": blocking, "reason": v.reason,
            "states": v.states, "arbitrary": v.arbitrary, "cached": v.cached,
            "seconds": v.seconds}


def _conform(config, seed) -> dict:
    from properties.conformance import run_conformance
    r = run_conformance(config, seed=seed, profile="ci")
    return {"config": config, "variant": "correct", "seed": seed,
            "divergence": r.divergence_text() if r.divergence else None,
            "steps": r.steps, "runs": r.runs, "seconds": r.seconds,
            "steps_per_second": round(r.steps_per_second, 1)}


# ---- verdicts ---------------------------------------------------------------------------------

def summarize(results: list, configs: list, variants: list, engines: list, why_not: dict):
    """(property x engine rows, failures, per-config rows, per-variant rows)."""
    from model.configs import CONFIGS
    from properties.registry import PROPERTIES
    from properties.symbolic.props import SUPPORTED
    by = {}
    failures = []
    for r in results:
        if r.get("error"):          # no verdict: a failure of its own, not a cell's verdict
            failures.append(describe_error(r))
            continue
        key = (r["engine"], r["config"], r.get("variant"), r.get("property"))
        by[key] = r
    rows = []
    for p in PROPERTIES:
        row = [f"{p.id} {p.name}"]
        for e in ENGINES:
            if e not in engines:
                row.append("not run")
                continue
            if why_not.get(e):
                row.append(f"n/a ({why_not[e]})")
                continue
            if e == "conform":
                row.append("-")             # conformance has its own row below
                continue
            if e == "prove" and p.id not in SUPPORTED:
                row.append("-")
                continue
            bad, ok, asked = [], 0, 0
            for c in configs:
                r = by.get((e, c, "correct", p.id if e == "prove" else None))
                if r is None:
                    continue
                asked += 1
                if e == "prove":
                    if r["status"] == "proved":
                        ok += 1
                    else:
                        bad.append(f"{c}: {r['status']}")
                elif r.get("violation") == p.id:
                    bad.append(c)
                else:
                    ok += 1
            if bad:
                row.append("VIOLATED " + ", ".join(bad) if e != "prove" else "NOT PROVED " +
                           ", ".join(bad))
                failures.append(f"{p.id} by {e}: {', '.join(bad)}")
            else:
                row.append(("proved" if e == "prove" else "holds") + f" ({ok}/{asked})")
        rows.append(row)
    # coverage row: what each engine covered
    cov = ["what was covered"]
    for e in ENGINES:
        if e not in engines or why_not.get(e):
            cov.append("-")
            continue
        rs = [by.get((e, c, "correct", None)) for c in configs]
        rs = [r for r in rs if r]
        if e == "explore":
            states = sum(r["distinct"] for r in rs)
            complete = all(r["complete"] for r in rs)
            cov.append(f"{states:,} states, {'all' if complete else 'NOT all'} reachable")
        elif e == "stateful":
            shares = [r["coverage"] for r in rs if r["coverage"] is not None]
            steps = sum(r["steps"] for r in rs)
            cov.append(f"{steps:,} steps; {min(shares) * 100:.1f}-{max(shares) * 100:.1f} % of "
                       f"reachable" if shares else f"{steps:,} steps")
        elif e == "prove":
            n = sum(1 for r in results if r["engine"] == "prove")
            cov.append(f"{n} proofs, unbounded epochs/versions/incarnations")
        else:
            steps = sum(r["steps"] for r in rs)
            cov.append(f"{steps:,} model+impl steps")
    rows.append(cov)
    enc = [r for r in results if r["engine"] == "encoding" and not r.get("error")]
    if enc:
        bad = [r for r in enc if r["blocking"]]
        skipped = [r for r in enc if not r["ok"] and r not in bad]
        agree = sum(1 for r in enc if r["ok"])
        cell = ("DISAGREES " + ", ".join(f"{r['config']} [{r['variant']}]" for r in bad)) \
            if bad else f"agrees ({agree}/{len(enc)} designs)"
        if skipped:
            cell += "; not encoded: " + ", ".join(
                f"{r['config']} (every design)" if r["variant"] == "correct" else r["variant"]
                for r in skipped)
        rows.append(["Z3 encoding = model"] + ["-"] * 2 + [cell] + ["-"])
        failures += [f"Z3 encoding refused for {r['config']} [{r['variant']}]: {r['reason']}"
                     for r in bad]
    if "conform" in engines and not why_not.get("conform"):
        ran = [c for c in configs if ("conform", c, "correct", None) in by]
        bad = [c for c in ran if by[("conform", c, "correct", None)].get("divergence")]
        skipped = len(configs) - len(ran)
        conf = ["model = implementation"] + ["-"] * 3 + [
            (("DIVERGES " + ", ".join(bad)) if bad else f"agrees ({len(ran)}/{len(ran)})")
            + (f"; {skipped} not applicable" if skipped else "")]
        rows.append(conf)
        failures += [f"conformance diverges on {c}" for c in bad]
    # the correct design per configuration: witnesses
    per_config = []
    for c in configs:
        r = by.get(("explore", c, "correct", None))
        if r is None:
            continue
        total = len(CONFIGS[c].witnesses)
        per_config.append([c, f"{r['distinct']:,}", f"{r['seconds']:.2f}",
                           f"{total - len(r['witnesses_missing'])}/{total}",
                           r["violation"] or "none"])
        if r["violation"]:
            failures.append(f"correct design violates {r['violation']} on {c} (explore)")
        if r["witnesses_missing"]:
            failures.append(f"witnesses unreached on {c}: {', '.join(r['witnesses_missing'])}")
    for c in configs:
        r = by.get(("stateful", c, "correct", None))
        if r and r["violation"]:
            failures.append(f"correct design violates {r['violation']} on {c} (stateful, "
                            f"seed {r['seed']})")
    per_variant = []
    for v in variants:
        cells = []
        caught = False
        for c in configs:
            r = by.get(("explore", c, v.name, None))
            if r is None:
                cells.append("")
                continue
            cells.append(f"{r['violation']} ({len(r['trace'])})" if r["violation"] else
                         "- (flag unreached)" if r.get("flags_unreached") else "-")
            if r["violation"] in v.breaks and c == v.config:
                caught = True
        verdict = "yes" if caught else ("NO" if v.must_be_caught else "NOT CAUGHT (accepted)")
        per_variant.append([v.name, "/".join(v.breaks)] + cells + [verdict])
        if "explore" not in engines or why_not.get("explore"):
            per_variant[-1][-1] = "not run"             # cmd_check names them as unchecked
            continue
        if not caught and v.config in configs and v.must_be_caught:
            home = by.get(("explore", v.config, v.name, None)) or {}
            why = (" (indistinguishable from the correct design there: the model never read "
                   f"{', '.join(home['flags_unreached'])})" if home.get("flags_unreached")
                   else "")
            failures.append(f"variant {v.name} not caught on {v.config}{why}")
    return rows, failures, per_config, per_variant


# what the cells of the variant x configuration table mean (printed under it)
VARIANT_TABLE_LEGEND = (
    "P1 (7): the property the explorer found violated there, and its shortest trace's length; "
    "-: nothing violated; - (flag unreached): the model never read the "
    "variant's flag there, so that configuration cannot tell it from the correct design. "
    "Only the variant's home configuration decides 'caught'.")


def build_report(results, configs, variants, engines, why_not, rows, per_config, per_variant,
                 failures, seconds):
    from kipcheck.report import Figure, Report
    rep = Report("kipcheck check")
    rep.para(f"{len(configs)} configurations ({', '.join(configs)}); engines: "
             f"{', '.join(e for e in engines if not why_not.get(e))}; {len(results)} jobs in "
             f"{seconds:.1f} s.  Verdict: "
             + ("OK" if not failures else "FAILED: " + "; ".join(failures)))
    rep.heading("Property x engine (correct design)")
    rep.table(["property"] + list(ENGINES), rows)
    rep.heading("Correct design per configuration (explorer)")
    rep.table(["configuration", "states", "time (s)", "witnesses", "violation"], per_config)
    rep.heading("Design variants: property violated (shortest trace length)")
    rep.table(["variant", "must break"] + list(configs) + ["caught"], per_variant)
    rep.para(VARIANT_TABLE_LEGEND)
    results = [r for r in results if not r.get("error")]       # the verdict names those
    stateful = [r for r in results if r["engine"] == "stateful"]
    if stateful:
        fig = Figure("stateful-coverage", "Stateful run: distinct states over time", "line",
                     xlabel="seconds", ylabel="distinct states",
                     series={r["config"]: [(t[0], t[2]) for t in r["timeline"]]
                             for r in stateful})
        rep.figure(fig)
    explored = [r for r in results if r["engine"] == "explore" and r["variant"] == "correct"]
    if explored:
        rep.figure(Figure("explore-states", "Reachable states per configuration", "bar",
                          ylabel="states", bars=[(r["config"], r["distinct"]) for r in explored]))
    proofs = [r for r in results if r["engine"] == "prove"]
    if proofs:
        rep.figure(Figure("proof-seconds", "Z3 proof time per configuration (P1-P4 summed)",
                          "bar", ylabel="seconds",
                          bars=[(c, round(sum(r["seconds"] for r in proofs
                                              if r["config"] == c), 2)) for c in configs]))
    return rep
