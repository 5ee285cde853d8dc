"""Run a campaign: ``run_campaign(spec, engine=...) -> CampaignSummary``.

The runner maps ``shard.run_shard`` over the spec's tasks with one of three executors and
writes every finished shard to the result store at once, so that nothing finished is lost:

``serial``      in this process, one shard after another;
``processes``   a ``concurrent.futures.ProcessPoolExecutor`` with the *spawn* start method
                (no state inherited from the driver: the workers see what a Spark executor
                sees); workers ignore SIGINT, so a Ctrl-C reaches only the driver;
``spark``       ``kipcheck.campaign.spark.SparkShardExecutor(master=, executors=)``, imported
                only here and only for this engine (the one module that imports pyspark); its
                ``map_shards(spec, tasks)`` yields shard records (dicts) as they finish.

``resume=True`` skips the shards already on disk (same spec and model required).  On Ctrl-C
the finished shards stay on disk and the summary says how to resume.

What stops a run, and what it leaves: the output directory is created and proved writable
before any shard runs (``ResultStore.prepare``; ``OutputError``).  A shard that raises, on
any executor, stops the campaign with a ``ShardError`` naming the shard and the Python
exception (type, message, where it was raised), and an output that becomes unwritable during
the run (a full disk, the directory replaced) with an ``OutputError`` naming what could not be
written.  Both exceptions carry ``kept`` (the shards finished and on disk), ``total`` and
``resume_hint``; neither is a property violation (the CLI exits 2 for them).

After the run, the determinism check re-runs ``spec.determinism_check`` finished shards,
sampled with a ``random.Random`` seeded from the campaign seed, in this process, and compares
their digests with the recorded ones.  A mismatch means a shard's result is not a function of
its seed (a nondeterministic engine, a time cap that cut one run short, a model change between
runs): the campaign fails with exit code 1 and the seeds are named, because a campaign whose
seeds do not replay has no reproducible failures and no trustworthy merged coverage.
"""
from __future__ import annotations

import os
import random
import shlex
import socket
import tempfile
import time
from dataclasses import dataclass, field

from kipcheck.workers import stop_pool, worker_init
from kipcheck.campaign.results import (CampaignError, Merged, OutputError, ResultStore,
                                       is_expected, merge, os_reason)
from kipcheck.campaign.seeds import shard_tasks
from kipcheck.campaign.shard import (ShardResult, _model_hash, crash_of, describe_exception,
                                     run_shard, run_shard_record)

__all__ = ["run_campaign", "CampaignSummary", "CampaignProgress", "DeterminismMismatch",
           "ShardError", "determinism_sample", "resume_command", "EXECUTORS", "map_tasks"]

EXECUTORS = ("spark", "processes", "serial")


class ShardError(Exception):
    """A shard raised instead of returning a result: a bug in an engine or the model, or an
    environment it cannot run in (a missing file, a missing package) -- not a property
    violation.  ``description`` is the Python exception on one line ("Type: message (raised at
    path:line in function)"), whichever executor ran the shard.  The shards finished before
    it are on disk (``--resume``)."""

    kept: int = 0                       # set by run_campaign: shards finished and on disk
    total: int = 0
    resume_hint: str = ""

    def __init__(self, task, error, *, description: str | None = None):
        self.task = task                # None: the executor could not say which shard
        self.error = error
        self.description = description or (describe_exception(error)
                                           if isinstance(error, BaseException) else str(error))
        super().__init__(f"shard {task.key} (seed {task.seed}) failed: {self.description}"
                         if task is not None else self.description)


def resume_command(spec_path: str, directory: str) -> str:
    """The exact command that continues a campaign (paths quoted for a shell)."""
    return (f"kipcheck campaign {shlex.quote(str(spec_path or 'SPEC.toml'))} --resume "
            f"--out {shlex.quote(str(directory))}")


@dataclass
class CampaignProgress:
    """What the progress callback gets after every finished shard."""
    done: int                   # shards finished, earlier runs (resume) included
    total: int
    ran: int                    # shards finished by this run
    steps: int                  # model steps of this run's shards
    elapsed: float              # wall seconds of this run
    failures: int               # failures found so far (not de-duplicated), this run
    last: ShardResult | None = None
    unexpected: int = 0         # of those, unexpected ones (results.is_expected): the correct
                                # design violating anything, a variant breaking another property

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.elapsed if self.elapsed > 0 else 0.0


