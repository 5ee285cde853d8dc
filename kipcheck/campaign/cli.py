"""``kipcheck campaign SPEC.toml`` and ``kipcheck replay --campaign DIR --seed N``.

Exit codes (``kipcheck.errors``): 0 = no unexpected failure (the correct design violated
nothing, no variant broke a property it is not listed to break), every listed variant was
found and the sampled seeds replayed to the same digests; 1 = a violation or a failed check
(the summary says which); 2 = bad input or an environment the campaign cannot run in, one line
on stderr: a malformed spec, an unusable output directory, a damaged campaign directory, an
unavailable engine, an output that became unwritable during the run, a shard that raised (with
its Python exception); 130 = interrupted.  Whenever a run stops early, the finished shards stay
on disk and the line ends with the command that resumes it.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from kipcheck.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_VIOLATION

__all__ = ["add_campaign_parser", "cmd_campaign", "replay_from_campaign", "cmd_replay_campaign"]

_LOG_EVERY = 5.0            # seconds between progress lines when stderr is not a terminal


def _positive_int(text: str) -> int:
    try:
        n = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be positive, got {n}")
    return n


def add_campaign_parser(subparsers):
    """Add the ``campaign`` command to ``kipcheck``'s sub-parsers."""
    from kipcheck.campaign.runner import EXECUTORS
    c = subparsers.add_parser(
        "campaign", help="run a fuzzing campaign from a TOML spec over Spark executors, a "
        "process pool or this process; results as Parquet (see examples/campaign-ci.toml)")
    c.add_argument("spec", metavar="SPEC.toml", help="the campaign spec")
    c.add_argument("--engine", choices=EXECUTORS, default="spark",
                   help="where shards run: spark (default; local mode unless --master), "
                   "processes (a local process pool) or serial (this process)")
    c.add_argument("--master", metavar="URL", help="Spark master URL (default: local mode)")
    c.add_argument("--executors", type=_positive_int, metavar="N",
                   help="Spark executors or pool processes (default: the cores)")
    c.add_argument("--resume", action="store_true",
                   help="continue the campaign in the output directory, skipping finished "
                   "shards")
    c.add_argument("--out", metavar="DIR", help="output directory (default: the spec's)")
    c.add_argument("--json", action="store_true",
                   help="print the summary as JSON on stdout (the table goes to stderr)")
    c.add_argument("--quiet", action="store_true", help="no progress on stderr")
    c.set_defaults(func=cmd_campaign)
    return c


class _Progress:
    """A one-line progress bar on a terminal, redrawn per shard; a plain line every few
    seconds in a log."""

    def __init__(self, out):
        self.out = out
        self.tty = bool(getattr(out, "isatty", None) and out.isatty())
        self.width = 0
        self.last = time.perf_counter()

    def __call__(self, p) -> None:
        now = time.perf_counter()
        final = p.done == p.total
        if not self.tty and not final and now - self.last < _LOG_EVERY:
            return
        self.last = now
        text = (f"shards {p.done}/{p.total}  {p.steps:,} steps  "
                f"{p.steps_per_second:,.0f} steps/s  unexpected failures {p.unexpected}  "
                f"{p.elapsed:.1f} s")
        if self.tty:
            pad = " " * max(0, self.width - len(text))
            self.width = len(text)
            print(f"\r{text}{pad}", end="\n" if final else "", file=self.out, flush=True)
        else:
            print(f"[campaign] {text}", file=self.out, flush=True)

    def end_line(self) -> None:
        if self.tty and self.width:
            print(file=self.out, flush=True)
            self.width = 0


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> int:
    print(f"kipcheck: {message}", file=sys.stderr)
    return code


def _kept(e, directory) -> str:
    """What a run stopped by ``e`` leaves, and the command that continues it."""
    return (f"; {e.kept} of {e.total} shards are finished and kept in {directory}/shards; "
            f"resume with: {e.resume_hint}")


