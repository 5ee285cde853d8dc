"""One shard of a campaign: ``run_shard(spec, task) -> ShardResult``, a pure function.

A shard runs one engine on one (configuration, design variant) with the shard's seed and the
spec's per-shard work budget, and returns plain data: no Spark, no files, nothing shared with
other shards.  Its inputs (a frozen ``CampaignSpec`` and a ``ShardTask``) and its output
(``ShardResult.to_record()``, a dict of ints, floats, strings and lists) pickle, so the same
function runs in-process, in a process pool and in a Spark executor (``spark.py``).

Engines
    ``stateful``: ``properties.stateful.fuzz_spec`` with the shard seed and a *work* budget
    (``rounds`` x ``examples_per_round`` x ``steps_per_example``); ``database=None`` and the
    local-constant mining switched off are the engine's own settings (Spark pitfall P1, P2), so
    the run is a function of the seed.  It stops at the first violation; the counterexample is
    Hypothesis's shrunk example, minimised further by delta debugging.
    ``random-walk``: ``rounds`` swarm rounds (each round's ``Swarm`` drawn from
    ``round_seed(seed, r)``, like the stateful engine's) of uniform random steps over
    ``model.next.successors`` from a ``random.Random(seed)``; a walk restarts from the initial
    state when no allowed step is enabled, after ``walk_depth`` steps, and after a violation.
    The first violation of each property is minimised and kept; the walk goes on, so one shard
    can report several properties.
    ``conformance``: ``properties.conformance.run_conformance(config, seed=, steps=)``: model
    and implementation driven with the same steps; a result whose ``divergence`` is not None
    is a failure (property ``conformance``; its record is a kipcheck-conformance-divergence
    document with the model steps, replayed by ``conformance.check_steps``).  It records no
    state fingerprints (coverage is the stateful and random-walk engines' business).
    ``nondeterministic-test``: a random walk whose seed mixes in the process id and the clock.
    It exists to prove that the determinism check catches a shard that does not reproduce,
    and is enabled only by ``KIPCHECK_CAMPAIGN_TEST_ENGINES=1`` (spec.TEST_ENGINE_ENV).

The digest
    ``ShardResult.digest`` is SHA-256 over the deterministic content only: task identity,
    seed, swarms, step and state counts, the sorted fingerprints, witnesses, failures (their
    traces included) and the model hash -- not timings, the timeline or the worker's identity.
    Two runs of one task agree on the digest unless something is nondeterministic -- or a
    wall-clock cap cut one run short: the ``max_seconds`` safety cap (``stop_reason`` says
    so) or ``minimise_seconds`` on a very long counterexample (keep it generous).

Failures of the shard itself
    An exception inside ``run_shard`` is a bug or a broken environment, never a property
    violation (those are data).  ``crash_record(task, exc)`` turns it into a record of plain
    strings (its type, message and where it was raised), so an executor can send it back
    instead of raising: Spark would otherwise retry a deterministic failure and then report
    only its own first line, not the cause.  ``describe_exception`` is the one-line text the
    driver prints for it, whichever executor ran the shard.

Fingerprints are ``hash(state) & (2**64 - 1)``: the model's states hold only ints, bools,
tuples and frozensets, so their hash is the same in every process (model/state.py); the
explorer's reachable set uses the same fingerprints (properties/coverage.py).
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import socket
import sys
import time
from array import array
from dataclasses import dataclass, field
from functools import lru_cache

from kipcheck.campaign.spec import TEST_ENGINE, TEST_ENGINE_ENV, conformance_runner

__all__ = ["Failure", "ShardResult", "run_shard", "run_shard_record", "run_batch",
           "crash_record", "crash_of", "describe_exception", "one_line", "CRASH_KEY"]



@dataclass(frozen=True)
class Failure:
    """A property violation found by a shard, with everything needed to reproduce it."""
    property: str               # property ID (P1..P9, L1) or "conformance"
    clause: str | None
    trace: str                  # the minimised counterexample: a kipcheck-trace JSON document
    trace_length: int           # steps in the minimised trace
    shrunk_length: int | None = None    # steps before minimising (Hypothesis's shrunk example)
    reproduce_blob: str | None = None   # Hypothesis @reproduce_failure blob, when available
    round: int | None = None    # the round that found it

    def to_record(self) -> dict:
        return {"property": self.property, "clause": self.clause, "trace": self.trace,
                "trace_length": self.trace_length, "shrunk_length": self.shrunk_length,
                "reproduce_blob": self.reproduce_blob, "round": self.round}

    @classmethod
    def from_record(cls, d: dict) -> Failure:
        return cls(d["property"], d.get("clause"), d["trace"], int(d["trace_length"]),
                   d.get("shrunk_length"), d.get("reproduce_blob"), d.get("round"))

    def steps_json(self) -> list:
        """The trace's steps as JSON (what failures are de-duplicated by)."""
        try:
            return json.loads(self.trace).get("steps", [])
        except (ValueError, AttributeError):
            return []


