"""``kipcheck mutate``: design-mutation adequacy of the properties (docs/adequacy.md).

The engine (mutant generation, application, classification, triage) is
``properties/mutate.py``; this module parses the command line, schedules one task per mutant on
the campaign runner's executors (``kipcheck.campaign.runner.map_tasks``: serial, a spawn process
pool, Spark executors) and prints the results.

Exit codes (``kipcheck.errors``): 0 = adequacy meets the target of the triage file (or
``--target``) and every survivor is triaged (reviewed as harmless); 1 = an untriaged survivor,
or adequacy below the target; 2 = bad input (an unknown configuration or mutant ID, an
unwritable ``--out``, a malformed triage file), an engine that cannot run, a worker that
raised, or ``model/actions.py`` edited during the run, with one line on stderr; 130 =
interrupted.  Crashed and unbounded mutants are listed but change neither the figure nor the
exit code.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from kipcheck.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_VIOLATION, BadInput

from kipcheck.campaign.cli import _positive_int
from kipcheck.cli import _seed_arg as _seed

__all__ = ["add_mutate_parser", "cmd_mutate"]

_LOG_EVERY = 5.0            # seconds between progress lines when stderr is not a terminal



def _fraction(text: str) -> float:
    try:
        x = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid target {text!r}") from None
    if not 0 <= x <= 1:
        raise argparse.ArgumentTypeError(f"a target is between 0 and 1 (or 0% and 100%), "
                                         f"got {text}")
    return x


def add_mutate_parser(subparsers):
    """Add the ``mutate`` command to ``kipcheck``'s sub-parsers."""
    from kipcheck.campaign.runner import EXECUTORS
    m = subparsers.add_parser(
        "mutate", help="design-mutation adequacy: mutate model/actions.py one site at a time, "
        "explore each mutant on the tiny configurations, and report which ones no property "
        "catches")
    m.add_argument("--configs", default="tiny",
                   help="tiny (default) or a comma-separated list of configuration names")
    m.add_argument("--sample", type=_positive_int, metavar="N",
                   help="run N mutants drawn with random.Random(SEED) (default: all)")
    m.add_argument("--seed", type=_seed, default=0, help="seed of --sample (default 0)")
    m.add_argument("--engine", choices=EXECUTORS, default="processes",
                   help="where mutants run: processes (default, a local spawn pool), serial "
                   "(this process) or spark")
    m.add_argument("--workers", type=_positive_int, metavar="N",
                   help="pool processes or Spark executors (default: the cores)")
    m.add_argument("--master", metavar="URL", help="Spark master URL (--engine spark)")
    m.add_argument("--out", default="kipcheck-mutate.json", metavar="FILE",
                   help="the JSON results (default kipcheck-mutate.json; '' for none)")
    m.add_argument("--only", action="append", default=[], metavar="ID",
                   help="run only this mutant (an ID such as M0042, or a key); repeatable")
    m.add_argument("--list", action="store_true",
                   help="list the mutants (ID, operator, site, key) and run nothing")
    m.add_argument("--target", type=_fraction, metavar="FRACTION",
                   help="adequacy the run must reach (default: the triage file's)")
    m.add_argument("--quiet", action="store_true", help="no progress on stderr")
    m.set_defaults(func=cmd_mutate)
    return m


def _configs(text: str) -> tuple:
    from model.configs import CONFIGS, TINY
    names = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if part == "tiny":
            names += [n for n in TINY if n not in names]
        elif part in CONFIGS:
            if part not in names:
                names.append(part)
        else:
            raise BadInput(f"unknown configuration {part!r}; configurations: tiny, "
                           f"{', '.join(CONFIGS)}")
    if not names:
        raise BadInput(f"--configs {text!r} selects no configuration; give tiny or names "
                       f"(kipcheck configs)")
    return tuple(names)


