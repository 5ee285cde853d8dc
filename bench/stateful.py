"""Benchmark of the Hypothesis stateful engine: steps/s and coverage over time, per mode.

Runs properties/stateful.py's engine, plain Hypothesis vs swarm vs novelty vs swarm + novelty, on
every tiny and small configuration, each "in 5 minutes on 2 cores".

    python -m bench.stateful [--configs NAME ...] [--modes MODE ...] [--seconds 300]
                             [--checkpoint 15] [--seed 0] [--workers 2] [--twophase 5]
                             [--out bench/results/stateful.json] [--quick] [--table]

For every configuration x mode, ``--workers`` (2) fresh processes (``spawn``) fuzz the
configuration with seeds ``seed``, ``seed + 1``, ... for ``--seconds`` each, at the same time.
Every worker snapshots its visited fingerprints every ``--checkpoint`` seconds (in the engine's
progress callback); the parent merges them: coverage at time t = |union of the workers' visited
sets at t| / |reachable set|.  A worker stops early once its own visited set is the whole
reachable set (it records when).  The reachable sets (the explorer's, cached on disk by
``properties.coverage``) are computed or loaded first, before anything is timed; zk-small's takes
about 6 minutes the first time.

Modes: ``plain`` (no swarm, no novelty: plain Hypothesis stateful testing over the model, with
restarts), ``swarm``, ``novelty`` and ``swarm+novelty`` (the engine's default).

``--configs``: Kafka configuration names, ``tiny``, ``small``, or ``TwoPhase-N`` (default: every
tiny then every small configuration, then TwoPhase-``--twophase``).  ``--twophase N``: also run
TLA+'s TwoPhase with N RMs, for comparison with the published anchor (plain Hypothesis stateful
testing visits 19.7 % of TwoPhase-5's 8,832 states after 144 s); default 5 when ``--configs`` is
not given, else 0 (skip).  ``--quick``: 20 s budgets, checkpoints every 5 s, tiny
configurations (and TwoPhase-5) only.  ``--table``: print the table of the results file and exit.

Results are merged into ``--out``: each (configuration, mode) entry is replaced by the new one
and every other entry is kept, so partial runs add up; each entry has its own timestamp,
parameters, machine and commit.  The file is rewritten after every entry.  Timings are measured
here, never asserted in tests.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime as _dt
import json
import multiprocessing
import os
import platform
import re
import subprocess
import sys
import time
from array import array

SCHEMA = "kipcheck-bench-stateful/1"
MODES = {"plain": (False, False), "swarm": (True, False), "novelty": (False, True),
         "swarm+novelty": (True, True)}
DEFAULT_MODES = ("plain", "swarm", "swarm+novelty", "novelty")
EXAMPLES_PER_ROUND = 10           # the built-in profiles' round shape
STEPS_PER_EXAMPLE = 100
# the published anchor: plain Hypothesis stateful testing on TwoPhase-5
ANCHOR = {"target": "TwoPhase-5", "seconds": 144.0, "plain_share": 0.197}


# ---- targets --------------------------------------------------------------------------------

def _target(name: str) -> dict:
    if name.lower().startswith("twophase-"):
        n = int(name.split("-", 1)[1])
        return {"name": f"TwoPhase-{n}", "kind": "twophase", "n": n}
    from model.configs import CONFIGS
    if name not in CONFIGS:
        raise ValueError(f"unknown configuration {name!r}; configurations: "
                         f"{', '.join(CONFIGS)}, tiny, small, TwoPhase-N")
    return {"name": name, "kind": "kafka", "config": name}


def resolve_targets(names, twophase: int) -> list[dict]:
    from model.configs import SMALL, TINY
    out: list[str] = []
    for item in names:
        for name in (n.strip() for n in item.split(",")):
            if not name:
                continue
            group = {"tiny": TINY, "small": SMALL, "all": TINY + SMALL}.get(name)
            for n in (group or (name,)):
                if n not in out:
                    out.append(n)
    if twophase and f"TwoPhase-{twophase}" not in out:
        out.append(f"TwoPhase-{twophase}")
    return [_target(n) for n in out]


def make_spec(target: dict):
    if target["kind"] == "twophase":
        from bench.twophase import TwoPhaseSpec
        return TwoPhaseSpec(target["n"])
    from properties.kafka_spec import KafkaSpec
    return KafkaSpec.named(target["config"])


# ---- the worker (a fresh process) -----------------------------------------------------------

def run_worker(job: dict) -> dict:
    """One fuzzing run of ``job["target"]`` in mode ``job["mode"]`` with ``job["seed"]``,
    snapshotting the visited fingerprints every ``job["checkpoint"]`` seconds."""
    from properties.stateful import Profile, fuzz_spec
    spec = make_spec(job["target"])
    total = job["reachable"]
    budget = float(job["seconds"])
    every = float(job["checkpoint"])
    swarm, novelty = MODES[job["mode"]]
    # the time budget is the stop; the rounds are only an upper bound (room for 100,000 rule
    # calls a second, ~20 x the fastest seen), since fuzz_spec lists the round seeds up front
    rounds = int(budget * 100) + 1000
    profile = Profile("bench", rounds=rounds, examples_per_round=EXAMPLES_PER_ROUND,
                      steps_per_example=STEPS_PER_EXAMPLE, time_budget=budget)
    checkpoints: list = []          # (nominal t, actual t, steps, rule calls, visited array)
    mark = {"next": 1, "full_at": None, "snapshot_seconds": 0.0}

    def progress(stats):
        t = stats.elapsed()
        if mark["next"] * every < budget and t >= mark["next"] * every:
            t0 = time.perf_counter()
            snap = array("Q", stats.seen)
            mark["snapshot_seconds"] += time.perf_counter() - t0
            while mark["next"] * every < budget and t >= mark["next"] * every:
                checkpoints.append((mark["next"] * every, round(t, 3), stats.steps_run,
                                    stats.rule_calls, snap))
                mark["next"] += 1
        if mark["full_at"] is None and len(stats.seen) >= total:
            # every visited state is reachable (checked by the parent), so this is 100 %:
            # stop.  The engine checks its deadline right after this callback, between two
            # examples, and ends the run as if its time budget were spent.
            mark["full_at"] = round(t, 3)
            stats.deadline = stats.started

    cpu0 = time.process_time()
    r = fuzz_spec(spec, seed=job["seed"], profile=profile, swarm=swarm, novelty=novelty,
                  time_budget=budget, progress=progress, minimise_seconds=10.0)
    cpu = time.process_time() - cpu0
    if mark["full_at"] is None and len(r.visited) >= total:
        mark["full_at"] = round(r.timeline[-1][0], 3) if r.timeline else None
    return {
        "seed": job["seed"], "steps_run": r.steps_run, "rule_calls": r.rule_calls,
        "examples": r.examples, "restarts": r.restarts, "rounds": r.rounds,
        "search_seconds": r.search_seconds, "seconds": r.seconds, "cpu_seconds": cpu,
        "steps_per_second": r.steps_per_second, "distinct": r.distinct,
        "stop_reason": "complete" if mark["full_at"] is not None else r.stop_reason,
        "full_at": mark["full_at"], "snapshot_seconds": mark["snapshot_seconds"],
        "checkpoints": checkpoints, "visited": array("Q", r.visited),
        "action_counts": dict(r.action_counts),
        "witnesses_missing": list(r.witnesses_missing), "found": r.found,
        "property": r.property, "clause": r.clause,
        "counterexample_length": len(r.steps) if r.steps else None,
        "timeline": list(r.timeline),
    }


def _run_workers(target: dict, mode: str, reach_count: int, seconds: float, checkpoint: float,
                 seeds: list[int]) -> list[dict]:
    ctx = multiprocessing.get_context("spawn")
    jobs = [{"target": target, "mode": mode, "seed": s, "reachable": reach_count,
             "seconds": seconds, "checkpoint": checkpoint} for s in seeds]
    with concurrent.futures.ProcessPoolExecutor(max_workers=len(jobs), mp_context=ctx) as pool:
        return list(pool.map(run_worker, jobs))


# ---- merging --------------------------------------------------------------------------------

def _share_at(timeline, t: float, total: int):
    """A worker's own share of the reachable set at time ``t`` (its last progress tick <= t)."""
    best = None
    for secs, _steps, distinct in timeline:
        if secs <= t:
            best = distinct
        else:
            break
    return None if best is None else best / total