@dataclass(frozen=True)
class ShardResult:
    index: int
    key: str
    config: str
    variant: str
    engine: str
    shard: int
    seed: int
    swarms: tuple               # the swarm each round drew, as Swarm.describe() text
    rounds: int                 # rounds run
    steps: int                  # model steps taken (the stateful engine's shrinking included)
    distinct: int               # distinct state fingerprints visited
    fingerprints: tuple         # the visited fingerprints, sorted
    witnesses: tuple            # witnesses reached, in the configuration's order
    actions: tuple              # ((action name, steps taken), ...) sorted by name
    failures: tuple             # tuple[Failure]
    stop_reason: str            # "budget", "violation", "time budget"
    model_hash: str
    seconds: float
    timeline: tuple = ()        # ((elapsed s, steps, distinct), ...) for coverage-over-time
    pid: int = 0
    hostname: str = ""
    digest: str = field(default="")
    started_at: float = 0.0     # Unix time the shard started and ended, by its worker's clock
    ended_at: float = 0.0       # (the report's campaign clock); not part of the digest
    executor: str = ""          # what ran it: "driver", "process/HOST/PID", "spark/HOST/PID"

    def to_record(self) -> dict:
        return {"index": self.index, "key": self.key, "config": self.config,
                "variant": self.variant, "engine": self.engine, "shard": self.shard,
                "seed": self.seed, "swarms": list(self.swarms), "rounds": self.rounds,
                "steps": self.steps, "distinct": self.distinct,
                "fingerprints": list(self.fingerprints), "witnesses": list(self.witnesses),
                "actions": [{"action": a, "count": int(n)} for a, n in self.actions],
                "failures": [f.to_record() for f in self.failures],
                "stop_reason": self.stop_reason, "model_hash": self.model_hash,
                "seconds": float(self.seconds),
                "timeline": [{"elapsed": float(e), "steps": int(s), "distinct": int(d)}
                             for e, s, d in self.timeline],
                "pid": self.pid, "hostname": self.hostname, "digest": self.digest,
                "started_at": float(self.started_at), "ended_at": float(self.ended_at),
                "executor": self.executor}

    @classmethod
    def from_record(cls, d: dict) -> ShardResult:
        return cls(index=int(d["index"]), key=d["key"], config=d["config"],
                   variant=d["variant"], engine=d["engine"], shard=int(d["shard"]),
                   seed=int(d["seed"]), swarms=tuple(d["swarms"] or ()),
                   rounds=int(d["rounds"]), steps=int(d["steps"]), distinct=int(d["distinct"]),
                   fingerprints=tuple(d["fingerprints"] or ()),
                   witnesses=tuple(d["witnesses"] or ()),
                   actions=tuple((a["action"], int(a["count"])) for a in d["actions"] or ()),
                   failures=tuple(Failure.from_record(f) for f in d["failures"] or ()),
                   stop_reason=d["stop_reason"], model_hash=d["model_hash"],
                   seconds=float(d["seconds"]),
                   timeline=tuple((t["elapsed"], t["steps"], t["distinct"])
                                  for t in d.get("timeline") or ()),
                   pid=int(d.get("pid") or 0), hostname=d.get("hostname") or "",
                   digest=d["digest"], started_at=float(d.get("started_at") or 0.0),
                   ended_at=float(d.get("ended_at") or 0.0),
                   executor=d.get("executor") or "")

    def compute_digest(self) -> str:
        content = {
            "index": self.index, "key": self.key, "config": self.config,
            "variant": self.variant, "engine": self.engine, "shard": self.shard,
            "seed": self.seed, "swarms": list(self.swarms), "rounds": self.rounds,
            "steps": self.steps, "distinct": self.distinct, "witnesses": list(self.witnesses),
            "actions": [list(p) for p in self.actions],
            "failures": [{k: v for k, v in f.to_record().items() if k != "reproduce_blob"}
                         for f in self.failures],
            "stop_reason": self.stop_reason, "model_hash": self.model_hash,
        }
        h = hashlib.sha256(json.dumps(content, sort_keys=True).encode())
        fps = array("Q", sorted(self.fingerprints))
        if sys.byteorder != "little":          # the same bytes on every machine
            fps.byteswap()
        h.update(fps.tobytes())
        return h.hexdigest()


