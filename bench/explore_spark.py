"""Benchmark of the distributed exhaustive explorer (``kipcheck explore --spark``).

    python -m bench.explore_spark [--config kraft-small] [--runs 3]
                                  [--out bench/results/explore_spark.json]

On one configuration, each run in a fresh process, three ways to the same reachable set:

- ``explore``: the single-process explorer (``properties.explore.explore``);
- ``partitioned``: the fingerprint-partitioned level loop in one process, 4 partitions
  (``properties.partitioned.explore_partitioned``: every candidate pickled and unpickled as it
  would cross a Spark shuffle, no JVM);
- ``spark-local[N]``: ``explore_spark`` on a local SparkSession with N executor slots (N = 1, 2);
  the session's start-up is timed apart and not included in the exploration time.

Every run must reach the same number of distinct states, else the benchmark fails.  The JSON
holds every run, the medians, and the ratios of medians against ``explore``.  Timings are
measured here, never asserted in tests (DESIGN section 9); run it on a quiet machine.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.explore import git_commit, machine_info

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "bench" / "results" / "explore_spark.json"
MODES = ("explore", "partitioned", "spark-local[1]", "spark-local[2]")


def run_mode(config: str, mode: str) -> dict:
    """One exploration in this process; returns the figures."""
    from properties.kafka_spec import KafkaSpec
    spec = KafkaSpec.named(config)
    out: dict = {"mode": mode}
    if mode == "explore":
        from properties.explore import explore
        t0 = time.perf_counter()
        r = explore(spec)
    elif mode == "partitioned":
        from properties.partitioned import explore_partitioned
        t0 = time.perf_counter()
        r = explore_partitioned(spec, partitions=4)
    elif mode.startswith("spark-local["):
        from kipcheck.campaign.spark import explore_spark, spark_session
        n = int(mode[len("spark-local["):-1])
        t = time.perf_counter()
        session, _ = spark_session(None, n, f"bench-explore-spark-{n}")
        out["startup_seconds"] = time.perf_counter() - t
        out["partitions"] = 2 * n
        try:
            t0 = time.perf_counter()
            r = explore_spark(spec, session=session, partitions=2 * n)
        finally:
            session.stop()
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    out.update(seconds=time.perf_counter() - t0, distinct=r.distinct, depth=r.depth,
               generated=r.generated, complete=r.complete)
    return out


def _isolated(config: str, mode: str) -> dict:
    p = subprocess.run([sys.executable, "-m", "bench.explore_spark", "--config", config,
                        "--worker", mode], cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{mode} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.explore_spark",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="kraft-small")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of "
                    + ", ".join(MODES))
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(run_mode(args.config, args.worker)))
        return 0
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            ap.error(f"unknown mode {m!r} (choose from {', '.join(MODES)})")
    results: dict = {}
    # Interleave the modes run by run, so that drift in the machine's load hits all of them.
    for i in range(args.runs):
        for m in modes:
            r = _isolated(args.config, m)
            results.setdefault(m, []).append(r)
            print(f"  run {i + 1}/{args.runs} {m}: {r['seconds']:.1f} s, {r['distinct']:,} "
                  f"states" + (f", start-up {r['startup_seconds']:.1f} s"
                               if "startup_seconds" in r else ""), file=sys.stderr, flush=True)
    counts = {r["distinct"] for rs in results.values() for r in rs}
    if len(counts) != 1:
        print(f"error: the modes reached different state counts: {sorted(counts)}",
              file=sys.stderr)
        return 1
    summary = {}
    for m, rs in results.items():
        secs = [r["seconds"] for r in rs]
        s = {"runs": rs, "median_seconds": statistics.median(secs), "min_seconds": min(secs),
             "max_seconds": max(secs),
             "median_states_per_second": rs[0]["distinct"] / statistics.median(secs)}
        if "startup_seconds" in rs[0]:
            s["median_startup_seconds"] = statistics.median(r["startup_seconds"] for r in rs)
        summary[m] = s
    if "explore" in summary:
        base = summary["explore"]["median_seconds"]
        for s in summary.values():
            s["ratio_to_explore"] = s["median_seconds"] / base
    doc = {"benchmark": "explore_spark", "config": args.config, "runs": args.runs,
           "distinct": counts.pop(), "commit": git_commit(),
           "date": time.strftime("%Y-%m-%d", time.gmtime()), "machine": machine_info(),
           "results": summary}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
    print(table(doc))
    return 0


def table(doc: dict) -> str:
    lines = [f"{doc['config']}: {doc['distinct']:,} states, median of {doc['runs']} runs",
             "| mode | median s | states/s | vs explore | start-up s |", "|---|---|---|---|---|"]
    for m, s in doc["results"].items():
        ratio = f"{s['ratio_to_explore']:.2f}x" if "ratio_to_explore" in s else "-"
        startup = (f"{s['median_startup_seconds']:.1f}" if "median_startup_seconds" in s
                   else "-")
        lines.append(f"| {m} | {s['median_seconds']:.1f} | {s['median_states_per_second']:,.0f} "
                     f"| {ratio} | {startup} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