def _thin(timeline, every: float, total: int) -> list:
    """The timeline (seconds, steps, distinct) as (seconds, steps, share), one point per
    ``every`` seconds and the last one."""
    out, nxt = [], 0.0
    for i, (secs, steps, distinct) in enumerate(timeline):
        if secs >= nxt or i == len(timeline) - 1:
            out.append([round(secs, 2), steps, round(distinct / total, 6)])
            nxt = secs + every
    return out


def merge(target: dict, mode: str, reach, workers: list[dict], seconds: float,
          checkpoint: float) -> dict:
    from properties.coverage import measure
    total = len(reach)
    union: set = set()
    for w in workers:
        union.update(w["visited"])
    actions: dict = {}
    for w in workers:
        for a, n in w["action_counts"].items():
            actions[a] = actions.get(a, 0) + n
    cov = measure(union, actions, reach)
    exact = cov.outside == 0        # then |visited| is the covered count at every checkpoint
    # every checkpoint time of the budget (a worker that stopped early, at 100 % or at a
    # violation, counts with its final visited set at the checkpoints after its stop)
    nominal, k = [], 1
    while k * checkpoint < seconds:
        nominal.append(k * checkpoint)
        k += 1
    over_time, union_full_at, lag = [], None, 0.0
    for t in nominal:
        s: set = set()
        steps = 0
        for w in workers:
            snap = next((c for c in w["checkpoints"] if c[0] == t), None)
            if snap is None:        # this worker had stopped (100 %, or a violation)
                s.update(w["visited"])
                steps += w["steps_run"]
            else:
                s.update(snap[4])
                steps += snap[2]
                lag = max(lag, snap[1] - t)
        covered = len(s) if exact else reach.count_visited(s)
        over_time.append([t, round(covered / total, 6), steps])
        if union_full_at is None and covered == total:
            union_full_at = t
    end = max(w["seconds"] for w in workers)
    over_time.append([round(min(end, seconds), 3), round(cov.states_share, 6),
                      sum(w["steps_run"] for w in workers)])
    fulls = [w["full_at"] for w in workers if w["full_at"] is not None]
    candidates = fulls + ([union_full_at] if union_full_at is not None else [])
    if cov.states_covered == total and not candidates:
        candidates = [round(end, 3)]
    missing = set(workers[0]["witnesses_missing"])
    for w in workers[1:]:
        missing &= set(w["witnesses_missing"])
    per_worker = []
    for w in workers:
        wcov = measure(set(w["visited"]), w["action_counts"], reach)
        per_worker.append({
            "seed": w["seed"], "steps_run": w["steps_run"], "rule_calls": w["rule_calls"],
            "examples": w["examples"], "restarts": w["restarts"], "rounds": w["rounds"],
            "search_seconds": round(w["search_seconds"], 3), "seconds": round(w["seconds"], 3),
            # CPU time / wall time of the run: well below 1 means the worker did not have a
            # core to itself (another load on the machine), and its steps/s are too low
            "cpu_share": round(w["cpu_seconds"] / w["seconds"], 3) if w["seconds"] else None,
            "steps_per_second": round(w["steps_per_second"], 1),
            "distinct": w["distinct"], "states_share": round(wcov.states_share, 6),
            "outside": wcov.outside, "actions_share": round(wcov.actions_share, 6),
            "stop_reason": w["stop_reason"], "time_to_full": w["full_at"],
            "snapshot_seconds": round(w["snapshot_seconds"], 3),
            "witnesses_missing": w["witnesses_missing"], "found": w["found"],
            "property": w["property"], "clause": w["clause"],
            "counterexample_length": w["counterexample_length"],
            "timeline": _thin(w["timeline"], max(1.0, checkpoint / 3), total),
        })
    order = {w: i for i, w in enumerate(missing_order(workers))}
    entry = {
        "target": target["name"], "kind": target["kind"], "mode": mode,
        "swarm": MODES[mode][0], "novelty": MODES[mode][1],
        "reachable": total,
        "steps_per_second_total": round(sum(w["steps_per_second"] for w in workers), 1),
        "steps_per_second_per_worker": [round(w["steps_per_second"], 1) for w in workers],
        "steps_run": sum(w["steps_run"] for w in workers),
        "cpu_share_min": min((round(w["cpu_seconds"] / w["seconds"], 3) for w in workers
                              if w["seconds"]), default=None),
        "rule_calls": sum(w["rule_calls"] for w in workers),
        "coverage_over_time": over_time,          # [t, merged share, steps of all workers]
        "checkpoint_max_lag": round(lag, 3),      # snapshot taken at most this late
        "final_share": round(cov.states_share, 6),
        "actions_share": round(cov.actions_share, 6),
        "coverage": cov.to_dict(),
        "outside_is_zero": cov.outside == 0,
        "time_to_full": min(candidates) if candidates else None,
        "time_to_full_union_checkpoint": union_full_at,
        "time_to_full_per_worker": [w["full_at"] for w in workers],
        "witnesses_missing": sorted(missing, key=lambda x: order.get(x, len(order))),
        "found": any(w["found"] for w in workers),
        "violations": [{"seed": w["seed"], "property": w["property"], "clause": w["clause"]}
                       for w in workers if w["found"]],
        "workers": per_worker,
    }
    if target["name"] == ANCHOR["target"]:
        entry["anchor"] = {"seconds": ANCHOR["seconds"],
                           "published_plain_share": ANCHOR["plain_share"],
                           "per_worker_share": [_share_at(w["timeline"], ANCHOR["seconds"], total)
                                                if w["seconds"] >= ANCHOR["seconds"]
                                                or w["full_at"] is not None else None
                                                for w in workers]}
    return entry


