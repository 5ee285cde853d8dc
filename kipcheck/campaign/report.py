"""``report.md`` and ``report.html`` of a campaign, beside its Parquet shards.

Built from what is on disk (the shard records and ``campaign.json``) plus the run's summary,
so a resumed campaign's report covers every finished shard.  Plots: coverage over time
(distinct states of the union of the shards, in the order shards finished), failures by
property, and throughput per executor (steps per second of shard time, per worker process).
The coverage statement says exactly what was covered: per (configuration, variant), the
distinct states visited and, where the explorer's reachable set is known, the share of it.
"""
from __future__ import annotations

from collections import defaultdict

from kipcheck.report import Figure, Report


def campaign_report(summary, records) -> Report:
    """``records``: the shard records as stored (dicts, ``ResultStore.load_records``)."""
    spec = summary.spec
    m = summary.merged
    rep = Report(f"kipcheck campaign {spec.name}")
    verdict = "OK" if summary.ok else "FAILED: " + "; ".join(summary.problems())
    rep.para(f"Campaign seed {spec.seed}; engine {summary.engine}; {summary.done} of "
             f"{summary.total} shards finished ({summary.skipped} resumed from an earlier run); "
             f"{m.steps:,} model steps in {m.seconds:.1f} s of shard time, {summary.seconds:.1f} s "
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
    rep.heading("Failures (de-duplicated by property and minimised trace)")
    if m.failures:
        rep.table(["configuration", "variant", "property", "clause", "trace length", "engines",
                   "found by seeds", "replay"],
                  [[f.config, f.variant, f.property, f.clause or "", f.trace_length,
                    ", ".join(f.engines), ", ".join(str(s) for s in f.seeds[:4])
                    + (" ..." if len(f.seeds) > 4 else ""),
                    f"kipcheck replay --campaign {summary.directory} --seed {f.seeds[0]}"]
                   for f in m.failures])
    else:
        rep.para("No property was violated.")
    if summary.determinism_checked:
        rep.heading("Determinism")
        mism = summary.determinism_mismatches
        rep.para(f"{len(summary.determinism_checked)} shard seeds re-run in the driver: "
                 + ("every digest matched." if not mism else
                    "MISMATCH for " + ", ".join(f"seed {x.seed}" for x in mism)))
    # plots
    ordered = sorted(records, key=lambda r: (r.get("finished_at") or 0.0, r["index"]))
    reachable = {g.config: g.coverage.states_reachable for g in m.groups
                 if g.variant == "correct" and g.coverage is not None}
    seen: dict = defaultdict(set)
    series: dict = defaultdict(lambda: [(0.0, 0.0)])
    start = min((r.get("finished_at") or 0.0) - (r.get("seconds") or 0.0) for r in ordered) \
        if ordered else 0.0
    for r in ordered:
        if r["variant"] != "correct" or r["config"] not in reachable:
            continue                      # coverage of the correct design is the point
        label = r["config"]
        seen[label] |= set(r["fingerprints"] or ())
        series[label].append((round((r.get("finished_at") or 0.0) - start, 3),
                              round(100.0 * len(seen[label]) / reachable[label], 3)))
    if series:
        rep.figure(Figure("coverage-over-time", "Coverage over time (correct design)", "line",
                          xlabel="seconds since the campaign started",
                          ylabel="% of the reachable states", series=dict(series),
                          caption="Union of the shards' visited states as a share of the "
                                  "explorer's reachable set; each point is a shard finishing."))
    by_prop: dict = defaultdict(int)
    for f in m.failures:
        by_prop[f.property] += 1
    rep.figure(Figure("failures-by-property", "Distinct failures by property", "bar",
                      ylabel="failures", bars=sorted(by_prop.items()) or [("none", 0)]))
    per_worker: dict = defaultdict(lambda: [0, 0.0])
    for r in records:
        w = per_worker[f"{r['hostname']}:{r['pid']}"]
        w[0] += r["steps"]
        w[1] += r["seconds"]
    bars = [(k, round(v[0] / v[1], 1) if v[1] > 0 else 0.0) for k, v in sorted(per_worker.items())]
    rep.figure(Figure("throughput-per-executor", "Throughput per executor process", "bar",
                      ylabel="steps per second of shard time", bars=bars or [("none", 0)]))
    return rep


def write_campaign_report(summary, records, directory) -> dict:
    return campaign_report(summary, records).write(directory)