@lru_cache(maxsize=1)
def _model_hash() -> str:
    from properties.trace import model_hash
    return model_hash()


def run_shard(spec, task) -> ShardResult:
    """Run ``task`` (a ``ShardTask`` of ``spec``).  Pure: the deterministic content of the
    result is a function of ``spec`` and ``task``."""
    from properties.kafka_spec import KafkaSpec
    started_at = time.time()
    _maybe_die_for_test(task)
    _maybe_raise_for_test(task)
    kspec = KafkaSpec.named(task.config, task.variant)
    t0 = time.perf_counter()
    if task.engine == "stateful":
        out = _stateful(kspec, task.seed, spec.budget)
    elif task.engine == "random-walk":
        out = _random_walk(kspec, task.seed, spec.budget, t0, "random-walk")
    elif task.engine == "conformance":
        out = _conformance(task, spec.budget)
    elif task.engine == TEST_ENGINE:
        if os.environ.get(TEST_ENGINE_ENV) != "1":
            raise ValueError(f"engine {TEST_ENGINE!r} is for tests only "
                             f"({TEST_ENGINE_ENV}=1)")
        noisy = task.seed ^ os.getpid() ^ time.perf_counter_ns()
        out = _random_walk(kspec, noisy, spec.budget, t0, TEST_ENGINE)
    else:
        raise ValueError(f"unknown engine {task.engine!r}")
    fps = tuple(sorted(out["seen"]))
    wanted = kspec.witness_ids()
    result = ShardResult(
        index=task.index, key=task.key, config=task.config, variant=task.variant,
        engine=task.engine, shard=task.shard, seed=task.seed, swarms=tuple(out["swarms"]),
        rounds=out["rounds"], steps=out["steps"], distinct=len(fps), fingerprints=fps,
        witnesses=tuple(w for w in wanted if w in out["witnesses"]),
        actions=tuple(sorted((a, n) for a, n in out["actions"].items() if n)),
        failures=tuple(out["failures"]), stop_reason=out["stop_reason"],
        model_hash=_model_hash(), seconds=time.perf_counter() - t0,
        timeline=tuple(out["timeline"]), pid=os.getpid(), hostname=socket.gethostname(),
        started_at=started_at, ended_at=time.time())
    return _with_digest(result)


def _with_digest(r: ShardResult) -> ShardResult:
    object.__setattr__(r, "digest", r.compute_digest())
    return r


KILL_ENV = "KIPCHECK_CAMPAIGN_TEST_KILL"