def missing_order(workers):
    seen, out = set(), []
    for w in workers:
        for x in w["witnesses_missing"]:
            if x not in seen:
                seen.add(x)
                out.append(x)
    return out


# ---- machine, file, table -------------------------------------------------------------------

def _git(*args) -> str | None:
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True,
                              cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def machine_info() -> dict:
    import hypothesis
    try:
        from properties.trace import model_hash
        mh = model_hash()
    except Exception:  # pragma: no cover
        mh = None
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "python": platform.python_version(), "implementation": platform.python_implementation(),
        "platform": platform.platform(), "machine": platform.machine(),
        "processor": platform.processor(), "cpu_count": os.cpu_count(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "hypothesis": hypothesis.__version__,
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(status) if status is not None else None,
        "model_hash": mh,
    }


def load(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        if doc.get("schema") == SCHEMA:
            return doc
        print(f"note: {path} has schema {doc.get('schema')!r}, not {SCHEMA!r}: starting afresh",
              file=sys.stderr)
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:
        print(f"note: cannot read {path} ({exc}): starting afresh", file=sys.stderr)
    return {"schema": SCHEMA, "targets": {}, "runs": []}


_NUMBER = r"(?:-?[0-9][0-9.eE+-]*|null)"
_NUMBER_LIST = re.compile(rf"\[\s*({_NUMBER}(?:,\s*{_NUMBER})*)\s*\]")


def save(doc: dict, path: str) -> None:
    out_dir = os.path.dirname(path)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    text = json.dumps(doc, indent=1)
    # one line per innermost list of numbers (the timelines), or the file is mostly newlines
    text = _NUMBER_LIST.sub(lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(","))
                            + "]", text)
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text + "\n")
    os.replace(tmp, path)


