"""Benchmark of the model's cost per state: what the explorer pays for each state it expands.

    python -m bench.steps [--config zk-small,kraft-small] [--depth 16] [--beam 10000]
                          [--sample 3000] [--seed 1] [--passes 15] [--rounds 3]
                          [--baseline REV] [--baseline-python PATH] [--python PATH]
                          [--out bench/results/steps.json]

Samples ``--sample`` states of each configuration from the level at ``--depth`` of a
breadth-first search that keeps a seeded sample of at most ``--beam`` states per level (the
states the explorer expands in the middle of a search; deterministic for a seed, so two commits
whose steps are the same sample the same states, which the JSON's ``sample_checksum`` shows).
Then times, per state, ``successors``, the property check (``violation``: the ALWAYS clauses,
and the quiescent ones where they apply), hashing the successors (the fingerprint) and the
explorer's incremental check (``incremental_us``: what the step from the state it was found
from changed, then ``violation_since``; ``changes_us`` the first part alone; None for a commit
before properties/incremental.py), each the least of ``--passes`` passes over the sample: this
machine's noise comes in bursts that slow a pass by up to half, and it only ever adds time, so
the least is the cost.

Each round is a fresh process.  With ``--baseline REV`` the code of commit ``REV`` (a temporary
git worktree) and this tree alternate (baseline, current, ...) ``--rounds`` times each; the JSON
has every round, the medians per side and the ratios of the medians (current / baseline).
``--baseline-python PATH`` runs the baseline side under another interpreter, and without
``--baseline`` on this tree's code: two interpreters on the same states (``--python``: this
side's).  The JSON names both interpreters and how they were built.
Timings are measured here, never asserted in tests (DESIGN section 9); whole-process figures
come from ``kipcheck explore`` itself.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import statistics
import subprocess
import sys

from bench.explore import _worktree, git_commit, interpreter, machine_info, write_json

KEYS = ("successors_us", "violation_us", "hash_us", "incremental_us", "changes_us")

# One measurement in a fresh interpreter whose sys.path starts at ROOT (this tree or the
# baseline's worktree).  argv: ROOT, configuration, depth, beam, sample size, seed, passes.
_MEASURE = r"""
import gc, json, random, sys, time
sys.path.insert(0, sys.argv[1])
from properties.kafka_spec import KafkaSpec
gc.disable()
spec = KafkaSpec.named(sys.argv[2])
depth, beam, size, seed, passes = map(int, sys.argv[3:8])
rng = random.Random(seed)
level, seen, parent = list(spec.initial_states()), set(), {}
for _ in range(depth):
    nxt = []
    found_from = {}
    for s in level:
        for _, t in spec.successors(s):
            if t not in seen:
                seen.add(t)
                nxt.append(t)
                found_from[t] = s
    if not nxt:
        break
    level = nxt if len(nxt) <= beam else rng.sample(nxt, beam)
    parent = found_from
states = level if len(level) <= size else rng.sample(level, size)
succ_of = spec.successors
succs = [succ_of(s) for s in states]
try:
    from properties.spec import incremental_checks
    incr = incremental_checks(spec)
except ImportError:                 # a commit before incremental checks
    incr = None
def per_state(fn):
    times = []
    for _ in range(passes):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times) / len(states) * 1e6
