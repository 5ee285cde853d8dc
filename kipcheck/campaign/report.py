"""``report.md`` and ``report.html`` of a campaign, beside its Parquet shards.

Built from what is on disk (the shard records and ``campaign.json``) plus the run's summary,
so a resumed campaign's report covers every finished shard.  Plots:

coverage over time
    on the *campaign clock*: every shard's own start and end (``started_at``/``ended_at``,
    by its worker's clock) mapped onto one timeline that advances only while some shard is
    running.  A Spark start-up, the driver's bookkeeping and the hours between an interrupted
    run and its ``--resume`` take no room, so shards of several runs and executors line up.
    Each configuration's line starts at 0 % when its first shard starts and steps up as its
    shards finish (the union of their states as a share of the reachable set); a
    configuration scheduled late starts late instead of being drawn from zero.
failures by property
    distinct failures, de-duplicated by (variant, property, clause), unexpected ones apart.
throughput per executor
    model steps per second of shard time, per executor: "driver" (serial), "process N" (a
    pool process) or "executor N" (a Spark executor), numbered in the order they started work.

The coverage statement says exactly what was covered: per (configuration, variant), the
distinct states visited and, where the explorer's reachable set is known, the share of it.
"""
from __future__ import annotations

import bisect
from collections import defaultdict

from kipcheck.report import Figure, Report

__all__ = ["campaign_report", "write_campaign_report", "campaign_clock", "shard_interval",
           "executor_labels"]


def shard_interval(record) -> tuple:
    """(start, end) of a shard in Unix time: its own clock when recorded, else (files of an
    earlier kipcheck) the driver's write time less the shard's seconds."""
    start, end = record.get("started_at") or 0.0, record.get("ended_at") or 0.0
    if start > 0 and end >= start:
        return start, end
    end = record.get("finished_at") or 0.0
    return end - (record.get("seconds") or 0.0), end


def campaign_clock(intervals):
    """A function mapping a Unix time to campaign seconds: the time before it during which
    at least one of ``intervals`` ((start, end) pairs) was running.  Also returns the total."""
    spans = []
    for s, e in sorted(intervals):
        if spans and s <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], e)
        else:
            spans.append([s, e])
    starts = [s for s, _ in spans]
    before = [0.0]                          # busy seconds before each span
    for s, e in spans:
        before.append(before[-1] + (e - s))

    def clock(t: float) -> float:
        i = bisect.bisect_right(starts, t) - 1
        if i < 0:
            return 0.0
        s, e = spans[i]
        return before[i] + (min(t, e) - s)

    return clock, before[-1]


def executor_labels(records) -> dict:
    """Executor identity -> label, numbered per kind in the order executors started work."""
    kinds = {"driver": "driver", "process": "process", "spark": "executor"}
    first: dict = {}
    for r in records:
        ident = _executor_of(r)
        start = shard_interval(r)[0]
        if ident not in first or start < first[ident]:
            first[ident] = start
    labels, count = {}, defaultdict(int)
    for ident in sorted(first, key=lambda i: (first[i], i)):
        kind = ident.split("/", 1)[0]
        if kind == "driver":
            labels[ident] = "driver"
            continue
        name = kinds.get(kind, "worker")
        count[name] += 1
        labels[ident] = f"{name} {count[name]}"
    return labels


def _executor_of(record) -> str:
    return record.get("executor") or f"worker/{record.get('hostname')}/{record.get('pid')}"


