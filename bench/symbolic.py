"""Benchmark of the Z3 engine (properties/symbolic/).

    python -m bench.symbolic [--out bench/results/symbolic.json] [--runs 3] [--quick]

Three sets of targets, each run ``--runs`` times in a fresh process (Z3 keeps state between
queries; a fresh process per run measures what a user's ``kipcheck prove`` pays, encoding
build included):

- proofs: ``prove`` (k-induction, k <= 2) for P1-P4 on every tiny configuration, correct
  design;
- bmc: ``bmc`` on each seeded variant that breaks P1-P4, to depth 8 or the length of the
  explorer's shortest counterexample where that is longer (found, length, time; the
  counterexample is replayed by the model inside ``bmc``);
- crosscheck: the encoding against the model on 10,000 sampled states (or all) per tiny
  configuration;
- gate: the check ``prove`` and ``--bmc`` run before they answer (fail closed,
  ``properties/symbolic/fidelity.py``), cold (an empty cache), per tiny configuration;
- bmc-deep: ``bmc`` to depth 12 on each small configuration, correct design (no
  counterexample, so every depth is searched: the worst case; DESIGN section 9's target is
  under 60 s).

Proof and BMC times exclude the gate (``gate=False``): it is measured on its own.

The JSON has every run, the medians, the machine and the commit.  Timings are measured here,
never asserted in tests (DESIGN section 9).  The issue's target: each proof under 30 s.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime as _dt
import json
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

from bench.explore import git_commit, machine_info

OUT = Path(__file__).parent / "results" / "symbolic.json"


def _targets(quick: bool) -> list[dict]:
    from model.config import VARIANTS
    from model.configs import TINY
    from properties.symbolic.next import encoded_configs
    from properties.symbolic.props import SUPPORTED
    out = []
    # only what the encoding states: the engine refuses the others (fail closed)
    configs = encoded_configs(TINY)
    configs = configs[:2] if quick else configs
    for config in configs:
        for pid in SUPPORTED:
            out.append({"kind": "prove", "config": config, "property": pid})
    for name, v in VARIANTS.items():
        pids = [p for p in v.breaks if p in SUPPORTED]
        if v.kind != "seeded" or not pids:
            continue
        if v.config not in configs:
            continue
        out.append({"kind": "bmc", "config": v.config, "variant": name, "property": pids[0],
                    "depth": max(8, _shortest(v.config, name))})
    for config in configs:
        out.append({"kind": "crosscheck", "config": config, "limit": 10000})
    for config in configs:
        out.append({"kind": "gate", "config": config})
    if not quick:
        from model.configs import SMALL
        for config in encoded_configs(SMALL):
            out.append({"kind": "bmc-deep", "config": config, "property": "P1", "depth": 12})
    return out


def _shortest(config: str, variant: str) -> int:
    """The length of the explorer's shortest counterexample (BFS on the tiny home
    configuration, well under a second): BMC is asked at least that deep, so every variant has
    a counterexample within the depth it is given."""
    from properties.explore import explore
    from properties.kafka_spec import KafkaSpec
    return len(explore(KafkaSpec.named(config, variant)).trace)


def _run(target: dict) -> dict:
    """One run of one target (in a fresh worker process); a refusal of the encoding is a
    result ("refused"), not a crash of the benchmark."""
    from properties.symbolic.fidelity import EncodingRefused
    t0 = time.perf_counter()
    try:
        return _run_target(target)
    except EncodingRefused as e:
        return {"seconds": time.perf_counter() - t0, "status": "refused", "detail": str(e),
                "ok": False}


def _run_target(target: dict) -> dict:
    from model.config import Design
    from properties.kafka_spec import get_config, get_design
    cfg = get_config(target["config"])
    t0 = time.perf_counter()
    if target["kind"] == "prove":
        from properties.symbolic.engine import prove
        r = prove(cfg, Design(), target["property"], max_k=2, gate=False)
        return {"seconds": time.perf_counter() - t0, "status": r.status, "depth": r.depth,
                "invariants": len(r.invariants), "detail": r.detail}
    if target["kind"] in ("bmc", "bmc-deep"):
        from properties.symbolic.engine import bmc
        variant = target.get("variant", "correct")
        r = bmc(cfg, get_design(variant), target["property"], target["depth"], variant,
                gate=False)
        return {"seconds": time.perf_counter() - t0, "found": r.found, "length": len(r.steps),
                "depth": r.depth, "clause": r.clause}
    if target["kind"] == "gate":
        import os
        import tempfile
        from properties.symbolic.fidelity import check_encoding
        with tempfile.TemporaryDirectory() as cache:
            os.environ["KIPCHECK_CACHE_DIR"] = cache
            v = check_encoding(cfg, Design())
        return {"seconds": time.perf_counter() - t0, "ok": v.ok, "states": v.states,
                "arbitrary": v.arbitrary, "reason": v.reason}
    from properties.symbolic.crosscheck import crosscheck
    r = crosscheck(cfg, Design(), limit=target["limit"], seed=2, solver_samples=200)
    return {"seconds": time.perf_counter() - t0, "ok": r.ok, "states": r.states,
            "reachable": r.reachable, "steps": r.steps, "disabled": r.disabled,
            "solver_checks": r.solver_checks, "clause_checks": r.clause_checks,
            "mismatches": r.mismatches[:3]}


def _name(t: dict) -> str:
    if t["kind"] == "prove":
        return f"prove {t['property']} {t['config']}"
    if t["kind"] == "bmc":
        return f"bmc {t['property']} {t['config']}[{t['variant']}]"
    if t["kind"] == "bmc-deep":
        return f"bmc {t['property']} {t['config']} to depth {t['depth']}"
    return f"{t['kind']} {t['config']}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="two configurations, one run")
    ap.add_argument("--only", metavar="TEXT", help="only the targets whose name contains TEXT "
                    "(e.g. 'prove P3 kraft-listeners')")
    args = ap.parse_args(argv)
    runs = 1 if args.quick else args.runs
    results = []
    ctx = multiprocessing.get_context("spawn")
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    targets = [t for t in _targets(args.quick) if not args.only or args.only in _name(t)]
    for t in targets:
        samples = []
        for _ in range(runs):
            with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as pool:
                samples.append(pool.submit(_run, t).result())
        secs = [s["seconds"] for s in samples]
        entry = {**t, "name": _name(t), "runs": samples,
                 "median_seconds": round(statistics.median(secs), 3)}
        results.append(entry)
        last = samples[-1]
        if last.get("status") == "refused":
            what = "refused"
        elif t["kind"] in ("crosscheck", "gate"):
            what = "ok" if last["ok"] else "MISMATCH"
        else:
            what = last.get("status") or (f"found {last['length']} steps" if last.get("found")
                                          else "not found")
        print(f"{entry['name']:<62} {entry['median_seconds']:7.2f} s  {what}", flush=True)
        doc = {"benchmark": "symbolic", "started": started, "commit": git_commit(),
               "machine": machine_info(), "runs_per_target": runs, "targets": results}
        Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    slow = [e["name"] for e in results if e["kind"] == "prove" and e["median_seconds"] >= 30]
    print(f"wrote {args.out}; proofs at or over 30 s: {', '.join(slow) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