def _maybe_die_for_test(task) -> None:
    """Tests only: with ``KIPCHECK_CAMPAIGN_TEST_KILL=DIR:INDEX`` the first attempt of shard
    INDEX kills its worker process (``os._exit``), as an executor dying mid-task would; the
    marker file DIR/killed-INDEX makes the retry run normally."""
    hook = os.environ.get(KILL_ENV)
    if not hook:
        return
    directory, _, index = hook.rpartition(":")
    if str(task.index) != index:
        return
    marker = os.path.join(directory, f"killed-{index}")
    if not os.path.exists(marker):
        with open(marker, "w") as f:
            f.write(str(os.getpid()))
        os._exit(17)


RAISE_ENV = "KIPCHECK_CAMPAIGN_TEST_RAISE"


def _maybe_raise_for_test(task) -> None:
    """Tests only: with ``KIPCHECK_CAMPAIGN_TEST_RAISE=FILE:INDEX`` shard INDEX raises the
    FileNotFoundError a missing data file would, for as long as FILE exists (a test deletes
    FILE to let a ``--resume`` finish; an environment variable cannot be taken back from
    Spark workers that inherited it)."""
    hook = os.environ.get(RAISE_ENV)
    if not hook:
        return
    armed, _, index = hook.rpartition(":")
    if str(task.index) == index and os.path.exists(armed):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT),
                                os.path.join(os.path.dirname(armed), "missing-schema.json"))


# ---- a shard that raised, as data -----------------------------------------------------------

CRASH_KEY = "kipcheck_shard_crash"
_FRAME_RE = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)')
_PROJECT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def one_line(text: str, limit: int = 400) -> str:
    """``text`` on one line (whitespace runs folded), cut at ``limit`` characters: error
    messages end up on one stderr line whatever the exception put in them."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _where(exc: BaseException) -> str:
    """Where ``exc`` was raised ("path:line in function"), project paths made relative; for
    an exception re-raised by a process pool, from the worker's traceback text."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_frame.f_code.co_name))
        tb = tb.tb_next
    remote = getattr(exc.__cause__, "tb", None)        # concurrent.futures' _RemoteTraceback
    if isinstance(remote, str):
        frames = [(m.group(1), int(m.group(2)), m.group(3))
                  for m in map(_FRAME_RE.match, remote.splitlines()) if m] or frames
    if not frames:
        return ""
    path, line, func = frames[-1]
    if path.startswith(_PROJECT + os.sep):
        path = os.path.relpath(path, _PROJECT)
    return f"{path}:{line} in {func}"


def describe_exception(exc: BaseException) -> str:
    """One line: "Type: message (raised at path:line in function)"."""
    name = type(exc).__name__
    msg = one_line(str(exc))
    where = _where(exc)
    return (f"{name}: {msg}" if msg else name) + (f" (raised at {where})" if where else "")


def crash_record(task, exc: BaseException) -> dict:
    """The record an executor sends back for a shard that raised ``exc`` (plain strings: it
    pickles whatever the exception held)."""
    return {CRASH_KEY: {"index": getattr(task, "index", None), "type": type(exc).__name__,
                        "description": describe_exception(exc)}}


def crash_of(record) -> dict | None:
    """The crash a record reports (``crash_record``), or None for a shard's result."""
    return record.get(CRASH_KEY) if isinstance(record, dict) else None


def run_shard_record(spec, task) -> dict:
    """``run_shard(spec, task).to_record()``: what a worker sends back."""
    return run_shard(spec, task).to_record()


def run_batch(spec, tasks) -> list:
    """Several shards in one call (a Spark partition: tasks should run >= 1 s each, P7)."""
    return [run_shard_record(spec, t) for t in tasks]


# ---- engines --------------------------------------------------------------------------------