def campaign_report(summary, records) -> Report:
    """``records``: the shard records as stored (dicts, ``ResultStore.load_records``)."""
    spec = summary.spec
    m = summary.merged
    clock, busy = campaign_clock([shard_interval(r) for r in records])
    rep = Report(f"kipcheck campaign {spec.name}")
    verdict = "OK" if summary.ok else "FAILED: " + "; ".join(summary.problems())
    rep.para(f"Campaign seed {spec.seed}; engine {summary.engine}; {summary.done} of "
             f"{summary.total} shards finished ({summary.skipped} resumed from an earlier run); "
             f"{m.steps:,} model steps in {m.seconds:.1f} s of shard time; {busy:.1f} s on the "
             f"campaign clock (time with a shard running, every run), {summary.seconds:.1f} s "
             f"wall for this run.  Model {', '.join(summary.model_hashes) or 'unknown'}.  "
             f"Verdict: {verdict}")
    rep.heading("What was covered")
    rows = []
    for g in m.groups:
        if g.coverage is not None:
            c = g.coverage
            cov = (f"{c.states_share:.2%} of {c.states_reachable:,} reachable states "
                   f"({c.states_covered:,}); {c.actions_share:.0%} of reachable actions")
        else:
            cov = g.coverage_note or "no reachable set known: distinct states only"
        wit = f"{len([w for w in g.witnesses_expected if w in g.witnesses])}/" \
              f"{len(g.witnesses_expected)}"
        rows.append([g.config, g.variant, g.shards, f"{g.steps:,}", f"{g.distinct:,}", cov, wit,
                     ", ".join(sorted(g.properties)) or "none"])
    rep.table(["configuration", "variant", "shards", "steps", "distinct states", "coverage",
               "witnesses", "properties violated"], rows)
    rep.para("Coverage is the union of the shards' visited state fingerprints (64-bit hashes of "
             "the model's canonical state) measured against the exhaustive explorer's reachable "
             "set of the same configuration and design; a state outside that set would be "
             "reported (it means a bug).  Conformance shards compare the implementation with the "
             "model and add no states.")
    _failures(rep, summary)
    if summary.determinism_checked:
        rep.heading("Determinism")
        mism = summary.determinism_mismatches
        rep.para(f"{len(summary.determinism_checked)} shard seeds re-run in the driver: "
                 + ("every digest matched." if not mism else
                    "MISMATCH for " + ", ".join(f"seed {x.seed}" for x in mism)))
    _coverage_figure(rep, m, records, clock)
    by_prop: dict = defaultdict(int)
    for f in m.failures:
        by_prop[f.property if f.expected else f"{f.property} unexpected"] += 1
    rep.figure(Figure("failures-by-property", "Distinct failures by property", "bar",
                      ylabel="distinct failures", bars=sorted(by_prop.items())
                      or [("none", 0)],
                      caption="Failures de-duplicated by (variant, property, clause); "
                              "unexpected ones (the correct design, or a variant breaking a "
                              "property it is not listed to break) are separate bars."))
    labels = executor_labels(records)
    per: dict = defaultdict(lambda: [0, 0.0])
    for r in records:
        w = per[labels[_executor_of(r)]]
        w[0] += r["steps"]
        w[1] += r["seconds"]
    order = {label: i for i, label in enumerate(dict.fromkeys(labels.values()))}
    bars = [(k, round(v[0] / v[1], 1) if v[1] > 0 else 0.0)
            for k, v in sorted(per.items(), key=lambda kv: order[kv[0]])]
    rep.figure(Figure("throughput-per-executor", "Throughput per executor", "bar",
                      ylabel="steps per second of shard time", bars=bars or [("none", 0)],
                      caption="Model steps per second of shard time on each executor: the "
                              "driver (--engine serial), a pool process (processes) or a Spark "
                              "executor, numbered in the order they started work."))
    return rep


def _failures(rep: Report, summary) -> None:
    m = summary.merged
    header = ["variant", "property", "clause", "configurations", "shortest trace",
              "distinct traces", "found by shards", "engines", "replay"]

    def rows(group):
        return [[f.variant, f.property, f.clause or "", ", ".join(f.configs),
                 f"{f.trace_length} step{'' if f.trace_length == 1 else 's'}", f.traces,
                 len(f.seeds), ", ".join(f.engines),
                 f"kipcheck replay --campaign {summary.directory} --seed {f.seed}"]
                for f in group]

    rep.heading("Unexpected failures")
    if m.unexpected:
        rep.para("The correct design violating a property, or a design variant breaking a "
                 "property it is not listed to break (model.config.VARIANTS): each needs a "
                 "look.  De-duplicated by (variant, property, clause); the replay command "
                 "replays the shortest trace.")
        rep.table(header, rows(m.unexpected))
    else:
        rep.para("None: the correct design violated nothing, and every variant broke only "
                 "properties it is listed to break.")
    rep.heading("Expected failures (seeded variants caught)")
    if m.expected:
        rep.para("A design variant breaking a property it is listed to break: the campaign "
                 "finding the flaws it should.  De-duplicated by (variant, property, clause).")
        rep.table(header, rows(m.expected))
    else:
        rep.para("None.")


def _coverage_figure(rep: Report, m, records, clock) -> None:
    """Coverage of the correct design over the campaign clock, per configuration."""
    reachable = {g.config: g.coverage.states_reachable for g in m.groups
                 if g.variant == "correct" and g.coverage is not None}
    by_config: dict = defaultdict(list)
    for r in records:
        if r["variant"] == "correct" and r["config"] in reachable:
            by_config[r["config"]].append(r)
    series = {}
    for config in (g.config for g in m.groups if g.config in by_config):
        shards = sorted(by_config[config], key=lambda r: (shard_interval(r)[1], r["index"]))
        first = min(shard_interval(r)[0] for r in shards)
        points = [(round(clock(first), 3), 0.0)]
        seen: set = set()
        for r in shards:
            seen.update(r["fingerprints"] or ())
            points.append((round(clock(shard_interval(r)[1]), 3),
                           round(100.0 * len(seen) / reachable[config], 3)))
        series[config] = points
    if series:
        rep.figure(Figure("coverage-over-time", "Coverage over time (correct design)", "line",
                          xlabel="campaign clock: seconds with a shard running",
                          ylabel="% of the reachable states", series=series,
                          caption="Union of the shards' visited states as a share of the "
                                  "explorer's reachable set, per configuration: 0 % when its "
                                  "first shard starts, then a point as each of its shards "
                                  "finishes."))


def write_campaign_report(summary, records, directory) -> dict:
    return campaign_report(summary, records).write(directory)