def cmd_campaign(args) -> int:
    from kipcheck.campaign.results import CampaignError, OutputError, require_parquet
    from kipcheck.campaign.runner import ShardError, run_campaign
    from kipcheck.campaign.spec import SpecError, load_spec
    try:
        spec = load_spec(args.spec)
        require_parquet()          # before any output: without it no campaign can start
    except (SpecError, CampaignError) as e:
        return _fail(str(e))
    if args.out:
        spec = replace(spec, output=args.out)
    where = "--out" if args.out else f"output in {args.spec}"
    out = sys.stderr if args.json else sys.stdout
    for w in spec.warnings():
        print(f"kipcheck: warning: {w}", file=sys.stderr)
    progress = None if args.quiet else _Progress(sys.stderr)
    log = None if args.quiet else (lambda line: print(f"[campaign] {line}", file=sys.stderr,
                                                      flush=True))
    print(f"campaign {spec.name}: seed {spec.seed}, {len(spec.pairs())} (configuration, "
          f"variant) pairs x {', '.join(spec.engines)} x {spec.shards} shards, engine "
          f"{args.engine}, results in {spec.output}", file=out, flush=True)
    try:
        summary = run_campaign(spec, engine=args.engine, master=args.master,
                               executors=args.executors, resume=args.resume,
                               progress=progress, log=log)
    except (ShardError, OutputError) as e:
        if progress is not None:
            progress.end_line()
        if getattr(e, "kept", None) is None:        # refused before any shard ran
            return _fail(f"{where}: {e}")
        return _fail(f"{e}{_kept(e, spec.output)}")
    except (CampaignError, SpecError) as e:
        if progress is not None:
            progress.end_line()
        return _fail(str(e))
    if progress is not None:
        progress.end_line()
    if summary.interrupted:
        print(f"kipcheck: interrupted: {summary.done} of {summary.total} shards are finished "
              f"and kept in {summary.directory}/shards; resume with: {summary.resume_hint}",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    print_summary(summary, out)
    if summary.merged is not None:
        from kipcheck.campaign.report import write_campaign_report
        from kipcheck.campaign.results import ResultStore
        try:
            paths = write_campaign_report(summary, ResultStore(summary.directory).load_records(),
                                          summary.directory)
            print(f"report: {paths['html']} and {paths['markdown']}", file=out)
        except (OSError, CampaignError) as e:
            print(f"kipcheck: cannot write the report: {e}", file=sys.stderr)
    if args.json:
        print(json.dumps(summary.to_dict(), indent=1))
    return summary.exit_code


def _print_failures(summary, out) -> None:
    """The failures, de-duplicated by (variant, property, clause): the unexpected ones (what
    a person must look at) apart from the expected ones (seeded variants caught)."""
    m = summary.merged
    unexpected, expected = m.unexpected, m.expected
    if not m.failures:
        return
    reports = sum(len(f.seeds) for f in m.failures)
    print(f"\nfailures, de-duplicated by (variant, property, clause): {len(unexpected)} "
          f"unexpected, {len(expected)} expected (from {reports} shard reports)", file=out)
    for title, group in (("UNEXPECTED (the correct design violating a property, or a variant "
                          "breaking one it is not listed to break)", unexpected),
                         ("expected (a seeded variant breaking a property it is listed to "
                          "break)", expected)):
        if not group:
            continue
        print(f"{title}:", file=out)
        for f in group:
            traces = f", {f.traces} distinct traces" if f.traces > 1 else ""
            print(f"  {f.variant} {f.property} [{f.clause}] on {', '.join(f.configs)}: "
                  f"{_n(f.trace_length, 'step')} (shortest), found by "
                  f"{_n(len(f.seeds), 'shard')} ({', '.join(f.engines)}){traces}; replay: "
                  f"kipcheck replay --campaign {summary.directory} --seed {f.seed}", file=out)


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def print_summary(summary, out) -> None:
    """The summary table: one row per (configuration, variant), then the failures
    de-duplicated by (variant, property, clause), unexpected ones first, each with the command
    that replays its shortest trace, then the verdict."""
    from model.config import VARIANTS
    m = summary.merged
    rate = m.steps / summary.seconds if summary.seconds > 0 else 0.0
    print(f"\n{summary.done}/{summary.total} shards ({summary.ran} this run"
          f"{f', {summary.skipped} resumed' if summary.skipped else ''}), "
          f"{summary.seconds:.1f} s, {m.steps:,} steps"
          f"{f' ({rate:,.0f} steps/s)' if summary.ran == summary.done else ''}", file=out)
    cw = max([len("configuration")] + [len(g.config) for g in m.groups])
    vw = max([len("variant")] + [len(g.variant) for g in m.groups])
    print(f"{'configuration':<{cw}}  {'variant':<{vw}}  {'shards':>6}  {'steps':>11}  "
          f"{'states':>8}  {'coverage':>16}  {'witnesses':>9}  result", file=out)
    notes = []
    for g in m.groups:
        if g.coverage is not None:
            cov = f"{g.coverage.states_share:.1%} of {g.coverage.states_reachable:,}"
            if g.coverage.outside:
                notes.append(f"{g.config} [{g.variant}]: {g.coverage.outside:,} visited states "
                             f"are NOT in the explorer's reachable set: do not trust this "
                             f"coverage")
        else:
            cov = "unknown"
            notes.append(f"{g.config} [{g.variant}]: {g.coverage_note}")
        expected = len(g.witnesses_expected)
        wit = f"{sum(1 for w in g.witnesses_expected if w in g.witnesses)}/{expected}"
        props = "/".join(sorted(g.properties))
        if g.variant == "correct":
            result = f"VIOLATED {props}" if props else "ok"
        else:
            want = VARIANTS[g.variant].breaks if g.variant in VARIANTS else ()
            hit = sorted(p for p in g.properties if p in want)
            other = sorted(p for p in g.properties if p not in want)
            result = f"found {'/'.join(hit)}" if hit else \
                f"not found here (it breaks {'/'.join(want)})"
            if other:
                result += f"; UNEXPECTED {'/'.join(other)}"
        if g.time_capped:
            result += f"; {g.time_capped} shards hit max_seconds"
        print(f"{g.config:<{cw}}  {g.variant:<{vw}}  {g.shards:>6}  {g.steps:>11,}  "
              f"{g.distinct:>8,}  {cov:>16}  {wit:>9}  {result}", file=out)
    for n in notes:
        print(f"  coverage: {n}", file=out)
    _print_failures(summary, out)
    if summary.determinism_checked:
        if summary.determinism_mismatches:
            print(f"\nDETERMINISM CHECK FAILED: {len(summary.determinism_mismatches)} of "
                  f"{len(summary.determinism_checked)} re-run shards gave a different result "
                  f"from the same seed:", file=out)
            for d in summary.determinism_mismatches:
                print(f"  seed {d.seed} ({d.key}): recorded digest {d.recorded[:16]}, re-run "
                      f"{d.rerun[:16]}: {d.reason}", file=out)
            print("  these shards' failures and coverage are not reproducible", file=out)
        else:
            print(f"\ndeterminism: {len(summary.determinism_checked)} shards re-run in this "
                  f"process, same digests (seeds "
                  f"{', '.join(map(str, summary.determinism_checked))})", file=out)
    problems = summary.problems()
    if problems:
        print("FAILED: " + "; ".join(problems), file=out)
    else:
        listed = [v for v in summary.spec.variants if v != "correct"]
        print("OK: the correct design violated nothing"
              + (f"; all {len(listed)} variants found" if listed else ""), file=out)


# ---- replay ---------------------------------------------------------------------------------

def replay_from_campaign(directory, seed: int, *, out=None, pytest: bool = False,
                         itf_out: str | None = None, mermaid_out: str | None = None) -> tuple:
    """Reproduce the failures recorded by the shard with seed ``seed`` in campaign directory
    ``directory``: each recorded trace (a JSON document in the Parquet record) becomes a
    ``Trace`` (``Trace.from_json``) and is replayed and printed by ``kipcheck replay``'s own
    ``replay_and_print``, so a campaign failure reads exactly like ``kipcheck replay FILE``.
    The trace is also saved as DIR/traces/seed-SEED.json when the directory takes it.
    Returns (the first Trace or None, exit code): 1 = reproduced (a violation, as
    ``kipcheck replay``), 0 = that shard found no failure, 2 = no such campaign or seed, a
    damaged campaign directory, or a trace that does not reproduce."""
    from kipcheck.campaign.results import CampaignError, ResultStore
    from kipcheck.campaign.shard import CONFORMANCE_FORMAT
    from kipcheck.cli import replay_and_print          # lazily: kipcheck.cli imports us lazily
    from kipcheck.errors import BadInput
    from properties.trace import Trace, TraceError
    out = out or sys.stdout
    status = sys.stderr if pytest else out              # keep --pytest output a valid module
    store = ResultStore(directory)
    try:
        if store.read_meta() is None:
            return None, _fail(f"{directory} is not a campaign directory (no campaign.json)")
        records = [r for r in store.load_all() if r.seed == seed]
    except CampaignError as e:
        return None, _fail(str(e))
    if not records:
        return None, _fail(f"no shard with seed {seed} in {directory}; the campaign summary "
                           f"lists the seeds of its failures (Parquet column 'seed')")
    shard = records[0]
    if not shard.failures:
        print(f"shard {shard.key} (seed {seed}) found no failure: nothing to replay",
              file=status)
        return None, EXIT_OK
    first, worst = None, EXIT_OK
    for i, f in enumerate(shard.failures):
        source = f"shard {shard.key} (seed {seed}): {f.property}"
        try:
            doc = json.loads(f.trace)
        except (ValueError, RecursionError):
            worst = _worst(worst, _fail(f"{source}: the recorded trace is not JSON"))
            continue
        if isinstance(doc, dict) and doc.get("format") == CONFORMANCE_FORMAT:
            worst = _worst(worst, _replay_divergence(doc, shard, out))
            continue
        suffix = "" if i == 0 else f"-{i + 1}"
        try:
            trace = Trace.from_json(doc)
        except TraceError as e:
            worst = _worst(worst, _fail(f"{source}: no replayable trace ({e})"))
            continue
        print(f"shard {shard.key} (seed {seed}, engine {shard.engine}): "
              f"{_save_trace(directory, f'seed-{seed}{suffix}.json', doc)}", file=status)
        try:
            code = replay_and_print(trace, source, pytest=pytest,
                                    itf_out=_numbered(itf_out, suffix),
                                    mermaid_out=_numbered(mermaid_out, suffix), out=out)
        except (BadInput, TraceError) as e:
            code = _fail(str(e))
        except OSError as e:                            # --itf-out / --mermaid-out
            code = _fail(f"cannot write {e.filename or 'the output'}: "
                         f"{e.strerror or e}")
        if first is None:
            first = trace
        worst = _worst(worst, code)
    return first, worst


def _save_trace(directory, name: str, doc: dict) -> str:
    """Save the recorded trace beside the campaign (for ``kipcheck replay FILE``); a campaign
    directory that takes no files is not an error: the replay needs no file."""
    path = Path(directory) / "traces" / name
    try:
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(doc, indent=1) + "\n")
    except OSError as e:
        return f"replaying the recorded trace (not saved: {e.strerror or e})"
    return f"replaying the recorded trace, saved as {path}"


