"""The ``kipcheck`` command line.

Exit codes: 0 = everything holds; 1 = a property is violated (or, for ``check``, the correct
design fails, a witness is unreached or a variant is not caught); 2 = bad input (unknown
name, malformed or mismatching trace, bad option), with one line on stderr; 3 = inconclusive
(``prove``: no proof and no counterexample); 130 = interrupted (``fuzz`` still prints the
summary of the work done).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from kipcheck.errors import (EXIT_BAD_INPUT, EXIT_INCONCLUSIVE, EXIT_INTERRUPTED, EXIT_OK,
                             EXIT_VIOLATION, EXIT_WITNESS_MISSING, BadInput)
from kipcheck.outputs import check_output_dir, check_output_file, write_output
from kipcheck.workers import stop_pool, worker_init
from model.step import steps_text


class _Parser(argparse.ArgumentParser):
    def error(self, message):                      # one line, exit 2 (argparse prints two)
        raise BadInput(f"{message} (see 'kipcheck {self.prog.split()[-1]} --help')"
                       if " " in self.prog else f"{message} (see 'kipcheck --help')")


# --------------------------------------------------------------------------------------------
# explore


def _spec(config: str, variant: str | None):
    from properties.kafka_spec import KafkaSpec, UnknownName
    try:
        return KafkaSpec.named(config, variant)
    except UnknownName as e:
        raise BadInput(str(e)) from None


def _trace_of(spec, result):
    from properties.trace import Trace
    clause = spec.clause_violated(result.violating_state)
    return Trace(spec.cfg.name, spec.variant, tuple(result.trace), result.violation,
                 clause[1] if clause else None, engine="explore")


def _clause_statement(name) -> str:
    """The first paragraph of the clause's docstring (its statement, before the sources), on
    one line; "" for an unknown clause."""
    from kipcheck.docgen import first_paragraph
    from properties.registry import PROPERTIES
    for prop in PROPERTIES:
        for clause in prop.clauses:
            if clause.name == name:
                return first_paragraph(clause.doc)
    return ""


def _print_trace(trace, out) -> None:
    """Each step in Kafka's words (what it found and what it did) with the ``Step(...)`` to
    paste into a test, then the facts of the last state that break the clause."""
    from model.describe import describe_trace
    from model.next import replay as replay_steps
    from properties.kafka_spec import KafkaSpec
    from properties.registry import describe_violation
    spec = KafkaSpec.named(trace.config, trace.variant)
    stated = _clause_statement(trace.clause)
    if stated:
        # the property's summary above names what it allows; the clause says what broke
        print(f"clause {trace.clause}: {stated}", file=out)
    print(f"counterexample ({steps_text(len(trace.steps))}) violating {trace.property} "
          f"[{trace.clause}]:", file=out)
    texts = describe_trace(spec.cfg, spec.design, trace.steps)
    for i, (st, text) in enumerate(zip(trace.steps, texts), 1):
        print(f"  {i:>3}. {text}", file=out)
        print(f"       Step({st.action!r}, {st.args!r}),", file=out)
    if trace.property:
        try:
            end = replay_steps(spec.cfg, spec.design, trace.steps)[-1]
        except ValueError:              # a trace that does not replay: replay() says so
            return
        print(f"  in the last state ({trace.property} [{trace.clause}]):", file=out)
        for line in describe_violation(spec.cfg, spec.design, end, trace.property,
                                       trace.clause):
            print(f"       - {line}", file=out)


def cmd_explore(args) -> int:
    from properties.explore import INTERRUPTED, explore, write_dot, write_graphml
    from properties.registry import BY_ID
    spec = _spec(args.config, args.variant)
    if args.max_states is not None and args.max_states < 1:
        raise BadInput("--max-states must be a positive number")
    if args.max_seconds is not None and not (args.max_seconds > 0
                                             and math.isfinite(args.max_seconds)):
        raise BadInput("--max-seconds must be a positive number of seconds")
    _check_outputs(args, "trace_out", "itf_out", "graph_out")
    progress = None if args.quiet else sys.stderr
    try:
        if args.master and not args.spark:
            raise BadInput("--master needs --spark")
        if args.workers is not None and args.workers < 1:
            raise BadInput("--workers must be a positive number")
        if args.workers is not None and args.spark:
            raise BadInput("--workers is for one machine; with --spark the executors share "
                           "the work (--master)")
        if args.workers is not None and args.workers > 1 and args.graph_out:
            raise BadInput("--graph-out needs --workers 1 (the graph is built in one process)")
        if args.spark:
            if args.graph_out:
                raise BadInput("--graph-out is not available with --spark")
            if args.max_seconds is not None:
                raise BadInput("--max-seconds is not available with --spark")
            from kipcheck.campaign.spark import SparkUnavailable, explore_spark
            try:
                result = explore_spark(spec, master=args.master, symmetry=args.symmetry,
                                       max_states=args.max_states, max_depth=args.max_depth,
                                       progress=progress)
            except SparkUnavailable as e:
                raise BadInput(str(e)) from None
        else:
            from properties.parallel import default_workers
            workers = args.workers or (1 if args.graph_out else default_workers())
            result = explore(spec, symmetry=args.symmetry, max_states=args.max_states,
                             max_depth=args.max_depth, progress=progress,
                             graph=bool(args.graph_out),
                             graph_checks=not args.no_graph_checks, workers=workers,
                             max_seconds=args.max_seconds, interruptible=True,
                             keep_fingerprints=not args.symmetry)
            if result.complete and not args.symmetry:
                # a complete run is the reachable set that campaigns measure coverage against:
                # cache it, so that a medium configuration is not explored a second time
                from properties.coverage import remember
                remember(spec, result)
                if progress is not None:
                    print(f"[explore] reachable set of {spec.name} cached for coverage "
                          f"(campaigns, kipcheck fuzz)", file=progress)
    except ValueError as e:                                  # graph too large, bad bounds
        raise BadInput(str(e)) from None
    out = sys.stdout
    print(f"{spec.name}: {result.distinct:,} distinct states, {result.generated:,} generated, "
          f"depth {result.depth}, {result.seconds:.2f} s "
          f"({result.distinct_per_second:,.0f} distinct/s)"
          f"{' with symmetry' if args.symmetry else ''}"
          f"{'' if result.complete else ' -- INCOMPLETE (' + str(result.stop_reason) + ')'}",
          file=out)
    covered = [a for a, n in result.action_counts.items() if n]
    print(f"actions taken: {len(covered)}/{len(result.action_counts)}; " + ", ".join(
        f"{a} {n:,}" for a, n in result.action_counts.items() if n), file=out)
    if not covered == list(result.action_counts):
        never = [a for a, n in result.action_counts.items() if not n]
        print(f"actions never enabled: {', '.join(never)}", file=out)
    print(f"witnesses reached: {len(result.witnesses_reached)}/{len(spec.witness_ids())}"
          + (f"; MISSING: {', '.join(result.witnesses_missing)}" if result.witnesses_missing
             and result.violation is None and result.complete else ""), file=out)
    written = True
    if result.graph is not None:
        writer = write_graphml if args.graph_out.endswith(".graphml") else write_dot
        if write_output("the state graph", args.graph_out,
                        lambda: writer(result.graph, args.graph_out)):
            print(f"state graph written to {args.graph_out}", file=out)
        else:
            written = False
    unreached = () if args.spark else spec.flags_unreached()
    graph_violation = getattr(result, "graph_violation", None)
    if result.violation is None and graph_violation is not None:
        # SETTLE / DEADLOCK / PROGRESS (properties/graphcheck.py): reported like a property
        # violation
        from properties.graphcheck import describe as describe_graph_violation
        from properties.trace import Trace
        print("no safety property violated; a whole-graph check fails:", file=out)
        for line in describe_graph_violation(spec, result):
            print(line, file=out)
        if args.trace_out or args.itf_out:
            # SETTLE: the steps to the loop and once round it, the loop starting after
            # loop_start steps; DEADLOCK: the steps to the deadlocked state; PROGRESS: the
            # steps to the state that owes an answer.  The trace names the check, and
            # `kipcheck replay` re-checks it.
            into = tuple(result.graph_trace) + tuple(result.graph_stem)
            settle = graph_violation == "SETTLE"
            trace = Trace(spec.cfg.name, spec.variant, into + tuple(result.graph_loop),
                          engine="explore", graph_check=graph_violation,
                          loop_start=len(into) if settle else None)
            what = ("to the loop and once round it" if settle else "to the deadlocked state"
                    if graph_violation == "DEADLOCK" else "to the state that owes the answer")
            if args.trace_out and write_output("the trace", args.trace_out,
                                               lambda: trace.dump(args.trace_out)):
                print(f"trace ({what}) written to {args.trace_out} "
                      f"(replay: kipcheck replay {args.trace_out})", file=out)
            if args.itf_out:
                _write_itf(trace, args.itf_out, out)
        return EXIT_VIOLATION
    if result.violation is None:
        if args.trace_out or args.itf_out:
            print(f"no trace written to {args.trace_out or args.itf_out}: nothing is violated",
                  file=out)
        print("no property violated" + ("" if result.complete else " within the bounds")
              + ("; whole-graph checks not run under --spark (SETTLE, DEADLOCK: run without "
                 "--spark)" if args.spark else ""), file=out)
        if getattr(result, "graph_checked", False):
            print(f"SETTLE and DEADLOCK hold: every state can reach a settled one, and none is "
                  f"deadlocked; PROGRESS holds: a healthy cluster can answer every client "
                  f"waiting within its deadline and complete every pending registration RPC "
                  f"without a fault (graph "
                  f"{result.graph_bytes / 1e6:.1f} MB)", file=out)
        if unreached:
            print(f"indistinguishable from the correct design on {spec.cfg.name}: the branch "
                  f"of {', '.join(unreached)} was never reached (the model never read the "
                  f"flag), so this run says nothing about the flaw", file=out)
        if not written:
            return EXIT_BAD_INPUT
        if not result.complete:
            print(f"INCOMPLETE: the search stopped early ({result.stop_reason}); no verdict "
                  f"for the states not explored", file=out)
            return EXIT_INTERRUPTED if result.stop_reason == INTERRUPTED else EXIT_INCONCLUSIVE
        if result.witnesses_missing:
            print(f"WITNESS MISSING: {', '.join(result.witnesses_missing)} never reached: "
                  f"the model may do nothing where it should (exit 4, not a violation)",
                  file=out)
            return EXIT_WITNESS_MISSING
        return EXIT_OK
    trace = _trace_of(spec, result)
    prop = BY_ID[result.violation]
    print(f"VIOLATED {prop.id} {prop.name}: {prop.statement}", file=out)
    _print_trace(trace, out)
    if unreached:
        print(f"note: the model never read {', '.join(unreached)} in this search: the same "
              f"run is one of the correct design's, and the property judged it by the "
              f"variant's design rather than by what the cluster did", file=out)
    if args.trace_out:
        if write_output("the trace", args.trace_out, lambda: trace.dump(args.trace_out)):
            print(f"trace written to {args.trace_out} (replay: kipcheck replay "
                  f"{args.trace_out})", file=out)
    if args.itf_out:
        _write_itf(trace, args.itf_out, out)
    return EXIT_VIOLATION          # outranks an output that could not be written (errors.py)


def _check_outputs(args, *options: str) -> None:
    """Refuse unwritable output files before any work starts (kipcheck/outputs.py)."""
    for opt in options:
        check_output_file(f"--{opt.replace('_', '-')}", getattr(args, opt, None))


def _write_itf(trace_or_result, path: str, out=None) -> bool:
    """Write a counterexample (a Trace, replayed here, or a replay's result) as ITF; say so on
    ``out`` if given."""
    from kipcheck.export import write_itf
    from properties.trace import Trace, replay
    result = replay(trace_or_result) if isinstance(trace_or_result, Trace) else trace_or_result
    if write_output("the ITF trace", path, lambda: write_itf(result, path)):
        if out is not None:
            print(f"ITF trace written to {path}", file=out)
        return True
    return False


# --------------------------------------------------------------------------------------------
# replay


def cmd_replay(args) -> int:
    if args.campaign or args.seed is not None or args.file is None:
        from kipcheck.campaign.cli import cmd_replay_campaign
        return cmd_replay_campaign(args)
    from properties.trace import Trace, TraceError
    _check_outputs(args, "itf_out", "mermaid_out")
    try:
        trace = Trace.load(args.file)
    except TraceError as e:
        raise BadInput(f"trace {args.file}: {e}") from None
    return replay_and_print(trace, f"trace {args.file}", pytest=args.pytest,
                            itf_out=args.itf_out, mermaid_out=args.mermaid_out)


def replay_and_print(trace, source: str, *, pytest: bool = False, itf_out: str | None = None,
                     mermaid_out: str | None = None, out=None) -> int:
    """Replay ``trace`` through the model and print it as ``kipcheck replay`` does: 1 when it
    reproduces its violation, 0 when it replays to no violation as recorded; BadInput (naming
    ``source``) when it does not replay or ends elsewhere.  ``replay --campaign`` uses it too."""
    from properties.trace import TraceError, as_pytest, replay
    out = out or sys.stdout
    try:
        result = replay(trace)
    except TraceError as e:
        raise BadInput(f"{source}: {e}") from None
    note = ""
    if trace.model_hash and not result.model_hash_matches:
        note = f" (recorded with model {trace.model_hash}; this is a different model version)"
    if pytest:
        print(as_pytest(trace), end="", file=out)
    elif trace.graph_check is not None:
        _print_graph_trace(trace, result, out)
    else:
        _print_trace(trace, out) if trace.property else print(
            f"trace of {len(trace.steps)} steps", file=out)
    written = True
    if itf_out:
        written &= _write_itf(result, itf_out, out)
    if mermaid_out:
        from kipcheck.export import to_mermaid
        from properties.kafka_spec import get_config
        text = to_mermaid(result, get_config(trace.config))
        if write_output("the Mermaid diagram", mermaid_out,
                        lambda: Path(mermaid_out).write_text(text)):
            print(f"Mermaid diagram written to {mermaid_out}", file=out)
        else:
            written = False
    status = sys.stderr if pytest else out     # keep --pytest output a valid module
    if result.graph is not None:
        # SETTLE / DEADLOCK (properties/graphcheck.py): re-checked, not read off the end state
        from properties.graphcheck import GRAPH_CHECKS
        check = f"{trace.graph_check} [{GRAPH_CHECKS[trace.graph_check][0]}]"
        if result.graph.reproduced is None:
            print(f"inconclusive: {trace.config} [{trace.variant}] {check}: "
                  f"{result.graph.detail}", file=status)
            return EXIT_INCONCLUSIVE
        if not result.reproduced:
            raise BadInput(f"{source}: replays, but does not violate the recorded {check}: "
                           f"{result.graph.detail}{note}")
        if note:
            print(f"note: trace{note}", file=sys.stderr)
        print(f"reproduced: {trace.config} [{trace.variant}] violates {check} after "
              f"{len(trace.steps)} steps: {result.graph.detail}", file=status)
        return EXIT_VIOLATION
    if not result.reproduced:
        got = (f"{result.violation[0]} [{result.violation[1]}]" if result.violation
               else "no violation")
        raise BadInput(f"{source}: replays, but ends in {got}, not the recorded "
                       f"{trace.property or 'no violation'}{note}")
    if note:
        print(f"note: trace{note}", file=sys.stderr)
    if result.violation:
        print(f"reproduced: {trace.config} [{trace.variant}] violates {result.violation[0]} "
              f"[{result.violation[1]}] after {len(trace.steps)} steps", file=status)
        return EXIT_VIOLATION
    print(f"replayed {len(trace.steps)} steps: no property violated", file=status)
    return EXIT_OK if written else EXIT_BAD_INPUT


def _print_graph_trace(trace, result, out) -> None:
    """A SETTLE / DEADLOCK trace as ``kipcheck explore`` prints it: the steps in Kafka's words
    with their ``Step(...)``, where the loop begins (SETTLE) or what is still owed in the last
    state (DEADLOCK), and any property the last state also violates."""
    from model.describe import describe_trace
    from properties.graphcheck import GRAPH_CHECKS, SETTLE
    from properties.kafka_spec import KafkaSpec
    spec = KafkaSpec.named(trace.config, trace.variant)
    name, statement = GRAPH_CHECKS[trace.graph_check]
    print(f"counterexample ({steps_text(len(trace.steps))}) to {trace.graph_check} {name}: "
          f"{statement}", file=out)
    texts = describe_trace(spec.cfg, spec.design, trace.steps)
    for i, (st, text) in enumerate(zip(trace.steps, texts), 1):
        if trace.graph_check == SETTLE and i == trace.loop_start + 1:
            print(f"  the loop (steps {i}..{len(trace.steps)}, back to the state after step "
                  f"{trace.loop_start}):", file=out)
        print(f"  {i:>3}. {text}", file=out)
        print(f"       Step({st.action!r}, {st.args!r}),", file=out)
    for line in result.graph.facts:
        print(line, file=out)
    if result.violation:
        print(f"  the last state also violates {result.violation[0]} [{result.violation[1]}]",
              file=out)


# --------------------------------------------------------------------------------------------
# fuzz


_BENCH = Path(__file__).resolve().parent.parent / "bench" / "results" / "explore.json"
_LOG_EVERY = 5.0                # seconds between progress lines when stderr is not a terminal


def _seed_arg(text: str) -> int:
    try:
        seed = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid seed {text!r}: a whole number "
                                         f"from 0 to 2**64 - 1") from None
    if not 0 <= seed < 2 ** 64:
        raise argparse.ArgumentTypeError(f"invalid seed {text!r}: a whole number "
                                         f"from 0 to 2**64 - 1")
    return seed


class _FuzzProgress:
    """The engine's progress callback: on a terminal a one-line bar redrawn in place about
    twice a second; otherwise (a log) a plain line every few seconds."""

    def __init__(self, out, cap: float, witnesses: int):
        self.out = out
        self.cap = cap
        self.witnesses = witnesses
        self.tty = bool(getattr(out, "isatty", None) and out.isatty())
        self.width = 0
        self.last_line = time.perf_counter()     # a log's first line after _LOG_EVERY

    def line(self, elapsed, r, rounds, steps, distinct, reached) -> str:
        rate = steps / elapsed if elapsed > 0 else 0.0
        return (f"{elapsed:.1f}/{self.cap:g} s  round {r}/{rounds}  {steps:,} steps  "
                f"{rate:,.0f} steps/s  {distinct:,} states  witnesses {reached}/{self.witnesses}")

    def _draw(self, text: str, final: bool = False) -> None:
        if self.tty:
            pad = " " * max(0, self.width - len(text))
            self.width = len(text)
            print(f"\r{text}{pad}", end="\n" if final else "", file=self.out, flush=True)
        else:
            print(f"[fuzz] {text}", file=self.out, flush=True)

    def __call__(self, stats) -> None:
        now = time.perf_counter()
        if not self.tty and now - self.last_line < _LOG_EVERY:
            return
        self.last_line = now
        self._draw(self.line(stats.elapsed(), stats.round_index + 1, stats.rounds_planned,
                             stats.steps_run, len(stats.seen), len(stats.witnesses)))

    def finish(self, result, rounds: int) -> None:
        self._draw(self.line(result.search_seconds, result.rounds, rounds, result.steps_run,
                             result.distinct, len(result.witnesses_reached)), final=True)


def _bench_estimate(config: str) -> str:
    """'N states for CONFIG, about T s' from the explorer benchmark, if it has the config."""
    try:
        data = json.loads(_BENCH.read_text())
        for t in data["targets"]:
            if t.get("config") == config and not t.get("symmetry") and not t.get("options") \
                    and t.get("complete"):
                return (f", {t['distinct']:,} states for {config}, about "
                        f"{t['median']['seconds']:.0f} s in bench/results/explore.json")
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return ""


def _coverage_for(spec, result, mode: str, quiet: bool):
    """(Coverage or None, a note): the run's coverage against the reachable set, when ``mode``
    (auto/always/never) and the cache allow it."""
    from model.configs import TINY
    from properties.coverage import cache_dir, is_cached, measure, reachable
    if mode == "never":
        return None, "skipped (--coverage never)"
    cached = is_cached(spec)
    if result.stop_reason == "interrupted" and not cached:
        return None, "unknown (interrupted; run with --coverage always to compute the " \
                     "reachable set)"
    if mode == "auto" and not cached and spec.cfg.name not in TINY:
        return None, (f"unknown (run with --coverage always to compute the reachable set"
                      f"{_bench_estimate(spec.cfg.name) if spec.variant == 'correct' else ''})")
    if not cached and not quiet:
        print(f"computing the reachable set of {spec.name} once (cached in "
              f"{cache_dir() / 'reachable'})...", file=sys.stderr, flush=True)
    try:
        reach = reachable(spec, progress=sys.stderr if mode == "always" and not quiet
                          else None)
    except KeyboardInterrupt:
        return None, "unknown (interrupted while computing the reachable set)"
    note = "reachable set from the cache" if reach.cached else \
        f"reachable set explored in {reach.seconds:.1f} s, now cached"
    return measure(result.visited, result.action_counts, reach), note


def cmd_fuzz(args) -> int:
    from properties.registry import BY_ID
    from properties.stateful import PROFILES, fuzz_spec
    spec = _spec(args.config, args.variant)
    prof = PROFILES[args.profile]
    if args.time_budget is not None and not (math.isfinite(args.time_budget)
                                             and args.time_budget > 0):
        raise BadInput("--time-budget must be a positive number of seconds")
    _check_outputs(args, "trace_out", "itf_out")
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")
    budget = prof.time_budget if args.time_budget is None else args.time_budget
    # stdout is the JSON document (--json) or the test module (--pytest): the rest goes to stderr
    out = sys.stderr if (args.json or args.pytest) else sys.stdout
    plan = dataclasses.replace(prof, time_budget=budget).describe().split(": ", 1)[1]
    switches = "".join([", swarm off" if args.no_swarm else "",
                        ", novelty off" if args.no_novelty else ""])
    print(f"fuzz {spec.cfg.name} [{spec.variant}], profile {prof.name} ({plan}){switches}, "
          f"seed {seed}", file=out, flush=True)
    progress = None if args.quiet else _FuzzProgress(sys.stderr, budget,
                                                     len(spec.witness_ids()))
    result = fuzz_spec(spec, seed=seed, profile=prof, swarm=not args.no_swarm,
                       novelty=not args.no_novelty, time_budget=args.time_budget,
                       progress=progress)
    if progress is not None:
        progress.finish(result, prof.rounds)
    result.coverage, coverage_note = _coverage_for(spec, result, args.coverage, args.quiet)
    cov = result.coverage
    outside_warning = (f"WARNING: {cov.outside:,} visited states are NOT in the reachable set "
                       f"of {spec.name}: the stateful engine and the explorer disagree about "
                       f"the model (or two states share a fingerprint); do not trust this "
                       f"run's coverage") if cov is not None and cov.outside else None

    # the counterexample: a trace file (default name in the current directory), ITF, pytest
    trace = result.trace
    trace_file = itf_file = None
    if trace is not None:          # exit 1 follows, which outranks a failed write (errors.py)
        trace_file = args.trace_out or f"kipcheck-fuzz-{spec.cfg.name}-{spec.variant}-{seed}.json"
        if not write_output("the trace", trace_file, lambda: trace.dump(trace_file)):
            trace_file = None
        if args.itf_out and _write_itf(trace, args.itf_out):    # the summary names the file
            itf_file = args.itf_out
    hint = result.replay_hint() + (f" --time-budget {args.time_budget:g}"
                                   if args.time_budget is not None else "")

    if args.json:
        doc = result.to_dict()
        doc["trace_file"] = trace_file
        doc["itf_file"] = itf_file
        doc["replay"] = hint if result.found else None
        print(json.dumps(doc, indent=1))
        if outside_warning:
            print(outside_warning, file=sys.stderr)
    else:
        if args.pytest:
            from properties.trace import as_pytest
            if trace is not None:
                print(as_pytest(trace), end="", file=sys.stdout)
            else:
                print("no violation: no regression test to print", file=out)
        _fuzz_summary(result, spec, prof, budget, coverage_note, outside_warning, out)
        if trace is not None:
            prop = BY_ID[result.property]
            fr = result.failed_round
            print(f"VIOLATED {prop.id} {prop.name}: {prop.statement}", file=out)
            print(f"found in round {fr.index + 1} (round seed {fr.round_seed}, swarm "
                  f"{fr.swarm.describe()}, novelty {'on' if fr.novelty else 'off'}); "
                  f"shrunk length {result.shrunk_length} -> minimised length {len(trace.steps)}",
                  file=out)
            _print_trace(trace, out)
            if trace_file:
                default = "" if args.trace_out else " (the default --trace-out)"
                print(f"trace written to {trace_file}{default}", file=out)
                print(f"replay: kipcheck replay {trace_file}", file=out)
            if itf_file:
                print(f"ITF trace written to {itf_file}", file=out)
            print(f"rerun:  {hint}", file=out)
    if result.found:
        print(f"FAILED: {spec.name} violates {result.property} [{result.clause}], "
              f"seed {seed}", file=sys.stderr if args.json else out)
        return EXIT_VIOLATION
    if result.stop_reason == "interrupted":
        return EXIT_INTERRUPTED
    return EXIT_OK


def _fuzz_summary(result, spec, prof, budget, coverage_note, outside_warning, out) -> None:
    p = lambda *a: print(*a, file=out)          # noqa: E731
    p(f"{spec.name}: {result.steps_run:,} steps ({result.steps_per_second:,.0f} steps/s), "
      f"{result.rule_calls:,} rule calls, {result.examples:,} examples, {result.rounds}/"
      f"{prof.rounds} rounds, {result.restarts:,} restarts, {result.distinct:,} distinct states")
    cov = result.coverage
    if cov is None:
        p(f"coverage: {coverage_note}")
    else:
        p(f"coverage: {cov.describe()} ({coverage_note})")
        if cov.actions_missing:
            p(f"actions never taken: {', '.join(cov.actions_missing)}")
        if outside_warning:
            p(outside_warning)
    wanted = len(result.witnesses_reached) + len(result.witnesses_missing)
    p(f"witnesses reached: {len(result.witnesses_reached)}/{wanted}"
      + (f"; missing: {', '.join(result.witnesses_missing)}" if result.witnesses_missing
         else ""))
    reason = {
        "violation": f"a property is violated (round {result.rounds} of {prof.rounds})",
        "rounds": f"the profile's {prof.rounds} rounds are done",
        "time budget": f"the time budget of {budget:g} s is spent "
                       f"(round {result.rounds} of {prof.rounds})",
        "interrupted": f"interrupted (round {result.rounds} of {prof.rounds}); the figures "
                       f"cover the work done",
    }.get(result.stop_reason, result.stop_reason)
    p(f"stopped: {reason}")
    p(f"time: {result.seconds:.2f} s ({result.search_seconds:.2f} s searching)")
    if not result.found:
        p("no property violated" + ("" if result.stop_reason == "interrupted" else
                                    " (a random search: 'kipcheck explore' is exhaustive)"))


# --------------------------------------------------------------------------------------------
# listings


def cmd_variants(args) -> int:
    from model.config import VARIANTS
    if args.json:
        print(json.dumps([{"name": v.name, "kind": v.kind, "breaks": list(v.breaks),
                           "config": v.config, "flags": list(v.flags),
                           "description": v.description, "source": v.source}
                          for v in VARIANTS.values()], indent=1))
        return EXIT_OK
    width = max(len(n) for n in VARIANTS)
    for v in VARIANTS.values():
        kind = "" if v.kind == "seeded" else f" ({v.kind})"
        print(f"{v.name:<{width}}  breaks {'/'.join(v.breaks):<6} on {v.config}{kind}")
        print(f"{'':<{width}}  {v.description}")
        print(f"{'':<{width}}  source: {v.source}")
    return EXIT_OK


def cmd_configs(args) -> int:
    from model.configs import CONFIGS
    if args.json:
        print(json.dumps([{"name": c.name, "tier": c.tier, "mode": c.mode,
                           "nodes": [n.name for n in c.nodes],
                           "clients": [k.name for k in c.clients],
                           "description": c.description} for c in CONFIGS.values()], indent=1))
        return EXIT_OK
    for c in CONFIGS.values():
        bounds = (f"elections {c.max_elections}, expiries {c.max_session_expiries}, crashes "
                  f"{c.max_crashes}, restarts {c.max_restarts}, drops {c.max_drops}, time "
                  f"{c.max_time}")
        print(f"{c.name} [{c.tier}, {c.mode}] nodes {' '.join(n.name for n in c.nodes)}; "
              f"clients {' '.join(k.name for k in c.clients) or '-'}")
        print(f"  {c.description}")
        print(f"  bounds: {bounds}")
    return EXIT_OK


# --------------------------------------------------------------------------------------------
# check: the main job


def _table(header, rows, out) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    print("  ".join(f"{h:<{w}}" for h, w in zip(header, widths)), file=out)
    for r in rows:
        print("  ".join(f"{c:<{w}}" for c, w in zip(r, widths)), file=out)


def _why_skipped(engines) -> str:
    if "explore" not in engines:
        return "the explore engine, which decides the variants, was not selected"
    return "home configuration not selected; add it to --configs"


def cmd_check(args) -> int:
    from kipcheck import checkjob
    from model.config import VARIANTS
    from model.configs import CONFIGS, SMALL, TINY
    if args.configs == "tiny":
        configs = list(TINY)
    elif args.configs == "small":
        configs = list(SMALL)
    elif args.configs == "all":
        configs = list(TINY) + list(SMALL)
    else:
        configs = [c.strip() for c in args.configs.split(",") if c.strip()]
        unknown = [c for c in configs if c not in CONFIGS]
        if unknown:
            raise BadInput(f"unknown configuration {unknown[0]!r}; configurations: "
                           f"{', '.join(CONFIGS)}")
        if not configs:            # an empty CI variable must not turn the gate green
            raise BadInput(f"--configs {args.configs!r} selects no configuration; give tiny, "
                           f"small, all or names from: {', '.join(CONFIGS)}")
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    bad = [e for e in engines if e not in checkjob.ENGINES]
    if bad or not engines:
        raise BadInput(f"--engines: {', '.join(bad) or 'nothing given'} is not an engine; "
                       f"engines: {', '.join(checkjob.ENGINES)}")
    if args.jobs < 1:
        raise BadInput("--jobs must be at least 1")
    check_output_dir("--out", args.out)
    check_output_file("--json", args.json)
    why_not = checkjob.available_engines()
    runnable = [e for e in engines if not why_not[e]]
    variants = [v for v in VARIANTS.values() if v.config in configs]
    # a variant is decided on its home configuration: one whose home is not selected is named,
    # and the check cannot say "every variant is caught"
    skipped = [v for v in VARIANTS.values() if v.config not in configs]
    if "explore" not in engines:        # only the explorer decides the variants
        skipped, variants = list(VARIANTS.values()), []
    seed = args.seed
    jobs = checkjob.plan(configs, variants, runnable, symmetry=args.symmetry, seed=seed)
    t0 = time.perf_counter()
    results = []
    workers = max(1, min(args.jobs, len(jobs)))
    print(f"kipcheck check: {len(configs)} configuration{'s' * (len(configs) != 1)}, engines "
          f"{', '.join(runnable)}; {len(jobs)} jobs on {workers} "
          f"process{'es' * (workers != 1)}; seed {seed}",
          file=sys.stderr)
    for e in engines:
        if why_not[e]:
            print(f"  engine {e} not run: {why_not[e]}", file=sys.stderr)
    if skipped:
        print(f"  variants not checked ({_why_skipped(engines)}): "
              f"{', '.join(f'{v.name} ({v.config})' for v in skipped)}", file=sys.stderr)
    if workers == 1:
        mapper = map(checkjob.run_job, jobs)
        executor = None
    else:
        executor = ProcessPoolExecutor(max_workers=workers, initializer=worker_init,
                                       initargs=(os.getpid(),))
        mapper = executor.map(checkjob.run_job, jobs)
    try:
        for i, res in enumerate(mapper, 1):
            results.append(res)
            what = res.get("violation") or res.get("status") or res.get("divergence") \
                or (f"ERROR {res['error']}" if res.get("error") else "no violation")
            if res["engine"] == "encoding" and not res.get("error"):
                what = (("agrees with the model" + (" (cached)" if res["cached"] else ""))
                        if res["ok"] else f"{res['kind'].upper()}: {res['reason']}")
            label = res["engine"] + (f" {res['property']}" if res.get("property") else "")
            print(f"  [{i}/{len(jobs)}] {label} {res['config']} [{res['variant']}]: "
                  f"{res['seconds']:.1f} s, {what}", file=sys.stderr)
    except KeyboardInterrupt:
        if executor is not None:
            stop_pool(executor)
        executor = None
        print(f"kipcheck: interrupted after {len(results)} of {len(jobs)} jobs; no verdict",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if executor:
            executor.shutdown(cancel_futures=True)
    # a job that raised, or a design the Z3 engine refuses, leaves the check without a verdict
    errors = [r for r in results if r.get("error")
              or (r["engine"] == "encoding" and r["blocking"])]
    rows, failures, per_config, per_variant = checkjob.summarize(
        results, configs, variants, engines, why_not)
    total = time.perf_counter() - t0
    out = sys.stdout
    print("\nProperty x engine (correct design; cells: verdict over the configurations)",
          file=out)
    _table(["property"] + list(checkjob.ENGINES), rows, out)
    if per_config:
        print("\nCorrect design per configuration (explorer)", file=out)
        _table(["configuration", "states", "time (s)", "witnesses", "violation"], per_config,
               out)
    if per_variant:
        print("\nDesign variants: property violated per configuration (shortest trace length)",
              file=out)
        _table(["variant", "must break"] + configs + ["caught"], per_variant, out)
        print(checkjob.VARIANT_TABLE_LEGEND, file=out)
    print(f"\n{len(jobs)} jobs in {total:.1f} s", file=out)
    written = True
    if args.out:
        rep = checkjob.build_report(results, configs, variants, engines, why_not, rows,
                                    per_config, per_variant, failures, total)
        paths = {}
        if write_output("the report", args.out, lambda: paths.update(rep.write(args.out))):
            print(f"report: {paths['html']} and {paths['markdown']}", file=out)
        else:
            written = False
    if args.json:
        doc = json.dumps({"configs": configs, "engines": engines, "seed": seed,
                          "results": results, "failures": failures, "seconds": total},
                         indent=1) + "\n"
        if write_output("the results", args.json, lambda: Path(args.json).write_text(doc)):
            print(f"results written to {args.json}", file=out)
        else:
            written = False
    witness_only = bool(failures) and all(f.startswith("witnesses unreached")
                                          for f in failures)
    if failures:
        print("FAILED: " + "; ".join(failures), file=out)
        # no verdict: 2, as for a broken environment; only witnesses missing: 4
        if errors:
            return EXIT_BAD_INPUT
        if witness_only:
            return EXIT_INCONCLUSIVE if skipped else EXIT_WITNESS_MISSING
        return EXIT_VIOLATION
    if not written:
        print("FAILED: the results are above, but not every output could be written",
              file=out)
        return EXIT_BAD_INPUT
    if skipped:
        print(f"INCOMPLETE: the correct design holds under every engine and reaches every "
              f"witness, but {len(skipped)} variant(s) were not checked "
              f"({_why_skipped(engines)}): "
              f"{', '.join(f'{v.name} ({v.config})' for v in skipped)}", file=out)
        return EXIT_INCONCLUSIVE
    accepted = [row[0] for row in per_variant if row[-1] == "NOT CAUGHT (accepted)"]
    print("OK: the correct design holds under every engine and reaches every witness; every "
          "variant is caught" + (f" but the accepted misses ({', '.join(accepted)}; "
                                 f"docs/design-variants.md)" if accepted else ""), file=out)
    return EXIT_OK


# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# branches: which branch outcomes of the model the explorations reach


def _branch_configs(text: str) -> list:
    from model.configs import CONFIGS, SMALL, TINY
    named = {"tiny": list(TINY), "small": list(SMALL), "all": list(TINY) + list(SMALL)}
    if text in named:
        return named[text]
    configs = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        raise BadInput(f"unknown configuration {unknown[0]!r}; configurations: "
                       f"{', '.join(CONFIGS)}")
    if not configs:
        raise BadInput(f"--configs {text!r} selects no configuration; give tiny, small, all or "
                       f"names from: {', '.join(CONFIGS)}")
    return configs


def cmd_branches(args) -> int:
    """Branch coverage of model/actions.py.  On the standard measure (the tiny configurations
    with every variant on its home configuration and its extra homes: the default) every
    unreached outcome must have a recorded reason (properties/branches_unreached.toml) and every
    recorded reason must name an outcome that is unreached: exit 1 otherwise, 0 if so.  Any
    other selection is a report: exit 0 whatever the coverage."""
    from model.configs import TINY
    from properties.branches import (STANDARD, ReasonsError, audit, explorations, load_reasons,
                                     measure, reachable_percent)
    configs = _branch_configs(args.configs)
    try:
        reasons = load_reasons()
    except ReasonsError as e:
        raise BadInput(str(e)) from None
    specs = [_spec(c, v) for c, v in explorations(configs, args.variants)]
    standard = bool(args.variants) and sorted(configs) == sorted(TINY)
    cov = measure(specs, progress=None if args.json or args.quiet else sys.stderr)
    au = audit(cov, reasons)
    code = EXIT_VIOLATION if standard and not au.ok else EXIT_OK
    if args.json:
        doc = cov.to_json()
        doc["standard"] = standard
        why = {(b.function, b.line, b.outcome): r for b, r in au.explained.items()}
        for row in doc["unreached"]:
            r = why.get((row["function"], row["line"], row["outcome"]))
            row["reason"] = None if r is None else {"kind": r.kind, "reason": r.reason,
                                                    "reached_by": list(r.reached_by)}
        if standard:
            doc["reachable_percent"] = round(reachable_percent(cov, au), 2)
            doc["without_reason"] = len(au.unexplained)
            doc["stale_reasons"] = [{"function": r.function, "outcome": r.outcome,
                                     "text": r.text, "why": why_stale}
                                    for r, why_stale in au.stale]
        print(json.dumps(doc, indent=1))
        return code
    out = sys.stdout
    what = ", every variant on its home configuration and extra homes" if args.variants else ""
    print(f"branch coverage of {cov.path}: {cov.covered}/{cov.total} branch outcomes "
          f"({cov.percent:.1f}%) over {len(specs)} explorations ({', '.join(configs)}{what}; "
          f"{cov.seconds:.1f} s)", file=out)
    if standard:
        defensive = sum(1 for r in au.explained.values() if r.kind == "defensive")
        print(f"  without the {defensive} outcomes recorded as defensive (unreachable by "
              f"construction): {reachable_percent(cov, au):.1f}%", file=out)
    by_variants = cov.only_by_variants()
    if by_variants:
        print(f"reached only under a design variant ({len(by_variants)}):", file=out)
        for b, names in by_variants:
            print(f"  {b.where(cov.path)}", file=out)
            print(f"      by {', '.join(names)}", file=out)
    unreached = cov.unreached
    if unreached:
        print(f"unreached ({len(unreached)}):", file=out)
        for b in unreached:
            print(f"  {b.where(cov.path)}", file=out)
            r = au.explained.get(b)
            if r is not None:
                print(f"      {r.note()}", file=out)
            elif standard:
                print("      NO RECORDED REASON: reach it (a tiny configuration) or record why "
                      "not in properties/branches_unreached.toml", file=out)
    if not standard:
        print(f"(reasons are recorded for the standard measure, {STANDARD}: `kipcheck "
              f"branches` with no option; only that one is checked)", file=out)
        return code
    for r, why_stale in au.stale:
        print(f"stale reason in properties/branches_unreached.toml: {r.function}: {r.outcome}  "
              f"{r.text}: {why_stale}", file=out)
    if au.ok:
        print("every unreached outcome has a recorded reason", file=out)
    else:
        print(f"{len(au.unexplained)} unreached outcome(s) without a recorded reason, "
              f"{len(au.stale)} stale reason(s)", file=out)
    return code


# --------------------------------------------------------------------------------------------
# prove (the Z3 engine)


def _z3_available() -> None:
    try:
        import z3  # noqa: F401
    except ImportError:
        raise BadInput("the Z3 engine needs the z3-solver package, a dependency of kipcheck "
                       "that is missing here: pip install z3-solver") from None


def _properties_arg(text: str) -> tuple:
    from properties.symbolic.props import SUPPORTED
    if text.strip().lower() == "all":
        return SUPPORTED
    ids = tuple(x.strip().upper() for x in text.split(",") if x.strip())
    bad = [x for x in ids if x not in SUPPORTED]
    if bad or not ids:
        raise BadInput(f"--property: {', '.join(bad) or 'nothing given'} is not a property the "
                       f"Z3 engine checks; choose from {', '.join(SUPPORTED)} or all")
    return ids


class _DepthProgress:
    def __init__(self, out, pid):
        self.out, self.pid, self.t0 = out, pid, time.perf_counter()

    def __call__(self, depth, k):
        print(f"\r  {self.pid}: bmc depth {depth}/{k}, {time.perf_counter() - self.t0:.1f} s",
              end="", file=self.out, flush=True)

    def done(self):
        print("\r" + " " * 60 + "\r", end="", file=self.out, flush=True)


def _encoding_gate(spec):
    """Fail closed (docs/proofs.md): before any answer, the encoding must agree with the
    model under this design; otherwise one line and exit 2, never PROVED."""
    from properties.symbolic.fidelity import check_encoding
    if sys.stderr.isatty():
        print("checking the Z3 encoding against the model under this design ...",
              end="\r", file=sys.stderr, flush=True)
    v = check_encoding(spec.cfg, spec.design, spec.variant)
    if sys.stderr.isatty():
        print(" " * 70, end="\r", file=sys.stderr, flush=True)
    if not v.ok:
        raise BadInput(f"prove refused: the Z3 engine gives no answer for {spec.cfg.name} "
                       f"[{spec.variant}]: {v.reason}")
    return v


def cmd_prove(args) -> int:
    _z3_available()
    from properties.registry import BY_ID
    from properties.symbolic.engine import bmc, prove
    spec = _spec(args.config, args.variant)
    pids = _properties_arg(args.property)
    if args.bmc is not None and not 0 <= args.bmc <= 30:
        raise BadInput("--bmc: the depth must be between 0 and 30")
    if not 1 <= args.max_k <= 4:
        raise BadInput("--max-k must be between 1 and 4")
    _check_outputs(args, "trace_out")
    out = sys.stderr if args.json else sys.stdout
    gate = _encoding_gate(spec)
    what = f"bounded model checking to depth {args.bmc}" if args.bmc is not None else \
        f"k-induction (k <= {args.max_k})"
    print(f"prove {spec.cfg.name} [{spec.variant}]: {', '.join(pids)} by {what}", file=out,
          flush=True)
    if not args.quiet:
        print(f"encoding: agrees with the model under this design ({gate.states} reachable and "
              f"{gate.arbitrary} arbitrary states compared"
              f"{', cached' if gate.cached else f', {gate.seconds:.1f} s'})", file=out,
              flush=True)
    results, traces = [], []
    worst = EXIT_OK
    for pid in pids:
        prop = BY_ID[pid]
        label = f"{pid} {prop.name}"
        if args.bmc is not None:
            progress = None if (args.quiet or not sys.stderr.isatty()) else \
                _DepthProgress(sys.stderr, pid)
            r = bmc(spec.cfg, spec.design, pid, args.bmc, spec.variant, progress=progress,
                    gate=False)
            if progress:
                progress.done()
            if r.found:
                line = (f"{label}: COUNTEREXAMPLE, {len(r.steps)} steps, clause {r.clause} "
                        f"({r.seconds:.1f} s; replayed by the model)")
                traces.append(r.trace())
                worst = EXIT_VIOLATION
            else:
                line = (f"{label}: no counterexample up to depth {r.depth} "
                        f"({r.seconds:.1f} s; within capacities: {r.capacity})")
            doc = {"property": pid, "mode": "bmc", "found": r.found, "depth": r.depth,
                   "clause": r.clause, "steps": len(r.steps), "seconds": round(r.seconds, 3)}
        else:
            r = prove(spec.cfg, spec.design, pid, spec.variant, max_k=args.max_k, gate=False)
            if r.status == "proved":
                line = (f"{label}: PROVED, {r.depth}-induction with "
                        f"{len(r.invariants)} strengthening invariants ({r.seconds:.1f} s)")
            elif r.status == "counterexample":
                line = f"{label}: COUNTEREXAMPLE in the base case: {r.detail} " \
                       f"({r.seconds:.1f} s)"
                traces.append(r.counterexample.trace())
                worst = EXIT_VIOLATION
            else:
                line = f"{label}: UNKNOWN, {r.detail} ({r.seconds:.1f} s)"
                if worst == EXIT_OK:
                    worst = EXIT_INCONCLUSIVE
            doc = {"property": pid, "mode": "prove", "status": r.status, "depth": r.depth,
                   "seconds": round(r.seconds, 3), "invariants": list(r.invariants),
                   "bounds": r.bounds, "detail": r.detail,
                   "proof_clauses": [c.name for c in BY_ID[pid].clauses]}
        print(line, file=out, flush=True)
        results.append(doc)
    if args.bmc is None and not args.quiet:
        print(f"bounds: {r.bounds}", file=out)         # the same for every property
    files = []
    for trace in traces:
        name = args.trace_out if (args.trace_out and len(traces) == 1) else \
            f"kipcheck-prove-{spec.cfg.name}-{spec.variant}-{trace.property}.json"
        _print_trace(trace, out)
        if write_output("the trace", name, lambda t=trace, n=name: t.dump(n)):
            files.append(name)
            print(f"trace written to {name}; replay: kipcheck replay {name}", file=out)
        elif worst != EXIT_VIOLATION:
            worst = EXIT_BAD_INPUT
    if args.json:
        print(json.dumps({"config": spec.cfg.name, "variant": spec.variant,
                          "results": results, "trace_files": files}, indent=1))
    return worst


# --------------------------------------------------------------------------------------------
# conform (the reference implementation against the model)


def cmd_conform(args) -> int:
    from properties.conformance import KNOWN_BUGS, PROFILES, VARIANT_BUGS, run_conformance
    spec = _spec(args.config, None)
    if args.steps is not None and not 1 <= args.steps <= 10_000:
        raise BadInput("--steps must be between 1 and 10000")
    bad = [b for b in args.bug if b not in KNOWN_BUGS + VARIANT_BUGS]
    if bad:
        raise BadInput(f"--bug: unknown implementation bug {bad[0]!r}; bugs: "
                       f"{', '.join(KNOWN_BUGS + VARIANT_BUGS)}")
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")
    examples, steps = PROFILES[args.profile]
    out = sys.stderr if args.json else sys.stdout
    print(f"conform {spec.cfg.name}: seed {seed}, profile {args.profile} ({examples} runs of up "
          f"to {args.steps or steps} steps)" + (f", injected bug: {', '.join(args.bug)}"
                                                if args.bug else ""), file=out, flush=True)
    try:
        r = run_conformance(spec.cfg, seed=seed, profile=args.profile, steps=args.steps,
                            bugs=tuple(args.bug))
    except ValueError as e:
        raise BadInput(str(e)) from None
    print(f"{r.runs} runs, {r.steps:,} model + implementation steps in {r.seconds:.1f} s "
          f"({r.steps_per_second:,.0f} steps/s)", file=out)
    if args.json:
        print(json.dumps(r.to_dict(), indent=1))
    if r.divergence is None:
        print("OK: the implementation agrees with the model after every step", file=out)
        return EXIT_OK
    from model.describe import describe_trace
    div = r.divergence
    print(f"DIVERGENCE after {len(div.steps)} steps (shrunk):", file=out)
    texts = describe_trace(spec.cfg, spec.design, div.steps)
    for i, (st, text) in enumerate(zip(div.steps, texts), 1):
        mark = "  <-- first divergence" if i == div.index else ""
        print(f"  {i:>3}. {text}{mark}", file=out)
        print(f"       Step({st.action!r}, {st.args!r}),", file=out)
    print(div.describe(), file=out)
    print(f"replay: kipcheck conform --config {spec.cfg.name} --seed {seed}"
          + "".join(f" --bug {b}" for b in args.bug), file=out)
    return EXIT_VIOLATION


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kipcheck", description="Check designs of Kafka's controller-side "
                "protocols (KIP-590 forwarding, KIP-919 controller registration, KIP-103 "
                "listeners).")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    e = sub.add_parser("explore", help="explore a configuration exhaustively")
    e.add_argument("--config", required=True, help="configuration name (kipcheck configs)")
    e.add_argument("--variant", help="design variant (kipcheck variants); default: correct")
    e.add_argument("--symmetry", action="store_true", help="reduce by symmetry (DESIGN 3.3)")
    e.add_argument("--max-states", type=int, help="stop after this many distinct states")
    e.add_argument("--max-depth", type=int, help="explore no deeper than this")
    e.add_argument("--max-seconds", type=float, metavar="S",
                   help="stop the search after S seconds and report the levels it finished "
                        "(exit 3, as for --max-states); Ctrl-C stops it the same way (exit "
                        "130), a second Ctrl-C at once")
    e.add_argument("--spark", action="store_true",
                   help="explore on Spark, the frontier partitioned by state fingerprint (for "
                   "state spaces beyond one machine; on one machine up to 2x the time of one "
                   "process on the small configurations, far more on tiny ones)")
    e.add_argument("--master", help="Spark master URL with --spark (default: local[N,4], every "
                   "core)")
    e.add_argument("--workers", type=int, metavar="N",
                   help="processes sharing each level's expansion (default: every core; the "
                   "same counts, traces and verdicts as one process)")
    e.add_argument("--trace-out", help="write the counterexample as a JSON trace")
    e.add_argument("--itf-out", help="write the counterexample as an ITF trace")
    e.add_argument("--graph-out", help="write the state graph (.dot or .graphml; small configs)")
    e.add_argument("--no-graph-checks", action="store_true",
                   help="skip the whole-graph checks SETTLE and DEADLOCK (they record every "
                   "transition: ~9 bytes each plus ~100 bytes per state while they run)")
    e.add_argument("--quiet", action="store_true", help="no progress on stderr")
    e.set_defaults(func=cmd_explore)

    r = sub.add_parser("replay", help="replay a JSON trace through the model")
    r.add_argument("file", nargs="?")
    r.add_argument("--campaign", metavar="DIR", help="replay the failure a campaign shard recorded")
    r.add_argument("--seed", type=_seed_arg, help="with --campaign: the shard seed")
    r.add_argument("--itf-out", help="also write the trace as ITF")
    r.add_argument("--mermaid-out", help="also write a Mermaid sequence diagram")
    r.add_argument("--pytest", action="store_true", help="print it as a pytest regression test")
    r.set_defaults(func=cmd_replay)

    f = sub.add_parser("fuzz", help="search a configuration with the Hypothesis stateful "
                       "engine (swarm rounds, novelty guidance)")
    f.add_argument("--config", required=True, help="configuration name (kipcheck configs)")
    f.add_argument("--variant", help="design variant (kipcheck variants); default: correct")
    f.add_argument("--profile", default="ci", choices=("ci", "dev", "nightly"),
                   help="work budget: ci (default), dev or nightly")
    f.add_argument("--seed", type=_seed_arg,
                   help="the run's seed (default: a random one, printed first)")
    f.add_argument("--time-budget", type=float, metavar="SECONDS",
                   help="wall-clock cap, overriding the profile's")
    f.add_argument("--no-swarm", action="store_true", help="every action on in every round")
    f.add_argument("--no-novelty", action="store_true", help="uniform steps, no novelty guidance")
    f.add_argument("--coverage", default="auto", choices=("auto", "always", "never"),
                   help="coverage against the reachable set: auto (default: if it is cached "
                   "or the configuration is tiny), always (explore it whatever it costs), never")
    f.add_argument("--trace-out", help="where to write a counterexample as a JSON trace "
                   "(default: kipcheck-fuzz-CONFIG-VARIANT-SEED.json here)")
    f.add_argument("--itf-out", help="also write a counterexample as an ITF trace")
    out_mode = f.add_mutually_exclusive_group()
    out_mode.add_argument("--pytest", action="store_true",
                          help="print a counterexample as a pytest regression test on stdout "
                          "(the summary goes to stderr)")
    out_mode.add_argument("--json", action="store_true",
                          help="print the result as JSON on stdout instead of the summary")
    f.add_argument("--quiet", action="store_true", help="no progress on stderr")
    f.set_defaults(func=cmd_fuzz)

    z = sub.add_parser("prove", help="prove properties by k-induction with Z3, or find "
                       "counterexamples by bounded model checking (--bmc K)")
    z.add_argument("--config", required=True, help="configuration name (kipcheck configs)")
    z.add_argument("--property", default="all",
                   help="P1, P2, P3, P4, a comma-separated list, or all (default)")
    z.add_argument("--variant", help="design variant (kipcheck variants); default: correct")
    z.add_argument("--bmc", type=int, metavar="K",
                   help="bounded model checking to depth K instead of a proof")
    z.add_argument("--max-k", type=int, default=2,
                   help="deepest induction tried (default 2)")
    z.add_argument("--trace-out", help="where to write a counterexample as a JSON trace")
    z.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    z.add_argument("--quiet", action="store_true", help="no progress on stderr")
    z.set_defaults(func=cmd_prove)

    cf = sub.add_parser("conform", help="drive the reference implementation and the model "
                        "with the same steps and compare them after every step")
    cf.add_argument("--config", required=True, help="configuration name (kipcheck configs)")
    cf.add_argument("--seed", type=_seed_arg, help="the run's seed (default: a random one, "
                    "printed first)")
    cf.add_argument("--steps", type=int, help="steps per run (default: the profile's)")
    cf.add_argument("--profile", default="ci", choices=("ci", "dev", "nightly"))
    cf.add_argument("--bug", action="append", default=[],
                    help="inject an implementation bug, to see conformance catch it "
                    "(skip-check-op, or Kafka's code before a fix, named after its design "
                    "variant: registration-ignores-omitted-features, ...)")
    cf.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    cf.set_defaults(func=cmd_conform)

    v = sub.add_parser("variants", help="list the design variants")
    v.add_argument("--json", action="store_true")
    v.set_defaults(func=cmd_variants)

    c = sub.add_parser("configs", help="list the named configurations")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_configs)

    k = sub.add_parser("check", help="the main job: every default configuration under the "
                       "correct design and every variant")
    k.add_argument("--configs", default="tiny",
                   help="tiny (default), small, all, or a comma-separated list of names")
    k.add_argument("--symmetry", action="store_true")
    k.add_argument("--engines", default=",".join(("explore", "stateful", "prove", "conform")),
                   help="comma-separated: explore, stateful, prove, conform (default: all)")
    k.add_argument("--seed", type=_seed_arg, default=0,
                   help="seed of the stateful and conformance runs (default 0)")
    k.add_argument("--jobs", "--workers", type=int, default=2, dest="jobs",
                   help="worker processes (default 2; --workers, as explore names it, is the "
                        "same option)")
    k.add_argument("--out", default="kipcheck-report",
                   help="directory for report.md, report.html and plots (default "
                   "kipcheck-report; '' for none)")
    k.add_argument("--json", help="write the results as JSON")
    k.set_defaults(func=cmd_check)

    br = sub.add_parser("branches", help="branch coverage of the model's steps "
                        "(model/actions.py) over exhaustive explorations: the branch outcomes "
                        "no configuration reaches, with their recorded reasons (exit 1 on the "
                        "default selection if one has no reason or a reason is stale)")
    br.add_argument("--configs", default="tiny",
                    help="tiny (default), small, all, or a comma-separated list of names")
    br.add_argument("--variants", action=argparse.BooleanOptionalAction, default=True,
                    help="also explore every variant on its home configuration and its extra "
                    "homes, those selected (default; --no-variants: the correct design only)")
    br.add_argument("--json", action="store_true", help="print the coverage as JSON on stdout")
    br.add_argument("--quiet", action="store_true", help="no progress on stderr")
    br.set_defaults(func=cmd_branches)

    from kipcheck.lint import cmd_lint_config
    li = sub.add_parser("lint-config", help="check a broker or controller properties file with "
                        "Kafka's listener rules (L-0..L-27), then for forwarding and listener "
                        "security problems (warnings, exit 1) and advice (notes, exit 0)")
    li.add_argument("file", metavar="FILE.properties")
    li.add_argument("--role", choices=("broker", "controller"),
                    help="the role the file is for: without process.roles it is checked as "
                    "process.roles=ROLE (a broker with zookeeper.connect stays a ZooKeeper-mode "
                    "broker); with it, ROLE must be one of its roles. Default: from the file")
    li.add_argument("--strict", action="store_true",
                    help="exit 1 for notes too, not only for security warnings")
    li.set_defaults(func=cmd_lint_config)

    from kipcheck.campaign.cli import add_campaign_parser
    add_campaign_parser(sub)
    __import__("kipcheck.mutate_cli").mutate_cli.add_mutate_parser(sub)
    return p


def _commands(parser) -> list:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


def main(argv=None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if not getattr(args, "command", None):         # usage, not a result: stderr
            raise BadInput(f"no command given; usage: kipcheck COMMAND [options], commands: "
                           f"{', '.join(_commands(parser))} ('kipcheck --help' describes them)")
        return args.func(args)
    except BadInput as e:
        print(f"kipcheck: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("kipcheck: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:                        # output piped into head: not an error
        sys.stdout = None
        return EXIT_OK


if __name__ == "__main__":
    # run the kipcheck.cli module, not this __main__ copy: modules that raise
    # kipcheck.cli.BadInput (kipcheck/lint.py) must meet the main() that catches it
    from kipcheck.cli import main as _main
    sys.exit(_main())
