"""Campaign results on disk, and their merge.

Layout of a campaign directory ``DIR``::

    DIR/campaign.json             the spec, the model hash, start/finish, the runs (engine,
                                  master, executors, status) -- rewritten atomically
    DIR/shards/shard-NNNNNN.parquet   one file per finished shard (NNNNNN = task index), written
                                  to a temporary name and renamed, so a file that exists is
                                  complete; ``--resume`` skips the indices that have one
    DIR/traces/seed-SEED.json     saved by ``kipcheck replay --campaign DIR --seed SEED``

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
        property         string  P1..P9, L1 (properties/registry.py) or "conformance"
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
    pid              int64      worker process id
    hostname         string     worker host name
    finished_at      float64    Unix time the driver wrote the record
    digest           string     SHA-256 (hex) of the * columns
    started_at       float64    Unix time the shard started, by its worker's clock } campaign
    ended_at         float64    Unix time the shard ended                          } clock
    executor         string     what ran it: "driver" (serial), "process/HOST/PID" (a pool
                                process), "spark/HOST/PID" (a Spark executor: its Python
                                daemon); the report numbers them (throughput per executor)

Files written before the last three columns existed read as 0.0 / "" (the report falls back
to ``finished_at`` and the worker's host and pid).

Merging (``merge``): failures are de-duplicated by (variant, property, clause): one line per
way a design breaks, whatever configurations, engines and traces found it; each keeps the
shortest trace found (replayed by its shard's seed), every shard seed that reported it and the
number of distinct traces.  A failure is *expected* when a seeded variant breaks a property it
is listed to break (``model.config.VARIANTS[name].breaks``) and *unexpected* otherwise: the
correct design violating anything, or a variant breaking a property it should not.  Coverage is
merged per (configuration, variant) as the union of the shards' fingerprints and measured
against the explorer's reachable set (``properties.coverage.reachable``) when that set is
cached or the configuration is tiny (``coverage = "auto"``), always (``"always"``: explores it,
possibly for minutes) or never; otherwise only the distinct-state count is given, with the
statement that no reachable set is known.
"""
from __future__ import annotations

import errno
import json
import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from kipcheck.campaign.shard import ShardResult, one_line

__all__ = ["ResultStore", "CampaignError", "OutputError", "Merged", "GroupSummary",
           "MergedFailure", "merge", "is_expected", "require_parquet", "SHARD_SCHEMA", "FORMAT"]

FORMAT = "kipcheck-campaign"
VERSION = 1
_SHARD_RE = re.compile(r"^shard-(\d+)\.parquet$")
_META_LIMIT = 16 << 20      # campaign.json is a few kilobytes; anything this big is not ours
_REQUIRED = ("index", "key", "config", "variant", "engine", "shard", "seed", "steps",
             "fingerprints", "failures", "stop_reason", "model_hash", "seconds", "digest")


class CampaignError(Exception):
    """A campaign that cannot run or be read as asked (exit code 2); one-line message."""


class OutputError(CampaignError):
    """The campaign directory cannot be written (a file where a directory should be, a
    read-only or full file system, ``/proc``).  Raised before any shard runs when it can be
    told then; during a run the runner sets what was kept and how to resume."""

    kept: int | None = None     # set by run_campaign when it stops a run
    total: int = 0
    resume_hint: str = ""


def os_reason(e: BaseException) -> str:
    """The operating system's words for ``e`` (pyarrow's OSErrors carry no strerror)."""
    return getattr(e, "strerror", None) or one_line(str(e), 200) or type(e).__name__


def _pa():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise CampaignError("campaign results are Parquet files: install pyarrow "
                            "(pip install 'kipcheck[spark]')") from None
    return pa, pq


def require_parquet() -> None:
    """CampaignError (naming the extra to install) unless the Parquet results can be written."""
    _pa()


def is_expected(variant: str, prop: str) -> bool:
    """True when ``variant`` is a design variant listed to break ``prop``: its failure is the
    campaign working as intended.  The correct design breaking anything is unexpected."""
    from model.config import VARIANTS
    v = VARIANTS.get(variant)
    return v is not None and prop in v.breaks


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
        ("finished_at", pa.float64()), ("digest", pa.string()),
        ("started_at", pa.float64()), ("ended_at", pa.float64()), ("executor", pa.string())])


SHARD_SCHEMA = shard_schema     # a function: pyarrow is imported only when results are touched


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


