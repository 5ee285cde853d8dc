"""Conformance throughput: model + implementation steps per second (DESIGN section 9 target:
>= 1 k).

Two drivers on every tiny configuration, 3 runs each, medians reported:

- ``hypothesis``: ``run_conformance`` with the ``dev`` profile, as ``kipcheck conform`` runs it
  (Hypothesis draws each step; a step is applied to the model and to the implementation and
  both are projected and compared);
- ``random``: the same lockstep ``Driver`` with steps drawn by a seeded ``random.Random``, to
  show what the Hypothesis machinery costs on top.

Usage: ``python -m bench.conform [--runs 3] [--out bench/results/conform.json]``.
"""
from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import time
from pathlib import Path

from model import next as model_next
from model.configs import CONFIGS, TINY
from properties.conformance import Driver, run_conformance


def random_lockstep(config: str, seed: int, runs: int = 200, steps: int = 60) -> tuple:
    cfg = CONFIGS[config]
    rng = random.Random(seed)
    n = 0
    t0 = time.perf_counter()
    for _ in range(runs):
        d = Driver(cfg, rng.getrandbits(32))
        if d.start():
            raise AssertionError("initial states differ")
        for _ in range(steps):
            succ = model_next.successors(d.state, cfg, d.design)
            if not succ:
                break
            st, _ = succ[rng.randrange(len(succ))]
            div = d.apply(st)
            n += 1
            if div:
                raise AssertionError(div.describe())
    return n, time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default="bench/results/conform.json")
    args = ap.parse_args(argv)
    results = {}
    for config in TINY:
        hyp, rnd = [], []
        for i in range(args.runs):
            r = run_conformance(config, seed=1000 + i, profile="dev")
            if r.divergence:
                raise SystemExit(f"{config}: divergence: {r.divergence_text()}")
            hyp.append(r.steps / r.seconds)
            n, secs = random_lockstep(config, 2000 + i)
            rnd.append(n / secs)
        results[config] = {
            "hypothesis_steps_per_s": [round(x, 1) for x in hyp],
            "hypothesis_median": round(statistics.median(hyp), 1),
            "random_steps_per_s": [round(x, 1) for x in rnd],
            "random_median": round(statistics.median(rnd), 1),
        }
        print(f"{config:<28} hypothesis {statistics.median(hyp):>7,.0f} steps/s   "
              f"random lockstep {statistics.median(rnd):>7,.0f} steps/s", flush=True)
    doc = {"bench": "conform", "what": "model + implementation lockstep steps per second "
           "(one step = the model's step, the implementation's, both projections compared)",
           "runs": args.runs, "machine": {"python": platform.python_version(),
                                          "processor": platform.processor() or platform.machine()},
           "date": time.strftime("%Y-%m-%d"), "results": results}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