@dataclass(frozen=True)
class DeterminismMismatch:
    index: int
    key: str
    seed: int
    recorded: str
    rerun: str
    reason: str = ""            # what differs, when it can be named

    def to_dict(self) -> dict:
        return {"index": self.index, "key": self.key, "seed": self.seed,
                "recorded": self.recorded, "rerun": self.rerun, "reason": self.reason}


@dataclass
class CampaignSummary:
    spec: object
    engine: str
    directory: str
    total: int                  # tasks in the campaign
    done: int                   # finished (on disk)
    ran: int                    # finished by this run
    skipped: int                # already on disk when this run began (resume)
    interrupted: bool
    seconds: float              # wall time of this run
    merged: Merged | None
    determinism_checked: tuple = ()     # seeds re-run
    determinism_mismatches: tuple = ()  # DeterminismMismatch
    variants_found: dict = field(default_factory=dict)     # variant -> properties violated
    variants_missing: tuple = ()
    correct_failures: tuple = ()        # MergedFailure of the correct design
    resume_hint: str = ""
    model_hashes: tuple = ()            # models seen: shards', loaded, on disk (one, normally)
    unexpected_failures: tuple = ()     # MergedFailure not expected: correct_failures, and
                                        # variants breaking properties they are not listed for

    @property
    def ok(self) -> bool:
        """No unexpected failure, every variant found by a property it is listed to break,
        seeds replay, all done."""
        return (not self.interrupted and self.done == self.total and not self.correct_failures
                and not self.unexpected_failures and not self.variants_missing
                and not self.determinism_mismatches and len(self.model_hashes) <= 1)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        return 0 if self.ok else 1

    def problems(self) -> list:
        from model.config import VARIANTS
        out = []
        for f in self.unexpected_failures:
            if f.variant == "correct":
                out.append(f"the correct design violates {f.property} [{f.clause}] on "
                           f"{', '.join(f.configs) or f.config} (seed {f.seed})")
            else:
                listed = VARIANTS[f.variant].breaks if f.variant in VARIANTS else ()
                out.append(f"variant {f.variant} violates {f.property} [{f.clause}], which it "
                           f"is not listed to break ({'/'.join(listed) or 'nothing listed'}; "
                           f"seed {f.seed})")
        for v in self.variants_missing:
            want = "/".join(VARIANTS[v].breaks) if v in VARIANTS else "?"
            out.append(f"variant {v} not found (it breaks {want})")
        if self.determinism_mismatches:
            out.append("NONDETERMINISTIC shards (re-run digest differs): " + ", ".join(
                f"seed {m.seed} ({m.key}: {m.reason})" for m in self.determinism_mismatches))
        if len(self.model_hashes) > 1:
            out.append(f"the model changed during the campaign (models "
                       f"{', '.join(self.model_hashes)}): its shards do not merge; run it "
                       f"again on one model")
        if self.done < self.total and not self.interrupted:
            out.append(f"{self.total - self.done} shards did not finish")
        return out

    def to_dict(self) -> dict:
        return {"campaign": self.spec.name, "seed": self.spec.seed, "engine": self.engine,
                "directory": self.directory, "tasks": self.total, "done": self.done,
                "ran": self.ran, "skipped": self.skipped, "interrupted": self.interrupted,
                "seconds": round(self.seconds, 3), "ok": self.ok,
                "exit_code": self.exit_code, "problems": self.problems(),
                "variants_found": {v: sorted(p) for v, p in self.variants_found.items()},
                "variants_missing": list(self.variants_missing),
                "failures": {"expected": len(self.merged.expected) if self.merged else 0,
                             "unexpected": len(self.unexpected_failures)},
                "determinism": {"checked": list(self.determinism_checked),
                                "mismatches": [m.to_dict()
                                               for m in self.determinism_mismatches]},
                "model_hashes": list(self.model_hashes),
                "merged": self.merged.to_dict() if self.merged is not None else None,
                "resume_hint": self.resume_hint}


# ---- executors ------------------------------------------------------------------------------

def _worker_init(parent_pid: int) -> None:
    """Process-pool worker set-up: Ctrl-C goes to the driver only (a worker that caught it
    would end its shard early), and the worker dies with the driver (``kipcheck.workers``);
    Hypothesis's storage (written even with database=None, Spark pitfall P9) goes to a
    temporary directory, not the user's working directory."""
    worker_init(parent_pid)
    os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY",
                          os.path.join(tempfile.gettempdir(), "kipcheck-hypothesis"))


def _serial(spec, tasks):
    for t in tasks:
        try:
            rec = run_shard_record(spec, t)
        except (KeyboardInterrupt, CampaignError):
            raise
        except Exception as e:
            raise ShardError(t, e) from e
        rec["executor"] = "driver"
        yield rec