def _select(gen, only, sample, seed) -> list:
    from properties.mutate import sample_mutants
    mutants = list(gen.mutants)
    if only:
        by_id = gen.by_id()
        by_key = {m.key: m for m in mutants}
        chosen = []
        for x in only:
            m = by_id.get(x.strip().upper()) or by_key.get(x.strip())
            if m is None:
                last = mutants[-1].id if mutants else "none"
                raise BadInput(f"--only {x!r}: no such mutant; IDs are M0000..{last} (kipcheck "
                               f"mutate --list shows them with their keys)")
            if m not in chosen:
                chosen.append(m)
        mutants = sorted(chosen, key=lambda m: m.index)
    return sample_mutants(mutants, sample, seed)


class _Progress:
    def __init__(self, out, total: int):
        self.out = out
        self.total = total
        self.tty = bool(getattr(out, "isatty", None) and out.isatty())
        self.last = 0.0
        self.counts: dict = {}
        self.done = 0

    def __call__(self, rec, elapsed: float) -> None:
        self.done += 1
        self.counts[rec["status"]] = self.counts.get(rec["status"], 0) + 1
        now = time.perf_counter()
        final = self.done == self.total
        if not self.tty and not final and now - self.last < _LOG_EVERY:
            return
        self.last = now
        c = self.counts
        text = (f"[mutate] {self.done}/{self.total}  killed {c.get('killed', 0)}  survived "
                f"{c.get('survived', 0)}  equivalent {c.get('equivalent', 0)}  crashed "
                f"{c.get('crashed', 0)}  unbounded {c.get('unbounded', 0)}  {elapsed:.0f} s  "
                f"(last {rec['id']} {rec['status']} {rec['seconds']:.1f} s)")
        if self.tty:
            print("\r" + text + "\x1b[K", end="\n" if final else "", file=self.out, flush=True)
        else:
            print(text, file=self.out, flush=True)


def _print_trace(title: str, steps, texts, out) -> None:
    print(f"  {title}", file=out)
    for i, (st, text) in enumerate(zip(steps, texts), 1):
        print(f"    {i:>3}. {text}", file=out)
        action, args = st
        print(f"         Step({action!r}, {_tuples(args)!r}),", file=out)


def _tuples(x):
    return tuple(_tuples(v) for v in x) if isinstance(x, list) else x


def _print_mutant(m, rec, out, reason=None) -> None:
    status = rec["status"]
    tag = {"survived": f"survived (triaged: {reason})" if reason else "survived (UNTRIAGED)"
           }.get(status, status)
    print(f"\n{m.label}: {tag} ({rec['seconds']:.1f} s)", file=out)
    print(f"  key: {m.key}", file=out)
    for line in m.diff.splitlines():
        print(f"  {line}", file=out)
    if status == "survived" or (status == "unbounded" and "difference" in rec):
        d = rec.get("difference")
        if d:
            if d["direction"] == "new":
                title = (f"shortest trace under the mutant on {d['config']} to an observation "
                         f"the correct design never reaches ({len(d['steps'])} steps):")
            else:
                title = (f"the mutant reaches nothing new, but misses observations; shortest "
                         f"trace under the CORRECT design on {d['config']} to one the mutant "
                         f"never reaches ({len(d['steps'])} steps):")
            _print_trace(title, d["steps"], d["descriptions"], out)
            print("  in its last state:", file=out)
            for line in d.get("state", ()):
                print(f"    - {line}", file=out)
        lost = sorted({w for row in rec["configs"] for w in row.get("witnesses_missing", ())})
        if lost:
            print(f"  witnesses no longer reached: {', '.join(lost)}", file=out)
    if status == "crashed":
        c = rec["crash"]
        print(f"  {c['error']} on {c['config']}", file=out)
        if c["steps"]:
            _print_trace(f"trace to the step that raises ({len(c['steps'])} steps):",
                         c["steps"], c["descriptions"], out)
    if status == "unbounded":
        cut = [f"{row['config']} ({row.get('distinct', '?')} states, {row.get('stop')})"
               for row in rec["configs"]
               if not row.get("complete", True) and not row.get("kill_search_only")]
        print(f"  exploration cut by the bound on: {', '.join(cut)}", file=out)
        hunt = [row["config"] for row in rec["configs"] if row.get("kill_search_only")]
        if hunt:
            print(f"  then searched for a violation only (no verdict otherwise): "
                  f"{', '.join(hunt)}", file=out)


