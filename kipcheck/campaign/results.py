"""Campaign results on disk, and their merge.

Layout of a campaign directory ``DIR``::

    DIR/campaign.json             the spec, the model hash, start/finish, the runs (engine,
                                  master, executors, status) -- rewritten atomically
    DIR/shards/shard-NNNNNN.parquet   one file per finished shard (NNNNNN = task index), written
                                  to a temporary name and renamed, so a file that exists is
                                  complete; ``--resume`` skips the indices that have one
    DIR/traces/seed-SEED.json     written by ``kipcheck replay --campaign DIR --seed SEED``

Shard record schema (one row per Parquet file; ``SHARD_SCHEMA``; the HTML/Markdown report reads
these).  Deterministic columns are marked *; ``digest`` is SHA-256 over exactly those
(``ShardResult.compute_digest``), so two runs of one task must agree on it:

    index            int64    * task index in the spec's stable order (seeds.shard_tasks)
    key              string   * "config/variant/engine/shard"
    config           string   * model configuration (model/configs.py)
    variant          string   * "correct" or a design variant (model/config.py VARIANTS)
    engine           string   * "stateful", "random-walk", "conformance"
    shard            int64    * shard number within its (config, variant, engine) group
    seed             uint64   * the shard seed (kipcheck replay --campaign DIR --seed SEED)
    swarms           list<string>   * per round: the actions it switched off ("all" / "off: a, b")
    rounds           int64    * rounds run
    steps            int64    * model steps taken
    distinct         int64    * distinct states visited by this shard
    fingerprints     list<uint64>   * the visited states' 64-bit fingerprints (hash(state)), sorted
    witnesses        list<string>   * witnesses reached
    actions          list<struct<action string, count int64>>  * steps taken per model action
    failures         list<struct>   * one per property violated:
        property         string  P1..P8, L1 (properties/registry.py) or "conformance"
        clause           string  the clause violated (may be null)
        trace            string  minimised counterexample, a kipcheck-trace v1 JSON document
        trace_length     int64   its steps
        shrunk_length    int64   steps before minimising (null if unknown)
        reproduce_blob   string  Hypothesis @reproduce_failure blob (null: not available from
                                 the stateful engine, which runs with print_blob off; the
                                 JSON trace is the reproducer of record) -- not in the digest
        round            int64   the round that found it
    stop_reason      string   * "budget" (the work budget was done), "violation" (the stateful
                                engine stops at its first), "time budget" (the safety cap
                                stopped it: that shard is NOT reproducible)
    model_hash       string   * properties.trace.model_hash() of the model that ran it
    seconds          float64    wall time of the shard
    timeline         list<struct<elapsed float64, steps int64, distinct int64>>
                                coverage over time within the shard (about every 0.5 s)
    pid              int64      worker process id     } throughput per executor
    hostname         string     worker host name      }
    finished_at      float64    Unix time the driver wrote the record
    digest           string     SHA-256 (hex) of the * columns

Merging (``merge``): failures are de-duplicated by (configuration, variant, property,
minimised trace steps); each merged failure lists every shard seed that found it.  Coverage is
merged per (configuration, variant) as the union of the shards' fingerprints and measured
against the explorer's reachable set (``properties.coverage.reachable``) when that set is
cached or the configuration is tiny (``coverage = "auto"``), always (``"always"``: explores it,
possibly for minutes) or never; otherwise only the distinct-state count is given, with the
statement that no reachable set is known.
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from kipcheck.campaign.shard import ShardResult

__all__ = ["ResultStore", "CampaignError", "Merged", "GroupSummary", "MergedFailure", "merge",
           "SHARD_SCHEMA", "FORMAT"]

FORMAT = "kipcheck-campaign"
VERSION = 1
_SHARD_RE = re.compile(r"^shard-(\d+)\.parquet$")


class CampaignError(Exception):
    """A campaign that cannot run or be read as asked (exit code 2); one-line message."""


def _pa():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise CampaignError("campaign results are Parquet files: install pyarrow "
                            "(pip install 'kipcheck[spark]')") from None
    return pa, pq


def shard_schema():
    pa, _ = _pa()
    failure = pa.struct([("property", pa.string()), ("clause", pa.string()),
                         ("trace", pa.string()), ("trace_length", pa.int64()),
                         ("shrunk_length", pa.int64()), ("reproduce_blob", pa.string()),
                         ("round", pa.int64())])
    point = pa.struct([("elapsed", pa.float64()), ("steps", pa.int64()),
                       ("distinct", pa.int64())])
    return pa.schema([
        ("index", pa.int64()), ("key", pa.string()), ("config", pa.string()),
        ("variant", pa.string()), ("engine", pa.string()), ("shard", pa.int64()),
        ("seed", pa.uint64()), ("swarms", pa.list_(pa.string())), ("rounds", pa.int64()),
        ("steps", pa.int64()), ("distinct", pa.int64()),
        ("fingerprints", pa.list_(pa.uint64())), ("witnesses", pa.list_(pa.string())),
        ("actions", pa.list_(pa.struct([("action", pa.string()), ("count", pa.int64())]))),
        ("failures", pa.list_(failure)), ("stop_reason", pa.string()),
        ("model_hash", pa.string()), ("seconds", pa.float64()),
        ("timeline", pa.list_(point)), ("pid", pa.int64()), ("hostname", pa.string()),
        ("finished_at", pa.float64()), ("digest", pa.string())])


SHARD_SCHEMA = shard_schema     # a function: pyarrow is imported only when results are touched


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


class ResultStore:
    """A campaign directory: shard Parquet files plus ``campaign.json``."""

    def __init__(self, directory):
        self.dir = Path(directory)
        self.shards_dir = self.dir / "shards"
        self.meta_path = self.dir / "campaign.json"

    # -- campaign.json ------------------------------------------------------------------------
    def read_meta(self) -> dict | None:
        try:
            meta = json.loads(self.meta_path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            raise CampaignError(f"{self.meta_path}: unreadable ({e})") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise CampaignError(f"{self.meta_path}: not a kipcheck campaign file")
        return meta

    def _write_meta(self, meta: dict) -> None:
        tmp = self.meta_path.with_name(f".campaign.json.tmp{os.getpid()}")
        tmp.write_text(json.dumps(meta, indent=1, sort_keys=False) + "\n")
        os.replace(tmp, self.meta_path)

    def check(self, spec, *, resume: bool = False) -> None:
        """CampaignError unless a run of ``spec`` may write here: an empty or new directory,
        or (``resume``) the same campaign on the same model."""
        from properties.trace import model_hash
        _pa()
        meta = self.read_meta()
        finished = self.finished_indices()
        mh = model_hash()
        if finished or (meta is not None and resume):
            if not resume:
                raise CampaignError(f"{self.dir} already holds a campaign "
                                    f"({len(finished)} shards done); pass --resume to "
                                    f"continue it, or choose another --out")
            if meta is None:
                raise CampaignError(f"{self.dir}/shards holds shard files but no "
                                    f"campaign.json: cannot tell which campaign they are from")
            if meta.get("spec_identity") != spec.identity_hash():
                raise CampaignError(f"{self.dir} holds campaign {meta.get('name')!r} with a "
                                    f"different spec (seed, grid or budget changed); resume "
                                    f"needs the same spec, or choose another --out")
            if meta.get("model_hash") != mh:
                raise CampaignError(f"{self.dir} was run with model {meta.get('model_hash')}, "
                                    f"this is model {mh}: its results would not merge with "
                                    f"new ones; start a new campaign (another --out)")

    def begin(self, spec, *, engine: str, master=None, executors=None, resume=False,
              tasks: int = 0) -> dict:
        """Open the directory for a run of ``spec`` (``check`` first), record the run.  A
        campaign.json with no finished shard (a run that never got going) is started over."""
        from properties.trace import model_hash
        self.check(spec, resume=resume)
        meta = self.read_meta()
        finished = self.finished_indices()
        if not (finished or (meta is not None and resume)):
            import platform
            try:
                import hypothesis
                hv = hypothesis.__version__
            except ImportError:             # pragma: no cover
                hv = None
            meta = {"format": FORMAT, "version": VERSION, "name": spec.name,
                    "spec": spec.to_dict(), "spec_identity": spec.identity_hash(),
                    "model_hash": model_hash(), "tasks": tasks, "started": _now(), "finished": None,
                    "status": "running", "hypothesis": hv,
                    "python": platform.python_version(), "runs": []}
        self.shards_dir.mkdir(parents=True, exist_ok=True)
        meta["status"] = "running"
        meta["finished"] = None
        meta["runs"].append({"engine": engine, "master": master, "executors": executors,
                             "started": _now(), "finished": None, "status": "running",
                             "resumed_with": len(finished), "shards_run": 0})
        self._write_meta(meta)
        self._meta = meta
        return meta

    def end(self, status: str, shards_run: int, **extra) -> None:
        meta = getattr(self, "_meta", None) or self.read_meta()
        if meta is None:
            return
        run = meta["runs"][-1]
        run.update(finished=_now(), status=status, shards_run=shards_run)
        meta["status"] = status
        meta["finished"] = _now() if status == "finished" else None
        meta.update(extra)
        self._write_meta(meta)

    # -- shard files --------------------------------------------------------------------------
    def path_of(self, index: int) -> Path:
        return self.shards_dir / f"shard-{index:06d}.parquet"

    def write(self, result: ShardResult) -> Path:
        """Write one finished shard now, atomically (a crash leaves no partial file)."""
        pa, pq = _pa()
        row = result.to_record()
        row["finished_at"] = time.time()
        table = pa.Table.from_pylist([row], schema=shard_schema())
        self.shards_dir.mkdir(parents=True, exist_ok=True)
        final = self.path_of(result.index)
        tmp = final.with_name(f".{final.name}.tmp{os.getpid()}")
        pq.write_table(table, tmp)
        os.replace(tmp, final)
        return final

    def finished_indices(self) -> set:
        if not self.shards_dir.is_dir():
            return set()
        return {int(m.group(1)) for p in self.shards_dir.iterdir()
                if (m := _SHARD_RE.match(p.name))}

    def load_records(self) -> list:
        """Every shard record (dicts, with ``finished_at``), by index."""
        _, pq = _pa()
        rows = []
        for i in sorted(self.finished_indices()):
            path = self.path_of(i)
            try:
                rows.extend(pq.read_table(path).to_pylist())
            except Exception as e:          # pyarrow raises several kinds for a bad file
                raise CampaignError(f"{path}: unreadable shard file ({e})") from None
        rows.sort(key=lambda r: r["index"])
        return rows

    def load_all(self) -> list:
        """Every finished shard as a ``ShardResult``, by index."""
        return [ShardResult.from_record(r) for r in self.load_records()]


# ---- merge ----------------------------------------------------------------------------------

@dataclass
class MergedFailure:
    config: str
    variant: str
    property: str
    clause: str | None
    trace: str                  # the kipcheck-trace JSON document
    trace_length: int
    engines: tuple
    seeds: tuple                # every shard seed that found it, in task order
    keys: tuple

    def to_dict(self) -> dict:
        return {"config": self.config, "variant": self.variant, "property": self.property,
                "clause": self.clause, "trace_length": self.trace_length,
                "engines": list(self.engines), "seeds": list(self.seeds),
                "keys": list(self.keys), "trace": json.loads(self.trace)}


@dataclass
class GroupSummary:
    """One (configuration, variant) over all its shards and engines."""
    config: str
    variant: str
    shards: int = 0
    steps: int = 0
    seconds: float = 0.0
    fingerprints: set = field(default_factory=set)
    witnesses: set = field(default_factory=set)
    witnesses_expected: tuple = ()
    actions: set = field(default_factory=set)      # model actions taken by some shard
    properties: set = field(default_factory=set)
    failures: int = 0           # distinct (de-duplicated) failures
    time_capped: int = 0        # shards stopped by the safety cap (not reproducible)
    coverage: object = None     # properties.coverage.Coverage, when a reachable set is known
    coverage_note: str = ""

    @property
    def distinct(self) -> int:
        return len(self.fingerprints)

    def to_dict(self) -> dict:
        return {"config": self.config, "variant": self.variant, "shards": self.shards,
                "steps": self.steps, "seconds": round(self.seconds, 3),
                "distinct": self.distinct,
                "witnesses_reached": [w for w in self.witnesses_expected
                                      if w in self.witnesses],
                "witnesses_missing": [w for w in self.witnesses_expected
                                      if w not in self.witnesses],
                "properties_violated": sorted(self.properties), "failures": self.failures,
                "time_capped": self.time_capped,
                "coverage": self.coverage.to_dict() if self.coverage is not None else None,
                "coverage_note": self.coverage_note}


@dataclass
class Merged:
    groups: list                # GroupSummary, in spec order
    failures: list              # MergedFailure, in order of first finding shard
    shards: int
    steps: int
    seconds: float              # sum of shard seconds (CPU-ish time, not wall time)

    def to_dict(self) -> dict:
        return {"shards": self.shards, "steps": self.steps,
                "shard_seconds": round(self.seconds, 3),
                "groups": [g.to_dict() for g in self.groups],
                "failures": [f.to_dict() for f in self.failures]}


def merge(results, *, spec=None, coverage: str = "auto", progress=None) -> Merged:
    """Merge shard results (``ShardResult``s).  ``spec`` orders the groups (else first-seen
    order); ``coverage``: "auto", "always" or "never" (module docstring)."""
    from model.configs import CONFIGS
    results = sorted(results, key=lambda r: r.index)
    groups: dict = {}
    if spec is not None:
        for c, v in spec.pairs():
            groups[(c, v)] = GroupSummary(c, v, witnesses_expected=tuple(CONFIGS[c].witnesses))
    failures: dict = {}
    for r in results:
        g = groups.get((r.config, r.variant))
        if g is None:
            g = groups[(r.config, r.variant)] = GroupSummary(
                r.config, r.variant, witnesses_expected=tuple(CONFIGS[r.config].witnesses))
        g.shards += 1
        g.steps += r.steps
        g.seconds += r.seconds
        g.fingerprints.update(r.fingerprints)
        g.witnesses.update(r.witnesses)
        g.actions.update(a for a, _ in r.actions)
        g.time_capped += r.stop_reason == "time budget"
        for f in r.failures:
            key = (r.config, r.variant, f.property, json.dumps(f.steps_json()))
            m = failures.get(key)
            if m is None:
                failures[key] = MergedFailure(r.config, r.variant, f.property, f.clause,
                                              f.trace, f.trace_length, (r.engine,), (r.seed,),
                                              (r.key,))
                g.failures += 1
                g.properties.add(f.property)
            else:
                if r.engine not in m.engines:
                    m.engines += (r.engine,)
                m.seeds += (r.seed,)
                m.keys += (r.key,)
    for g in groups.values():
        g.coverage, g.coverage_note = _coverage(g, coverage, progress)
    return Merged(list(groups.values()), list(failures.values()), len(results),
                  sum(r.steps for r in results), sum(r.seconds for r in results))


def _coverage(g: GroupSummary, mode: str, progress):
    from model.configs import CONFIGS
    from properties.coverage import is_cached, measure, reachable
    from properties.kafka_spec import KafkaSpec
    unknown = (f"{g.distinct:,} distinct states visited; no reachable set is known for "
               f"{g.config} [{g.variant}]")
    if not g.shards:
        return None, "no shard finished"
    if mode == "never":
        return None, (f"{g.distinct:,} distinct states visited; not measured against a "
                      f"reachable set (coverage = \"never\")")
    kspec = KafkaSpec.named(g.config, g.variant)
    if mode == "auto" and not is_cached(kspec) and CONFIGS[g.config].tier != "tiny":
        return None, unknown + " (coverage = \"always\" explores it)"
    if progress is not None and not is_cached(kspec):
        progress(f"computing the reachable set of {kspec.name} once (cached)")
    reach = reachable(kspec)
    cov = measure(g.fingerprints, g.actions, reach)
    return cov, ("reachable set from the cache" if reach.cached
                 else f"reachable set explored in {reach.seconds:.1f} s")