def _numbered(path: str | None, suffix: str) -> str | None:
    """An output path for the shard's second, third... failure (a shard of the random-walk
    engine can record several)."""
    if not path or not suffix:
        return path
    p = Path(path)
    return str(p.with_name(p.stem + suffix + p.suffix))


def _worst(a: int, b: int) -> int:
    return EXIT_BAD_INPUT if EXIT_BAD_INPUT in (a, b) else max(a, b)


def _replay_divergence(doc: dict, shard, out) -> int:
    """Re-check a recorded conformance divergence: drive the model and the implementation
    through the recorded model steps again (``properties.conformance.check_steps``)."""
    from model.configs import CONFIGS
    from model.step import Step
    try:
        from properties.conformance import check_steps
        steps = [Step.from_json(x) for x in doc["steps"]]
        again = check_steps(CONFIGS[doc["config"]], steps, doc["seed"])
    except (ImportError, KeyError, ValueError) as e:
        return _fail(f"shard {shard.key}: cannot re-check the conformance divergence ({e})")
    if again is None:
        return _fail(f"shard {shard.key} (seed {shard.seed}): the recorded divergence "
                     f"({len(steps)} steps) does not reproduce: model and implementation now "
                     f"agree on every step")
    print(f"reproduced: {doc['config']} conformance divergence after {len(steps)} steps "
          f"(shard {shard.key}, seed {shard.seed})", file=out)
    print(again.describe() if hasattr(again, "describe") else str(again), file=out)
    return EXIT_VIOLATION


def cmd_replay_campaign(args) -> int:
    """``kipcheck replay --campaign DIR --seed N [--pytest] [--itf-out F] [--mermaid-out F]``
    (called by kipcheck.cli.cmd_replay)."""
    if getattr(args, "file", None):
        return _fail("give either a trace FILE or --campaign DIR --seed N, not both")
    if not getattr(args, "campaign", None) or getattr(args, "seed", None) is None:
        return _fail("replay needs a trace FILE, or --campaign DIR with --seed N")
    return replay_from_campaign(args.campaign, args.seed,
                                pytest=bool(getattr(args, "pytest", False)),
                                itf_out=getattr(args, "itf_out", None),
                                mermaid_out=getattr(args, "mermaid_out", None))[1]