def _stateful(kspec, seed, budget) -> dict:
    from properties.stateful import Profile, Swarm, fuzz_spec, round_seed
    prof = Profile("campaign", rounds=budget.rounds,
                   examples_per_round=budget.examples_per_round,
                   steps_per_example=budget.steps_per_example,
                   time_budget=float(budget.max_seconds))
    r = fuzz_spec(kspec, seed=seed, profile=prof, minimise_seconds=budget.minimise_seconds)
    if r.stop_reason == "interrupted":
        # a Ctrl-C inside the worker: this shard is not finished and must not be recorded
        raise KeyboardInterrupt
    failures = []
    if r.found:
        failures.append(Failure(r.property, r.clause, json.dumps(r.trace.to_json()),
                                len(r.trace.steps), r.shrunk_length, None,
                                r.failed_round.index if r.failed_round else None))
    swarms = [Swarm.draw(kspec, round_seed(seed, i)).describe() for i in range(r.rounds)]
    return {"seen": r.visited or set(), "swarms": swarms, "rounds": r.rounds,
            "steps": r.steps_run, "witnesses": set(r.witnesses_reached),
            "actions": dict(r.action_counts),
            "failures": failures, "timeline": r.timeline,
            "stop_reason": {"rounds": "budget"}.get(r.stop_reason, r.stop_reason)}


def _random_walk(kspec, seed, budget, t0, engine) -> dict:
    from properties.walk import random_walk
    r = random_walk(kspec, seed, rounds=budget.rounds, walk_steps=budget.walk_steps,
                    walk_depth=budget.walk_depth, max_seconds=budget.max_seconds,
                    minimise_seconds=budget.minimise_seconds, engine=engine, t0=t0)
    failures = [Failure(f.property, f.clause, json.dumps(f.trace.to_json()),
                        len(f.trace.steps), f.found_length, None, f.round)
                for f in r.failures]
    return {"seen": r.seen, "swarms": r.swarms, "rounds": r.rounds, "steps": r.steps,
            "witnesses": r.witnesses, "actions": r.actions, "failures": failures,
            "timeline": r.timeline, "stop_reason": r.stop_reason}


CONFORMANCE_FORMAT = "kipcheck-conformance-divergence"


def _conformance(task, budget) -> dict:
    """One conformance shard: ``properties.conformance.run_conformance`` on the configuration
    with the shard seed, ``rounds * examples_per_round`` examples of ``conformance_steps``
    model steps (each applied to the model and to the implementation).  Contract used: the
    result has ``divergence`` (None when the two sides agreed on every step; else an object
    with ``steps``, the model steps up to the diverging one, and optionally ``to_json()`` and
    ``describe()``), ``steps`` (model steps run) and optionally ``actions`` (per-action
    counts).  The engine draws with Hypothesis, so the run is wrapped like the stateful
    engine's: no local constants mined (Spark pitfall P1)."""
    import inspect
    from properties.stateful import _without_local_constants
    run = conformance_runner()
    if run is None:
        raise ValueError("the conformance engine is not available (properties.conformance)")
    t0 = time.perf_counter()
    kwargs = {"seed": task.seed, "steps": budget.conformance_steps}
    try:
        if "examples" in inspect.signature(run).parameters:
            kwargs["examples"] = budget.rounds * budget.examples_per_round
    except (TypeError, ValueError):
        pass
    with _without_local_constants():
        res = run(task.config, **kwargs)
    div = getattr(res, "divergence", None)
    failures = []
    if div is not None:
        steps = [st.to_json() if hasattr(st, "to_json") else st
                 for st in getattr(div, "steps", ()) or ()]
        text = div.describe() if hasattr(div, "describe") else str(div)
        doc = {"format": CONFORMANCE_FORMAT, "version": 1, "config": task.config,
               "seed": task.seed, "model_hash": _model_hash(), "steps": steps,
               "divergence": div.to_json() if hasattr(div, "to_json") else text,
               "description": text}
        failures.append(Failure("conformance", text.splitlines()[0][:200] if text else None,
                                json.dumps(doc), len(steps), None, None, 0))
    n = getattr(res, "steps", 0)
    n = n if isinstance(n, int) else len(n)
    return {"seen": set(), "swarms": [], "rounds": 1, "steps": n, "witnesses": set(),
            "actions": dict(getattr(res, "actions", None) or {}), "failures": failures,
            "timeline": [(round(time.perf_counter() - t0, 3), n, 0)],
            "stop_reason": "violation" if failures else "budget"}