def _probe_times(seconds: float, checkpoint: float) -> tuple[float, float]:
    """Two checkpoint times for the table: 60 s and 150 s of a 300 s run (1/5 and 1/2)."""
    return tuple(max(checkpoint, round(f * seconds / checkpoint) * checkpoint)
                 for f in (0.2, 0.5))


def _cov_at(entry: dict, t: float):
    pts = [p for p in entry["coverage_over_time"][:-1] if p[0] <= t + 1e-9]
    if pts:
        return pts[-1][1]
    return None


def table(entries: list[dict]) -> str:
    probes = {_probe_times(e["parameters"]["seconds"], e["parameters"]["checkpoint"])
              for e in entries}
    uniform = len(probes) == 1
    p1, p2 = next(iter(probes)) if uniform else ("1/5", "1/2")
    fmt_p = (lambda p: f"@{p:g}s") if uniform else (lambda p: f"@{p}")
    head = (f"{'target':<28} {'mode':<14} {'steps/s':>8} {'per worker':>13} {'cov' + fmt_p(p1):>9} "
            f"{'cov' + fmt_p(p2):>9} {'cov end':>8} {'t 100%':>7} {'actions':>7} {'miss':>4}")
    lines = [head, "-" * len(head)]
    for e in entries:
        a, b = _probe_times(e["parameters"]["seconds"], e["parameters"]["checkpoint"])
        c1, c2 = _cov_at(e, a), _cov_at(e, b)
        if e["time_to_full"] is not None:   # a stopped run stays at 100 %
            c1 = 1.0 if c1 is None and a >= e["time_to_full"] else c1
            c2 = 1.0 if c2 is None and b >= e["time_to_full"] else c2
        pct = lambda x: f"{x:.1%}" if x is not None else "-"  # noqa: E731
        per = "/".join(f"{x:,.0f}" for x in e["steps_per_second_per_worker"])
        t100 = f"{e['time_to_full']:.0f}s" if e["time_to_full"] is not None else "-"
        flags = ""
        if e["found"]:
            flags += "  VIOLATION: " + ", ".join(v["property"] for v in e["violations"])
        if not e["outside_is_zero"]:
            flags += f"  OUTSIDE={e['coverage']['outside']}"
        lines.append(f"{e['target']:<28} {e['mode']:<14} {e['steps_per_second_total']:>8,.0f} "
                     f"{per:>13} {pct(c1):>9} {pct(c2):>9} {pct(e['final_share']):>8} "
                     f"{t100:>7} {e['actions_share']:>7.0%} {len(e['witnesses_missing']):>4}"
                     + flags)
    anchors = [e for e in entries if "anchor" in e]
    for e in anchors:
        if all(s is None for s in e["anchor"]["per_worker_share"]):
            continue                # the budget was shorter than the anchor's time
        shares = [f"{s:.1%}" if s is not None else "-" for s in e["anchor"]["per_worker_share"]]
        lines.append(f"anchor {e['target']} {e['mode']}: per-worker share at "
                     f"{e['anchor']['seconds']:g} s: {', '.join(shares)} (published plain "
                     f"Hypothesis: {e['anchor']['published_plain_share']:.1%})")
    return "\n".join(lines)