class ResultStore:
    """A campaign directory: shard Parquet files plus ``campaign.json``."""

    def __init__(self, directory):
        self.dir = Path(directory)
        self.shards_dir = self.dir / "shards"
        self.meta_path = self.dir / "campaign.json"

    # -- the directory ------------------------------------------------------------------------
    def _check_path(self) -> None:
        """OutputError when the campaign directory cannot be a directory: it, or one of its
        parents, exists and is not a directory (a file, a device)."""
        d = self.dir
        for p in [d, *d.parents]:
            try:
                st = p.stat()
            except (FileNotFoundError, NotADirectoryError):
                continue                    # look further up for what is in the way
            except OSError as e:            # a symlink loop, no permission
                raise OutputError(f"{d}: cannot use it as the campaign directory "
                                  f"({os_reason(e)})") from None
            except ValueError as e:         # an embedded NUL
                raise OutputError(f"{d!r}: not a usable directory path ({e})") from None
            if not stat.S_ISDIR(st.st_mode):
                what = "a file" if stat.S_ISREG(st.st_mode) else "a device, socket or pipe"
                where = f"{d} is" if p == d else f"{d}: {p} is"
                raise OutputError(f"{where} {what}, not a directory")
            return

    def prepare(self) -> list:
        """Create the directory and ``shards/`` and write (then remove) a file there, so that
        an unusable output fails before any shard runs, not after the first one.  Returns the
        directories created (``discard`` removes them if the run then does not start)."""
        self._check_path()
        missing = [p for p in [self.dir, *self.dir.parents] if not p.exists()]
        missing = list(reversed(missing)) + [self.shards_dir]
        created = []
        for d in missing:
            if d.is_dir():
                continue
            if d.exists():
                raise OutputError(f"{d}: is a file, not a directory")
            try:
                d.mkdir()
            except FileExistsError:         # made meanwhile by someone else: fine
                continue
            except OSError as e:
                why = os_reason(e)
                if e.errno == errno.ENOENT and d.parent.is_dir():
                    why = f"{d.parent} accepts no new entries ({why})"
                self.discard(created)
                raise OutputError(f"cannot create the directory {d}: {why}") from None
            created.append(d)
        probe = self.shards_dir / f".write-test-{os.getpid()}"
        try:
            with open(probe, "wb") as f:
                f.write(b"kipcheck\n")
            probe.unlink()
        except OSError as e:
            self.discard(created)
            raise OutputError(f"cannot write in {self.shards_dir}: {os_reason(e)}") from None
        return created

    @staticmethod
    def discard(created) -> None:
        """Remove the (empty) directories ``prepare`` created."""
        for d in reversed(created):
            try:
                d.rmdir()
            except OSError:
                pass

    # -- campaign.json ------------------------------------------------------------------------
    def read_meta(self) -> dict | None:
        """campaign.json, checked; None when there is none.  CampaignError (one line) for a
        file that is not one: unreadable, not UTF-8, not JSON, nested or sized absurdly, or
        missing the fields a resume needs."""
        try:
            with open(self.meta_path, "rb") as f:
                raw = f.read(_META_LIMIT + 1)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            raise CampaignError(f"{self.meta_path}: unreadable ({os_reason(e)})") from None
        if len(raw) > _META_LIMIT:
            raise CampaignError(f"{self.meta_path}: over {_META_LIMIT >> 20} MiB: not a "
                                f"kipcheck campaign file")
        try:
            meta = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise CampaignError(f"{self.meta_path}: not UTF-8 text: not a kipcheck campaign "
                                f"file") from None
        except json.JSONDecodeError as e:
            raise CampaignError(f"{self.meta_path}: not JSON ({e.msg} at line {e.lineno} "
                                f"column {e.colno}): a damaged campaign file") from None
        except RecursionError:
            raise CampaignError(f"{self.meta_path}: JSON nested too deeply: not a kipcheck "
                                f"campaign file") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise CampaignError(f"{self.meta_path}: not a kipcheck campaign file")
        bad = [k for k, t in (("runs", list), ("spec_identity", str), ("model_hash", str),
                              ("spec", dict)) if not isinstance(meta.get(k), t)]
        if bad:
            raise CampaignError(f"{self.meta_path}: a damaged campaign file (field "
                                f"{bad[0]!r} missing or of the wrong type)")
        return meta

    def _write_meta(self, meta: dict) -> None:
        tmp = self.meta_path.with_name(f".campaign.json.tmp{os.getpid()}")
        try:
            tmp.write_text(json.dumps(meta, indent=1, sort_keys=False) + "\n")
            os.replace(tmp, self.meta_path)
        except OSError as e:
            _unlink_quietly(tmp)
            raise OutputError(f"cannot write {self.meta_path}: {os_reason(e)}") from None

    def check(self, spec, *, resume: bool = False, tasks: int | None = None) -> None:
        """CampaignError unless a run of ``spec`` may write here: an empty or new directory,
        or (``resume``) the same campaign on the same model, whose shard files are readable.
        ``tasks``: the number of tasks of ``spec`` (shard files beyond it are refused)."""
        from properties.trace import model_hash
        _pa()
        self._check_path()
        meta = self.read_meta()
        finished = self.finished_indices()
        if resume and meta is None and not finished:
            if not self.dir.exists():
                raise CampaignError(f"{self.dir} does not exist: there is no campaign to "
                                    f"resume; run without --resume to start one")
            raise CampaignError(f"{self.dir} holds no campaign to resume (no campaign.json); "
                                f"run without --resume to start one there")
        if finished or (meta is not None and resume):
            if not resume:
                raise CampaignError(f"{self.dir} already holds a campaign "
                                    f"({len(finished)} shards done); pass --resume to "
                                    f"continue it, or choose another --out")
            if meta is None:
                raise CampaignError(f"{self.dir}/shards holds shard files but no "
                                    f"campaign.json: cannot tell which campaign they are from")
            if meta.get("spec_identity") != spec.identity_hash():
                raise CampaignError(f"{self.dir} holds campaign {meta.get('name')!r} made by "
                                    f"a different spec ({_spec_difference(meta, spec)}); "
                                    f"--resume needs the spec that started it, or choose "
                                    f"another --out")
            mh = model_hash()
            if meta.get("model_hash") != mh:
                raise CampaignError(f"{self.dir} was run with model {meta.get('model_hash')}, "
                                    f"this is model {mh}: its results would not merge with "
                                    f"new ones; start a new campaign (another --out)")
            if tasks is not None and finished and max(finished) >= tasks:
                raise CampaignError(f"{self.path_of(max(finished))}: this campaign has "
                                    f"{tasks} shards (0..{tasks - 1}): not a shard of it")
            self.check_shard_files(finished)

    def check_shard_files(self, indices) -> None:
        """CampaignError naming the first shard file that is not a readable shard Parquet
        file (its footer and columns only: cheap, however many shards there are)."""
        _, pq = _pa()
        for i in sorted(indices):
            path = self.path_of(i)
            try:
                names = set(pq.read_schema(path).names)
            except Exception as e:          # pyarrow raises several kinds for a bad file
                raise CampaignError(f"{path}: not a readable shard file "
                                    f"({one_line(str(e), 160)}); delete it and --resume "
                                    f"to run that shard again") from None
            lacking = [c for c in _REQUIRED if c not in names]
            if lacking:
                raise CampaignError(f"{path}: not a shard file of this kipcheck (no column "
                                    f"{lacking[0]!r}); delete it and --resume to run that "
                                    f"shard again")

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
                    "model_hash": model_hash(), "tasks": tasks, "started": _now(),
                    "finished": None, "status": "running", "hypothesis": hv,
                    "python": platform.python_version(), "runs": []}
        try:
            self.shards_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OutputError(f"cannot create the directory {self.shards_dir}: "
                              f"{os_reason(e)}") from None
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
        """Write one finished shard now, atomically (a crash leaves no partial file).  An
        OSError (a full disk, the directory gone) leaves no temporary file behind."""
        pa, pq = _pa()
        row = result.to_record()
        row["finished_at"] = time.time()
        table = pa.Table.from_pylist([row], schema=shard_schema())
        self.shards_dir.mkdir(parents=True, exist_ok=True)
        final = self.path_of(result.index)
        tmp = final.with_name(f".{final.name}.tmp{os.getpid()}")
        try:
            pq.write_table(table, tmp)
            os.replace(tmp, final)
        except BaseException:
            _unlink_quietly(tmp)
            raise
        return final

    def finished_indices(self) -> set:
        try:
            return {int(m.group(1)) for p in self.shards_dir.iterdir()
                    if (m := _SHARD_RE.match(p.name))}
        except (FileNotFoundError, NotADirectoryError):
            return set()
        except OSError as e:
            raise CampaignError(f"{self.shards_dir}: unreadable ({os_reason(e)})") from None

    def _read(self, index: int) -> list:
        _, pq = _pa()
        path = self.path_of(index)
        try:
            return pq.read_table(path).to_pylist()
        except Exception as e:              # pyarrow raises several kinds for a bad file
            raise CampaignError(f"{path}: unreadable shard file ({one_line(str(e), 160)}); "
                                f"delete it and --resume to run that shard again") from None

    def load_records(self) -> list:
        """Every shard record (dicts, with ``finished_at``), by index."""
        rows = []
        for i in sorted(self.finished_indices()):
            rows.extend(self._read(i))
        rows.sort(key=lambda r: r.get("index") or 0)
        return rows

    def load_all(self) -> list:
        """Every finished shard as a ``ShardResult``, by index; CampaignError naming the file
        of a record that is not one."""
        out = []
        for i in sorted(self.finished_indices()):
            for row in self._read(i):
                try:
                    out.append(ShardResult.from_record(row))
                except (KeyError, TypeError, ValueError, AttributeError) as e:
                    raise CampaignError(f"{self.path_of(i)}: not a shard record ("
                                        f"{type(e).__name__}: {one_line(str(e), 120)}); "
                                        f"delete it and --resume to run that shard "
                                        f"again") from None
        out.sort(key=lambda r: r.index)
        return out