def _pool_shard(spec, task) -> dict:
    """A shard in a pool process, labelled with that process (throughput per executor)."""
    rec = run_shard_record(spec, task)
    rec["executor"] = f"process/{socket.gethostname()}/{os.getpid()}"
    return rec


def _processes(spec, tasks, workers, fn=None):
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    workers = workers or min(len(tasks), os.cpu_count() or 1) or 1
    pool = ProcessPoolExecutor(max_workers=workers,
                               mp_context=multiprocessing.get_context("spawn"),
                               initializer=_worker_init, initargs=(os.getpid(),))
    pending: dict = {}
    clean = False
    try:
        todo = list(tasks)
        todo.reverse()
        # a bounded window of submitted tasks: a cancelled campaign has little queued work
        while todo or pending:
            while todo and len(pending) < 2 * workers:
                task = todo.pop()
                pending[pool.submit(fn or _pool_shard, spec, task)] = task
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=lambda f: pending[f].index):
                task = pending.pop(fut)
                try:
                    rec = fut.result()
                except Exception as e:
                    raise ShardError(task, e) from e
                yield rec
        clean = True
    finally:
        if clean:
            pool.shutdown(wait=True)
        else:
            # interrupted or failed: drop queued shards and stop the running ones (their
            # results would be discarded anyway; finished shards are already on disk)
            for fut in pending:
                fut.cancel()
            stop_pool(pool, join_timeout=5)


def _spark_executor(master, executors):
    """Start ``kipcheck.campaign.spark.SparkShardExecutor`` (the only pyspark import);
    CampaignError if Spark cannot run here."""
    hint = "install pyspark and Java 17+ (pip install 'kipcheck[spark]') or run with " \
           "--engine processes"
    try:
        from kipcheck.campaign import spark as spark_mod
    except ImportError as e:
        raise CampaignError(f"the spark engine is not available ({e}); {hint}") from None
    unavailable = getattr(spark_mod, "SparkUnavailable", ImportError)
    try:
        return spark_mod, spark_mod.SparkShardExecutor(master=master, executors=executors)
    except (ImportError, unavailable) as e:
        raise CampaignError(f"the spark engine is not available: {e}") from None


def _spark(spark_mod, ex, spec, tasks, fn=None):
    """Records from the Spark executors.  ``map_shards`` raises ``ShardFailed`` (index, the
    exception's type and description) for a shard that raised, and ``ShardBatchFailed`` (the
    Python cause dug out of Spark's text) for a batch that failed every attempt for another
    reason; both become a ``ShardError``."""
    failed = getattr(spark_mod, "ShardBatchFailed", ())
    by_index = {t.index: t for t in tasks}
    try:
        yield from (ex.map_shards(spec, tasks) if fn is None else ex.map_shards(spec, tasks, fn))
    except failed as e:
        task = by_index.get(getattr(e, "index", None))
        raise ShardError(task, e, description=getattr(e, "description", None) or str(e)) \
            from e
    finally:
        close = getattr(ex, "close", None) or getattr(ex, "stop", None)
        if close is not None:
            close()


def map_tasks(fn, payload, tasks, *, engine: str = "processes", workers: int | None = None,
              master: str | None = None):
    """Yield ``fn(payload, task)`` for every task on one of the campaign executors (serial, a
    spawn process pool of ``workers``, Spark executors), in completion order: the executors
    of ``run_campaign`` for work that is not a campaign shard (``kipcheck mutate``).  ``fn`` is
    a module-level function returning a picklable dict; a task has ``index``, ``key`` and
    ``seed``.  A task that raises stops the map with a ``ShardError`` naming it; an engine
    that cannot run raises ``CampaignError``.  Closing the generator stops the workers."""
    if engine not in EXECUTORS:
        raise CampaignError(f"unknown engine {engine!r}; engines: {', '.join(EXECUTORS)}")
    if master is not None and engine != "spark":
        raise CampaignError("--master applies to --engine spark only")
    if workers is not None and workers < 1:
        raise CampaignError("the number of workers must be positive")
    tasks = list(tasks)
    if not tasks:
        return
    if engine == "serial":
        for t in tasks:
            try:
                rec = fn(payload, t)
            except (KeyboardInterrupt, CampaignError):
                raise
            except Exception as e:
                raise ShardError(t, e) from e
            yield rec
    elif engine == "processes":
        yield from _processes(payload, tasks, workers, fn=fn)
    else:
        spark_mod, ex = _spark_executor(master, workers)
        by_index = {t.index: t for t in tasks}
        for rec in _spark(spark_mod, ex, payload, tasks, fn=fn):
            crash = crash_of(rec)
            if crash is not None:
                raise ShardError(by_index.get(crash.get("index")), crash.get("type"),
                                 description=crash.get("description"))
            yield rec