def _operator_table(mutants, records, out) -> None:
    from properties.mutate import OPERATORS, STATUSES
    rows = {op: {s: 0 for s in STATUSES} for op in OPERATORS}
    for m in mutants:
        rows[m.operator][records[m.index]["status"]] += 1
    print(f"\n{'operator':<18}" + "".join(f"{s:>11}" for s in STATUSES), file=out)
    for op in OPERATORS:
        if sum(rows[op].values()):
            print(f"{op:<18}" + "".join(f"{rows[op][s]:>11}" for s in STATUSES), file=out)


def cmd_mutate(args) -> int:
    from kipcheck.campaign.results import CampaignError
    from kipcheck.campaign.runner import ShardError, map_tasks
    from kipcheck.outputs import check_output_file, write_output
    from properties import mutate as M

    configs = _configs(args.configs)
    check_output_file("--out", args.out)
    if args.master and args.engine != "spark":
        raise BadInput("--master applies to --engine spark only")
    try:
        triage = M.load_triage()
    except M.TriageError as e:
        raise BadInput(str(e)) from None
    if args.target is not None:
        triage["target"] = args.target
    gen = M.generate()
    try:
        M.check_loaded(gen)
    except M.SourceChanged as e:
        raise BadInput(str(e)) from None
    chosen = _select(gen, args.only, args.sample, args.seed)
    out = sys.stdout
    dropped = ", ".join(f"{n} {why}" for why, n in gen.dropped.items())
    print(f"mutate: {len(gen.mutants)} mutants of {M.DISPLAY_PATH} (source {gen.source_sha}; "
          f"dropped: {dropped}); seed {args.seed}; running {len(chosen)}"
          f"{' (sample)' if args.sample else ''} on {', '.join(configs)}", file=out,
          flush=True)
    if args.list:
        for m in chosen:
            mark = "  [triaged]" if m.key in triage["entries"] else ""
            print(f"{m.label}{mark}\n    {m.key}", file=out)
        return EXIT_OK

    log = None if args.quiet else sys.stderr
    t0 = time.perf_counter()
    coverage = M.statement_coverage(configs, gen, progress=log)
    tasks = M.plan_tasks(gen, chosen, coverage, args.seed)
    plan = M.MutationPlan(gen.source_sha, configs)
    progress = None if args.quiet else _Progress(sys.stderr, len(tasks))
    records = {}
    workers = args.workers or (os.cpu_count() or 1)
    try:
        stream = map_tasks(M.run_mutant_task, plan, tasks, engine=args.engine,
                           workers=args.workers, master=args.master)
        try:
            for rec in stream:
                records[rec["index"]] = rec
                if progress is not None:
                    progress(rec, time.perf_counter() - t0)
        finally:
            stream.close()
    except ShardError as e:
        raise BadInput(f"a mutant's worker raised: {e} (completed {len(records)} of "
                       f"{len(tasks)})") from None
    except CampaignError as e:
        raise BadInput(str(e)) from None
    except KeyboardInterrupt:
        print(f"kipcheck: interrupted after {len(records)} of {len(tasks)} mutants",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    wall = time.perf_counter() - t0
    shas = {r.get("source_sha") for r in records.values()}
    if shas - {gen.source_sha}:
        raise BadInput(f"{M.DISPLAY_PATH} changed during the run; run it again")

    ordered = [records[m.index] for m in chosen]
    summary = M.summarize(ordered, triage)
    by_index = {m.index: m for m in chosen}

    # ---- the report ----
    for status in ("survived", "crashed", "unbounded"):
        for r in ordered:
            if r["status"] == status:
                _print_mutant(by_index[r["index"]], r, out, triage["entries"].get(r["key"]))
    c = summary["counts"]
    eq = c["equivalent"]
    unreached, identical = summary["equivalent_unreached"], summary["equivalent_identical"]
    print(f"\n{'class':<12}{'mutants':>8}", file=out)
    bw = summary["killed_by_witness"]
    print(f"{'killed':<12}{c['killed']:>8}   {c['killed'] - bw} by a property clause or a "
          f"whole-graph check; {bw} by a witness no configuration reaches any more (check: exit 4)",
          file=out)
    print(f"{'survived':<12}{c['survived']:>8}   {len(summary['triaged'])} triaged, "
          f"{len(summary['untriaged'])} untriaged", file=out)
    print(f"{'equivalent':<12}{eq:>8}   {unreached} unreached (the site never runs on these "
          f"configurations), {identical} with identical states, "
          f"{eq - unreached - identical} with the same observations", file=out)
    print(f"{'crashed':<12}{c['crashed']:>8}   excluded from adequacy", file=out)
    print(f"{'unbounded':<12}{c['unbounded']:>8}   excluded from adequacy", file=out)
    _operator_table(chosen, records, out)
    skipped = sum(len(r.get("skipped_configs", ())) for r in ordered)
    runs = sum(len(r["configs"]) for r in ordered)
    print(f"\nexplorations: {runs} (mutant x configuration); {skipped} more were equivalent by "
          f"construction (the configuration never runs the mutated statement)", file=out)
    times = [r["seconds"] for r in ordered]
    if times:
        slow = max(ordered, key=lambda r: r["seconds"])
        print(f"time per mutant: median {statistics.median(times):.2f} s, mean "
              f"{statistics.mean(times):.2f} s, max {slow['seconds']:.1f} s ({slow['id']}); "
              f"wall {wall:.0f} s on {args.engine}"
              f"{'' if args.engine == 'serial' else f' ({workers} workers)'}", file=out)
    k, s = c["killed"], c["survived"]
    print(f"adequacy = killed / (killed + survived) = {k}/{k + s} = "
          f"{100 * summary['adequacy']:.1f} % (target {100 * summary['target']:.1f} %)",
          file=out)
    u = len(summary["untriaged"])
    print(f"over non-equivalent mutants (triaged survivors counted as equivalent): killed / "
          f"(killed + untriaged) = {k}/{k + u} = "
          f"{100 * summary['adequacy_non_equivalent']:.1f} %", file=out)
    if summary["untriaged"]:
        print(f"UNTRIAGED survivors: {', '.join(summary['untriaged'])} (review them; add the "
              f"harmless ones to properties/adequacy_triage.toml)", file=out)

    status = EXIT_OK if summary["ok"] else EXIT_VIOLATION
    if args.out:
        doc = {"format": "kipcheck-mutate", "version": 1,
               "command": "kipcheck mutate " + " ".join(sys.argv[2:]),
               "seed": args.seed, "configs": list(configs), "engine": args.engine,
               "workers": None if args.engine == "serial" else workers,
               "source_sha": gen.source_sha, "generated": len(gen.mutants),
               "dropped": gen.dropped, "selected": len(chosen),
               "bounds": {"factor": plan.bound_factor, "min_states": plan.bound_min,
                          "seconds": plan.time_bound},
               "coverage": {name: {"statements": len(lines), "distinct": n}
                            for name, (lines, n) in coverage.items()},
               "summary": summary, "wall_seconds": round(wall, 1),
               "mutants": [dict(by_index[r["index"]].to_json(), **r,
                                triage=triage["entries"].get(r["key"])) for r in ordered]}

        def write():
            with open(args.out, "w", encoding="utf-8") as f:
                json.dump(doc, f, indent=1)
                f.write("\n")
        if not write_output("the results", args.out, write):
            return status if status == EXIT_VIOLATION else EXIT_BAD_INPUT
        print(f"results: {args.out}", file=out)
    return status