def _unlink_quietly(path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _spec_difference(meta: dict, spec) -> str:
    """What differs between the recorded spec and ``spec``, in words ("seed: 7 there, 8
    here"), for the keys that decide the shards."""
    recorded = meta.get("spec") if isinstance(meta.get("spec"), dict) else {}
    now = spec.identity()
    diffs = []
    for key, value in now.items():
        was = recorded.get(key)
        if isinstance(was, list):
            was = list(was)
        if was != value:
            diffs.append(f"{key}: {_short(was)} there, {_short(value)} here")
    return "; ".join(diffs[:3]) or "seed, grid or budget changed"


def _short(value) -> str:
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."


# ---- merge ----------------------------------------------------------------------------------

@dataclass
class MergedFailure:
    """One way a design breaks: (variant, property, clause), over every shard that found it."""
    variant: str
    property: str
    clause: str | None
    config: str                 # the configuration of the shortest trace
    trace: str                  # the shortest trace found: a kipcheck-trace JSON document
    trace_length: int
    seed: int                   # the seed of the shard that found it (replay --seed)
    expected: bool              # a variant breaking a property it is listed to break
    configs: tuple = ()         # every configuration it was found on, in task order
    engines: tuple = ()
    seeds: tuple = ()           # every shard seed that reported it, in task order
    keys: tuple = ()
    traces: int = 1             # distinct minimised traces among those reports

    def to_dict(self) -> dict:
        return {"variant": self.variant, "property": self.property, "clause": self.clause,
                "expected": self.expected, "config": self.config, "configs": list(self.configs),
                "trace_length": self.trace_length, "seed": self.seed,
                "engines": list(self.engines), "seeds": list(self.seeds),
                "keys": list(self.keys), "traces": self.traces,
                "trace": json.loads(self.trace)}


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
    failures: int = 0           # distinct (variant, property, clause) found here
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

    @property
    def expected(self) -> list:
        return [f for f in self.failures if f.expected]

    @property
    def unexpected(self) -> list:
        return [f for f in self.failures if not f.expected]

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
    distinct: dict = {}             # failure key -> the distinct traces' steps
    in_group: set = set()           # (config, variant, property, clause) counted per group
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
            key = (r.variant, f.property, f.clause)
            steps = json.dumps(f.steps_json())
            m = failures.get(key)
            if m is None:
                m = failures[key] = MergedFailure(
                    r.variant, f.property, f.clause, r.config, f.trace, f.trace_length, r.seed,
                    is_expected(r.variant, f.property))
                distinct[key] = set()
            elif f.trace_length < m.trace_length:       # keep the shortest trace
                m.config, m.trace, m.trace_length, m.seed = (r.config, f.trace,
                                                             f.trace_length, r.seed)
            distinct[key].add(steps)
            m.traces = len(distinct[key])
            for attr, value in (("configs", r.config), ("engines", r.engine)):
                if value not in getattr(m, attr):
                    setattr(m, attr, getattr(m, attr) + (value,))
            m.seeds += (r.seed,)
            m.keys += (r.key,)
            if (r.config,) + key not in in_group:
                in_group.add((r.config,) + key)
                g.failures += 1
                g.properties.add(f.property)
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
    tier = CONFIGS[g.config].tier
    if mode == "auto" and not is_cached(kspec) and tier != "tiny":
        return None, unknown + " (coverage = \"always\" explores it)"
    if tier == "medium" and not is_cached(kspec):
        # deciding a medium configuration takes up to an hour on two cores: make test-large
        # or `kipcheck explore` explores it (and caches its reachable set); a campaign does
        # not wait for it
        return None, unknown + (f" (`kipcheck explore --config {g.config}"
                                + ("" if g.variant == "correct" else f" --variant {g.variant}")
                                + "` or make test-large explores it and caches the set)")
    if progress is not None and not is_cached(kspec):
        progress(f"computing the reachable set of {kspec.name} once (cached)")
    from properties.parallel import default_workers
    reach = reachable(kspec, workers=default_workers())
    cov = measure(g.fingerprints, g.actions, reach)
    return cov, ("reachable set from the cache" if reach.cached
                 else f"reachable set explored in {reach.seconds:.1f} s")