# ---- the run --------------------------------------------------------------------------------

def _difference(a: ShardResult, b: ShardResult) -> str:
    """The first deterministic field on which two runs of one shard differ, in words."""
    if a.model_hash != b.model_hash:
        return (f"the model changed between the run and the re-run (model {a.model_hash}, "
                f"now {b.model_hash})")
    if a.stop_reason != b.stop_reason:
        return f"stopped by {a.stop_reason!r}, re-run by {b.stop_reason!r}"
    for name in ("swarms", "steps", "fingerprints", "witnesses", "actions", "failures"):
        if getattr(a, name) != getattr(b, name):
            return f"{name} differ"
    return "digests differ"


def determinism_sample(spec, indices) -> list:
    """The finished task indices the determinism check re-runs: ``spec.determinism_check``
    of them, drawn by a ``random.Random`` seeded from the campaign seed."""
    pool = sorted(indices)
    k = min(spec.determinism_check, len(pool))
    return sorted(random.Random(f"kipcheck-determinism:{spec.seed}").sample(pool, k))


def run_campaign(spec, *, engine: str = "spark", master: str | None = None,
                 executors: int | None = None, resume: bool = False, progress=None,
                 log=None) -> CampaignSummary:
    """Run ``spec`` (a ``CampaignSpec``) into ``spec.output``.

    ``engine``: "spark", "processes" or "serial".  ``master``: the Spark master URL (default:
    local mode).  ``executors``: Spark executors or pool processes.  ``resume``: continue a
    campaign in ``spec.output``.  ``progress``: called with a ``CampaignProgress`` after every
    shard (an exception it raises, KeyboardInterrupt included, stops the run as a Ctrl-C
    would).  ``log``: called with a line of text for the slower phases (coverage, the
    determinism check).  Raises ``CampaignError`` for a campaign that cannot run as asked."""
    if engine not in EXECUTORS:
        raise CampaignError(f"unknown engine {engine!r}; engines: {', '.join(EXECUTORS)}")
    if master is not None and engine != "spark":
        raise CampaignError("--master applies to --engine spark only")
    if executors is not None and executors < 1:
        raise CampaignError("--executors must be a positive number")
    loaded_model = _model_hash()                # the model this process has loaded
    store = ResultStore(spec.output)
    tasks = shard_tasks(spec)
    store.check(spec, resume=resume, tasks=len(tasks))  # before anything starts or is written
    created = store.prepare()                   # the directory exists and takes files
    finished = store.finished_indices()
    todo = [t for t in tasks if t.index not in finished]
    hint = resume_command(spec.source, spec.output)
    try:
        spark = _spark_executor(master, executors) if engine == "spark" and todo else None
    except BaseException:
        store.discard(created)                  # a failed start leaves no campaign behind
        raise
    try:
        store.begin(spec, engine=engine, master=master, executors=executors, resume=resume,
                    tasks=len(tasks))
    except BaseException:
        if spark is not None:
            spark[1].stop()
        raise
    skipped = len(tasks) - len(todo)
    by_index = {t.index: t for t in tasks}
    t0 = time.perf_counter()
    ran = steps = failures = unexpected = 0
    interrupted = False
    if engine == "serial":
        stream = _serial(spec, todo)
    elif engine == "processes":
        stream = _processes(spec, todo, executors)
    else:
        stream = _spark(*spark, spec, todo) if spark else iter(())
    try:
        if todo:
            for rec in stream:
                crash = crash_of(rec)          # an executor may send a crash record back
                if crash is not None:
                    raise ShardError(by_index.get(crash.get("index")), crash.get("type"),
                                     description=crash.get("description"))
                result = ShardResult.from_record(rec)
                task = by_index.get(result.index)
                if task is None or task.key != result.key or task.seed != result.seed:
                    raise CampaignError(f"the executor returned shard {result.index} "
                                        f"({result.key}) that is not a task of this campaign")
                try:
                    store.write(result)
                except OSError as e:
                    raise OutputError(f"cannot write {store.path_of(result.index)}: "
                                      f"{os_reason(e)}") from None
                ran += 1
                steps += result.steps
                failures += len(result.failures)
                unexpected += sum(not is_expected(result.variant, f.property)
                                  for f in result.failures)
                if progress is not None:
                    progress(CampaignProgress(skipped + ran, len(tasks), ran, steps,
                                              time.perf_counter() - t0, failures, result,
                                              unexpected))
    except KeyboardInterrupt:
        interrupted = True
    except (ShardError, OutputError) as e:
        _stopped(store, e, ran, len(tasks), hint)
        raise
    except BaseException:
        _end_quietly(store, "crashed", ran)
        raise
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()                 # stops the pool / Spark job at once
    seconds = time.perf_counter() - t0
    done_set = store.finished_indices()
    if interrupted:
        _end_quietly(store, "interrupted", ran)
        return CampaignSummary(spec, engine, str(store.dir), len(tasks), len(done_set), ran,
                               skipped, True, seconds, None, resume_hint=hint)
    try:
        return _finish(spec, engine, store, tasks, by_index, done_set, ran, skipped, seconds,
                       loaded_model, hint, log)
    except (ShardError, OutputError) as e:
        _stopped(store, e, ran, len(tasks), hint)
        raise