violation = spec.violation
out = {
    "successors_us": per_state(lambda: [succ_of(s) for s in states]),
    "violation_us": per_state(lambda: [violation(s, sc) for s, sc in zip(states, succs)]),
    "hash_us": per_state(lambda: [[hash(t) for _, t in sc] for sc in succs]),
    # the explorer's check of a state it found from ``parent[s]``: the token of the step, then
    # the clauses that read what it changed (properties/incremental.py); None before them
    "incremental_us": None if incr is None or not parent else per_state(
        lambda: [incr[1](s, sc, incr[0](parent[s], s)) for s, sc in zip(states, succs)]),
    "changes_us": None if incr is None or not parent else per_state(
        lambda: [incr[0](parent[s], s) for s in states]),
    "successors_per_state": sum(map(len, succs)) / len(states),
    "sample_checksum": sum(hash(s) for s in states) & (2**64 - 1),
}
print(json.dumps(out))
"""


def _measure(root: str, config: str, args, python: str) -> dict:
    out = subprocess.run([python, "-c", _MEASURE, root, config, str(args.depth),
                          str(args.beam), str(args.sample), str(args.seed), str(args.passes)],
                         capture_output=True, text=True, cwd=root)
    if out.returncode != 0:
        raise RuntimeError(f"measurement in {root} failed (exit {out.returncode}): "
                           f"{out.stderr.strip().splitlines()[-1:] or ['no output']}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _num(value, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _medians(rounds: list) -> dict:
    return {k: statistics.median(r[k] for r in rounds) if all(r.get(k) is not None
                                                              for r in rounds) else None
            for k in KEYS}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.steps",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="zk-small,kraft-small")
    ap.add_argument("--depth", type=int, default=16, help="the level the states come from")
    ap.add_argument("--beam", type=int, default=10000,
                    help="states kept per level on the way (a seeded sample of each level)")
    ap.add_argument("--sample", type=int, default=3000, help="states sampled")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--passes", type=int, default=15, help="timed passes per measurement")
    ap.add_argument("--rounds", type=int, default=3, help="processes per side")
    ap.add_argument("--baseline", metavar="REV")
    ap.add_argument("--python", metavar="PATH",
                    help="the interpreter of this tree's side (default: this one)")
    ap.add_argument("--baseline-python", metavar="PATH",
                    help="the baseline side's interpreter; without --baseline, this tree's "
                         "code under it (two interpreters on the same code)")
    ap.add_argument("--out", default="bench/results/steps.json")
    args = ap.parse_args(argv)
    for name, value in (("--depth", args.depth), ("--beam", args.beam), ("--sample", args.sample),
                        ("--passes", args.passes), ("--rounds", args.rounds)):
        if value < 1:
            print(f"error: {name} must be at least 1", file=sys.stderr)
            return 2
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    from properties.kafka_spec import UnknownName, get_config
    try:
        configs = [get_config(c).name for c in args.config.split(",")]
    except UnknownName as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        python, python_facts = interpreter(args.python)
        base_python, base_facts = interpreter(args.baseline_python)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    base_root = base_commit = None
    if args.baseline_python and not args.baseline:
        base_root, base_commit = here, git_commit()
    if args.baseline:
        try:
            base_root, base_commit = _worktree(args.baseline, here)
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"error: cannot check out {args.baseline!r}: {exc}", file=sys.stderr)
            return 2
    print(f"seed {args.seed}; {args.sample} states per configuration from depth {args.depth} "
          f"(at most {args.beam} kept per level)", flush=True)
    doc = {"benchmark": "steps", "commit": git_commit(), "baseline": base_commit,
           "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "machine": machine_info(), "depth": args.depth, "beam": args.beam, "sample": args.sample,
           "seed": args.seed, "passes": args.passes,
           "interpreter": python_facts,
           "baseline_interpreter": base_facts if base_root is not None else None,
           "configs": {}}
    try:
        for config in configs:
            current, baseline = [], []
            for r in range(args.rounds):
                if base_root is not None:
                    baseline.append(_measure(base_root, config, args, base_python))
                current.append(_measure(here, config, args, python))
                print(f"{config} round {r + 1}: current "
                      + "  ".join(f"{k} {_num(current[-1][k])}" for k in KEYS)
                      + ("" if base_root is None else "  | baseline "
                         + "  ".join(f"{k} {_num(baseline[-1][k])}" for k in KEYS)), flush=True)
            entry = {"current": current, "current_median": _medians(current)}
            if baseline:
                entry["baseline"] = baseline
                entry["baseline_median"] = _medians(baseline)
                entry["ratio"] = {
                    k: (None if None in (entry["current_median"][k], entry["baseline_median"][k])
                        else entry["current_median"][k] / entry["baseline_median"][k])
                    for k in KEYS}
                entry["same_sample"] = (current[0]["sample_checksum"]
                                        == baseline[0]["sample_checksum"])
            doc["configs"][config] = entry
    finally:
        if base_root is not None and base_root != here:
            subprocess.run(["git", "worktree", "remove", "--force", base_root], cwd=here,
                           capture_output=True)
    write_json(args.out, doc)
    for config, entry in doc["configs"].items():
        med = entry["current_median"]
        line = f"{config}: " + "  ".join(f"{k} {_num(med[k])}" for k in KEYS)
        if "ratio" in entry:
            line += "  ratio " + "  ".join(f"{k} {_num(entry['ratio'][k], 3)}" for k in KEYS)
            if not entry["same_sample"]:
                line += "  (the two sides sampled different states)"
        print(line)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