def all_entries(doc: dict) -> list[dict]:
    out = []
    for t in doc["targets"].values():
        order = {m: i for i, m in enumerate(DEFAULT_MODES)}
        out += [t["modes"][m] for m in sorted(t["modes"], key=lambda m: order.get(m, 99))]
    return out


# ---- main -----------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.stateful",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--configs", nargs="+", default=None,
                    help="configurations (names, 'tiny', 'small', 'TwoPhase-N'; commas or "
                         "spaces); default: tiny then small")
    ap.add_argument("--modes", nargs="+", default=None,
                    help=f"modes among {', '.join(MODES)} (default: all four)")
    ap.add_argument("--seconds", type=float, default=None,
                    help="time budget of each worker (default 300; 20 with --quick)")
    ap.add_argument("--checkpoint", type=float, default=None,
                    help="seconds between coverage snapshots (default 15; 5 with --quick)")
    ap.add_argument("--seed", type=int, default=0, help="base seed: workers get seed, seed+1, ..")
    ap.add_argument("--workers", type=int, default=2, help="worker processes (cores) per run")
    ap.add_argument("--twophase", type=int, default=None,
                    help="also run TwoPhase-N (default 5 without --configs, else 0 = skip)")
    ap.add_argument("--out", default="bench/results/stateful.json")
    ap.add_argument("--quick", action="store_true",
                    help="20 s budgets, checkpoints every 5 s, tiny configurations only")
    ap.add_argument("--table", action="store_true",
                    help="print the table of every entry in --out and exit")
    args = ap.parse_args(argv)
    if args.table:
        doc = load(args.out)
        print(table(all_entries(doc)))
        return 0
    seconds = args.seconds if args.seconds is not None else (20.0 if args.quick else 300.0)
    checkpoint = args.checkpoint if args.checkpoint is not None else (5.0 if args.quick else 15.0)
    if seconds <= 0 or checkpoint <= 0 or args.workers < 1:
        ap.error("--seconds, --checkpoint and --workers must be positive")
    twophase = args.twophase if args.twophase is not None else (0 if args.configs else 5)
    names = args.configs or (["tiny"] if args.quick else ["tiny", "small"])
    try:
        targets = resolve_targets(names, twophase)
    except ValueError as exc:
        ap.error(str(exc))
    modes: list[str] = []
    for item in args.modes or DEFAULT_MODES:
        for m in (x.strip() for x in item.split(",")):
            if m and m not in MODES:
                ap.error(f"unknown mode {m!r}; modes: {', '.join(MODES)}")
            if m and m not in modes:
                modes.append(m)
    seeds = [args.seed + k for k in range(args.workers)]
    started = _dt.datetime.now(_dt.timezone.utc)
    machine = machine_info()
    notes: list[str] = []

    # 1. the reachable sets, before anything is timed
    from properties.coverage import reachable
    reaches, reach_info = {}, {}
    for target in targets:
        t0 = time.perf_counter()
        print(f"reachable set of {target['name']} ...", file=sys.stderr, flush=True)
        reach = reachable(make_spec(target))
        wall = time.perf_counter() - t0
        reaches[target["name"]] = reach
        reach_info[target["name"]] = {"count": len(reach), "cached": reach.cached,
                                      "load_seconds": round(wall, 3),
                                      "explore_seconds": round(reach.seconds, 3),
                                      "actions": len(reach.actions)}
        print(f"  {target['name']:<28} {len(reach):>11,} states  "
              f"{'loaded from cache' if reach.cached else 'explored'} in {wall:.1f} s "
              f"(exploration: {reach.seconds:.1f} s)", file=sys.stderr, flush=True)

    # 2. the runs
    doc = load(args.out)
    run_record = {"timestamp": started.isoformat(timespec="seconds"),
                  "argv": sys.argv[1:] if argv is None else list(argv),
                  "targets": [t["name"] for t in targets], "modes": modes,
                  "seconds": seconds, "checkpoint": checkpoint, "seeds": seeds,
                  "reachable": reach_info, "machine": machine}
    doc.setdefault("runs", []).append(run_record)
    parameters = {"seconds": seconds, "checkpoint": checkpoint, "seeds": seeds,
                  "workers": args.workers, "examples_per_round": EXAMPLES_PER_ROUND,
                  "steps_per_example": STEPS_PER_EXAMPLE, "mp_context": "spawn"}
    done: list[dict] = []
    starved: list[tuple] = []
    n_runs = len(targets) * len(modes)
    i = 0
    for target in targets:
        reach = reaches[target["name"]]
        for mode in modes:
            i += 1
            print(f"[{i}/{n_runs}] {target['name']} {mode}: {args.workers} workers x "
                  f"{seconds:g} s ...", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            try:
                workers = _run_workers(target, mode, len(reach), seconds, checkpoint, seeds)
            except Exception as exc:
                notes.append(f"{target['name']} {mode}: run failed: {type(exc).__name__}: {exc}")
                print(f"  failed: {exc}", file=sys.stderr, flush=True)
                continue
            entry = merge(target, mode, reach, workers, seconds, checkpoint)
            entry["timestamp"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
            entry["wall_seconds"] = round(time.perf_counter() - t0, 3)
            entry["parameters"] = parameters
            entry["machine"] = machine
            entry["reachable_set"] = reach_info[target["name"]]
            entry["load_average_after"] = (list(os.getloadavg())
                                           if hasattr(os, "getloadavg") else None)
            if entry["cpu_share_min"] is not None and entry["cpu_share_min"] < 0.9:
                starved.append((f"{target['name']} {mode}", entry["cpu_share_min"]))
            if not entry["outside_is_zero"]:
                notes.append(f"{target['name']} {mode}: {entry['coverage']['outside']} visited "
                             f"states are not in the reachable set (engine and explorer disagree)")
            if any(w["stop_reason"] == "rounds" for w in entry["workers"]):
                notes.append(f"{target['name']} {mode}: a worker ran out of rounds before its "
                             f"time budget (raise the bound in run_worker)")
            if entry["found"]:
                notes.append(f"{target['name']} {mode}: a property failed on a correct design: "
                             + "; ".join(f"seed {v['seed']}: {v['property']} ({v['clause']})"
                                         for v in entry["violations"]))
            slot = doc["targets"].setdefault(target["name"], {"kind": target["kind"],
                                                               "modes": {}})
            slot["reachable"] = len(reach)
            slot["modes"][mode] = entry
            doc["updated"] = entry["timestamp"]
            doc["machine"] = machine
            save(doc, args.out)
            done.append(entry)
            print(f"  {entry['steps_per_second_total']:,.0f} steps/s "
                  f"({' + '.join(f'{x:,.0f}' for x in entry['steps_per_second_per_worker'])}), "
                  f"coverage {entry['final_share']:.1%} of {len(reach):,}"
                  + (f", 100 % at {entry['time_to_full']:.1f} s"
                     if entry["time_to_full"] is not None else "")
                  + f", {len(entry['witnesses_missing'])} witnesses missing",
                  file=sys.stderr, flush=True)
    if starved:
        worst = min(starved, key=lambda x: x[1])
        notes.append(f"{len(starved)} of {len(done)} runs had a worker with less than 90 % of a "
                     f"core (other load on the machine?), their steps/s are understated; the "
                     f"lowest: {worst[0]}, {worst[1]:.0%} (see cpu_share in the JSON)")
    run_record["wall_seconds"] = round(
        (_dt.datetime.now(_dt.timezone.utc) - started).total_seconds(), 3)
    run_record["notes"] = notes
    save(doc, args.out)
    if done:
        print(table(done))
    for note in notes:
        print(f"note: {note}")
    print(f"wrote {args.out}")
    bad = any(not e["outside_is_zero"] or e["found"] for e in done)
    return 1 if bad or len(done) < n_runs else 0


if __name__ == "__main__":
    sys.exit(main())
