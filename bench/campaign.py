"""Benchmark of campaign shard execution: Spark local[1], Spark local[2], a 2-process pool.

    python -m bench.campaign [--out bench/results/campaign.json] [--runs 3] [--shards 16]
                             [--shard-seconds 1.0] [--config zk-forward-zombie]

Every runner executes the same campaign: ``--shards`` shards of a real model random walk
(``walk_shard``: seeded, restarts every ``depth`` steps, about ``--shard-seconds`` each; the
step count is calibrated once in this process and then fixed, so every runner does the same
work).  Throughput is model steps per second of wall time, from the first submission to the last
record.  Spark runs each get a fresh Python process (so the SparkSession start-up is a cold JVM,
``startup_seconds``), run the campaign once to start the Python workers (``cold_run_seconds``,
not in the median) and then ``--runs`` times.  The pool is a fresh ``ProcessPoolExecutor(2)`` per
run.  Every runner must return the same per-shard digests (shards are pure functions of their seed);
the benchmark checks it.

DESIGN section 9 targets: Spark with 2 executors >= 1.8x the throughput of 1; overhead against a
process pool <= 15 % (on a 10-minute campaign; this one is shorter, so the fixed costs weigh
more).  Measured, never asserted in tests.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime as _dt
import hashlib
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "bench" / "results" / "campaign.json"


@dataclass(frozen=True)
class WalkSpec:
    """The campaign: which model configuration to walk and how much work a shard does."""
    config: str = "zk-forward-zombie"
    variant: str = "correct"
    steps: int = 20_000
    depth: int = 40


@dataclass(frozen=True)
class WalkTask:
    index: int
    seed: int


def walk_shard(spec: WalkSpec, task: WalkTask) -> dict:
    """A stand-in for ``run_shard``: ``spec.steps`` steps of a seeded random walk over the
    model's Next relation, restarting from the initial state every ``spec.depth`` steps or at a
    deadlock.  The record's ``digest`` covers every fingerprint visited, so two runners agree
    on a shard only if they walked the same states."""
    from properties.kafka_spec import KafkaSpec
    t0 = time.perf_counter()
    model = KafkaSpec.named(spec.config, None if spec.variant == "correct" else spec.variant)
    rng = random.Random(task.seed)
    init = model.initial_states()[0]
    state, depth = init, 0
    seen: set = set()
    h = hashlib.blake2b(digest_size=8)
    for _ in range(spec.steps):
        succ = model.successors(state)
        if not succ or depth >= spec.depth:
            state, depth = init, 0
            succ = model.successors(state)
        _, state = succ[rng.randrange(len(succ))]
        depth += 1
        fp = model.fingerprint(state) & 0xFFFFFFFFFFFFFFFF
        seen.add(fp)
        h.update(fp.to_bytes(8, "little"))
    return {"index": task.index, "seed": task.seed, "steps": spec.steps,
            "distinct": len(seen), "digest": h.hexdigest(),
            "seconds": time.perf_counter() - t0, "pid": os.getpid()}


def make_tasks(n: int, campaign_seed: int = 20261121) -> list:
    rng = random.Random(campaign_seed)
    return [WalkTask(i, rng.getrandbits(64)) for i in range(n)]


def calibrate(config: str, shard_seconds: float) -> int:
    """Steps per shard for about ``shard_seconds`` in one process (median of three probes)."""
    probe = WalkSpec(config=config, steps=4000)
    rates = []
    for i in range(3):
        r = walk_shard(probe, WalkTask(i, 1000 + i))
        rates.append(r["steps"] / r["seconds"])
    return max(1000, int(statistics.median(rates) * shard_seconds))


def _summary(spec: WalkSpec, runs: list) -> dict:
    total = spec.steps * runs[0]["shards"]
    secs = [r["seconds"] for r in runs]
    return {"runs": runs, "median_seconds": statistics.median(secs),
            "median_steps_per_second": total / statistics.median(secs),
            "min_seconds": min(secs), "max_seconds": max(secs)}


def run_pool(spec: WalkSpec, tasks: list, workers: int) -> dict:
    t0 = time.perf_counter()
    with concurrent.futures.ProcessPoolExecutor(workers) as pool:
        futs = [pool.submit(walk_shard, spec, t) for t in tasks]
        records = [f.result() for f in concurrent.futures.as_completed(futs)]
    return {"seconds": time.perf_counter() - t0, "shards": len(records),
            "digests": _digests(records)}


def _digests(records) -> dict:
    return {str(r["index"]): r["digest"] for r in sorted(records, key=lambda r: r["index"])}


def spark_worker(spec: WalkSpec, tasks: list, executors: int, runs: int) -> dict:
    """In a fresh process: start a session (cold JVM), run the campaign ``runs`` times."""
    from kipcheck.campaign.spark import SparkShardExecutor
    t0 = time.perf_counter()
    ex = SparkShardExecutor(executors=executors, app_name=f"bench-campaign-{executors}")
    out = {"master": ex.master, "startup_seconds": ex.startup_seconds, "runs": []}
    try:
        for i in range(runs + 1):
            t1 = time.perf_counter()
            records = list(ex.map_shards(spec, tasks, fn=walk_shard))
            run = {"seconds": time.perf_counter() - t1, "shards": len(records),
                   "pids": len({r["pid"] for r in records}), "digests": _digests(records)}
            if i == 0:
                out["cold_run"] = run        # starts the Python workers and their imports
            else:
                out["runs"].append(run)
    finally:
        t2 = time.perf_counter()
        ex.stop()
        out["stop_seconds"] = time.perf_counter() - t2
    out["process_seconds"] = time.perf_counter() - t0
    return out


def _spark_isolated(spec: WalkSpec, n_tasks: int, executors: int, runs: int) -> dict:
    cmd = [sys.executable, "-m", "bench.campaign", "--spark-worker", str(executors),
           "--runs", str(runs), "--shards", str(n_tasks), "--steps", str(spec.steps),
           "--config", spec.config]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"Spark run local[{executors}] failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.campaign", description=__doc__.split(
        "\n\n")[0])
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--shard-seconds", type=float, default=1.0)
    ap.add_argument("--config", default="zk-forward-zombie")
    ap.add_argument("--steps", type=int, help="steps per shard (skip the calibration)")
    ap.add_argument("--spark-worker", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    tasks = make_tasks(args.shards)
    if args.spark_worker:
        spec = WalkSpec(config=args.config, steps=args.steps)
        print(json.dumps(spark_worker(spec, tasks, args.spark_worker, args.runs)))
        return 0

    started = time.perf_counter()
    steps = args.steps or calibrate(args.config, args.shard_seconds)
    spec = WalkSpec(config=args.config, steps=steps)
    total_steps = steps * len(tasks)
    print(f"campaign: {len(tasks)} shards x {steps:,} steps of {args.config} "
          f"(about {args.shard_seconds:g} s each in one process)", file=sys.stderr)
    results: dict = {}

    t0 = time.perf_counter()
    seq = [walk_shard(spec, t) for t in tasks]
    results["sequential"] = _summary(spec, [{"seconds": time.perf_counter() - t0,
                                             "shards": len(seq), "digests": _digests(seq)}])
    print(f"  sequential: {results['sequential']['median_seconds']:.1f} s", file=sys.stderr)
    results["pool-2"] = _summary(spec, [run_pool(spec, tasks, 2) for _ in range(args.runs)])
    print(f"  pool-2: {results['pool-2']['median_seconds']:.1f} s", file=sys.stderr)
    cold_digests: list = []
    for n in (1, 2):
        w = _spark_isolated(spec, len(tasks), n, args.runs)
        s = _summary(spec, w["runs"])
        s.update(master=w["master"], startup_seconds=w["startup_seconds"],
                 stop_seconds=w["stop_seconds"], cold_run_seconds=w["cold_run"]["seconds"],
                 process_seconds=w["process_seconds"],
                 steps_per_second_with_startup=total_steps / (w["startup_seconds"]
                                                             + s["median_seconds"]))
        results[f"spark-local[{n}]"] = s
        cold_digests.append(w["cold_run"]["digests"])
        print(f"  spark local[{n}]: start-up {w['startup_seconds']:.1f} s, median "
              f"{s['median_seconds']:.1f} s", file=sys.stderr)

    reference = results["sequential"]["runs"][0]["digests"]
    same = all(r["digests"] == reference for v in results.values() for r in v["runs"])
    same = same and all(w_cold == reference for w_cold in cold_digests)
    for v in results.values():
        for r in v["runs"]:
            del r["digests"]
    sp1 = results["spark-local[1]"]["median_steps_per_second"]
    sp2 = results["spark-local[2]"]["median_steps_per_second"]
    pool = results["pool-2"]["median_steps_per_second"]
    doc = {
        "schema": "kipcheck-bench-campaign/1",
        "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "wall_seconds": time.perf_counter() - started,
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpu_count": os.cpu_count(), "load_average": list(os.getloadavg())},
        "campaign": {**asdict(spec), "shards": len(tasks), "total_steps": total_steps,
                     "runs": args.runs, "shard_function": "bench.campaign.walk_shard"},
        "identical_results_across_runners": same,
        "results": results,
        "ratios": {"spark2_over_spark1": sp2 / sp1, "spark2_over_pool2": sp2 / pool,
                   "spark2_overhead_vs_pool2": pool / sp2 - 1.0,
                   "targets": "spark2/spark1 >= 1.8; overhead vs pool <= 0.15 (DESIGN 9)"},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2)
        fh.write("\n")
    print(table(doc))
    print(f"written to {args.out}")
    return 0 if same else 1


def table(doc: dict) -> str:
    rows = [f"{'runner':<16} {'median s':>9} {'steps/s':>10} {'start-up s':>11} "
            f"{'cold run s':>11} {'steps/s incl. start-up':>23}"]
    for name, r in doc["results"].items():
        st, cold = r.get("startup_seconds"), r.get("cold_run_seconds")
        with_startup = r.get("steps_per_second_with_startup", r["median_steps_per_second"])
        rows.append(f"{name:<16} {r['median_seconds']:>9.2f} "
                    f"{r['median_steps_per_second']:>10,.0f} "
                    f"{'' if st is None else f'{st:.1f}':>11} "
                    f"{'' if cold is None else f'{cold:.1f}':>11} "
                    f"{with_startup:>23,.0f}")
    q = doc["ratios"]
    rows.append(f"spark local[2] / local[1] = {q['spark2_over_spark1']:.2f}x; "
                f"spark local[2] / pool(2) = {q['spark2_over_pool2']:.2f}x; "
                f"results identical across runners: {doc['identical_results_across_runners']}")
    return "\n".join(rows)

if __name__ == "__main__":
    sys.exit(main())