def _stopped(store, e, ran: int, total: int, hint: str) -> None:
    """Record a run stopped by ``e`` and tell ``e`` what is kept and how to resume."""
    _end_quietly(store, "crashed", ran)
    try:
        e.kept = len(store.finished_indices())
    except CampaignError:
        e.kept = 0
    e.total, e.resume_hint = total, hint


def _end_quietly(store, status: str, ran: int) -> None:
    """``store.end`` when the run is already failing: an unwritable campaign.json must not
    hide the error that stopped the run."""
    try:
        store.end(status, ran)
    except (OSError, CampaignError):
        pass


def _finish(spec, engine, store, tasks, by_index, done_set, ran, skipped, seconds,
            loaded_model, hint, log) -> CampaignSummary:
    """After the shards: the determinism check, the merge, the summary."""
    results = store.load_all()
    checked, mismatches = (), ()
    sample = determinism_sample(spec, done_set)
    if sample:
        if log:
            log(f"determinism check: re-running {len(sample)} shards in this process")
        recorded = {r.index: r for r in results}
        mism = []
        for i in sample:
            try:
                again = run_shard(spec, by_index[i])
            except (KeyboardInterrupt, CampaignError):
                raise
            except Exception as e:
                raise ShardError(by_index[i], e) from e
            if again.digest != recorded[i].digest:
                mism.append(DeterminismMismatch(i, recorded[i].key, recorded[i].seed,
                                                recorded[i].digest, again.digest,
                                                _difference(recorded[i], again)))
        checked = tuple(recorded[i].seed for i in sample)
        mismatches = tuple(mism)
    # The model must not have changed while the campaign ran: shards of two models do not
    # merge, and the reachable-set cache is keyed by the hash of the files on disk, so a
    # process that loaded the old model would measure against (or store) the wrong set.
    from properties.trace import model_hash
    hashes = tuple(sorted({r.model_hash for r in results} | {loaded_model, model_hash()}))
    merged = merge(results, spec=spec, coverage=spec.coverage if len(hashes) == 1 else "never",
                   progress=log)
    if len(hashes) > 1:
        for g in merged.groups:
            g.coverage_note = (f"{g.distinct:,} distinct states visited; coverage not "
                               f"measured: the model changed during the campaign")
    found: dict = {}
    for f in merged.failures:
        if f.variant != "correct":
            found.setdefault(f.variant, set()).add(f.property)
    caught = {f.variant for f in merged.expected}
    # the campaign's engines check state properties; a variant that breaks only a whole-graph
    # check (SETTLE, DEADLOCK) is the explorer's to catch, not a campaign's miss
    from model.config import VARIANTS
    from properties.registry import PROPERTY_IDS
    missing = tuple(v for v in spec.variants if v != "correct" and v not in caught
                    and set(VARIANTS[v].breaks) & set(PROPERTY_IDS))
    correct = tuple(f for f in merged.failures if f.variant == "correct")
    summary = CampaignSummary(spec, engine, str(store.dir), len(tasks), len(done_set), ran,
                              skipped, False, seconds, merged, checked, mismatches, found,
                              missing, correct, model_hashes=hashes,
                              resume_hint=hint if len(done_set) < len(tasks) else "",
                              unexpected_failures=tuple(merged.unexpected))
    store.end("finished" if len(done_set) == len(tasks) else "incomplete", ran,
              determinism={"checked": list(checked),
                           "mismatches": [m.to_dict() for m in mismatches]},
              ok=summary.ok)
    return summary
