"""Fail closed: the Z3 engine answers only for a design whose encoding agrees with the model.

The encoding (``properties/symbolic/actions.py``) is a second, hand-written statement of every
action.  A researcher who adds a ``Design`` flag and its branch in ``model/actions.py`` changes
the model and not the encoding; a proof over the encoding would then be a proof about another
design.  Before ``prove`` or ``bmc`` answers, ``check_encoding`` establishes, for the
configuration and the design asked about:

1. **statically**, from the source: every ``Design`` flag that is on is read by the same
   actions (and helpers they call, transitively) in the model and in the encoding, and by the
   same property clauses in the registry and in ``props.py``; every field of the model's state
   records is one the symbolic layout carries.  A flag that the model reads and the encoding
   does not is the case of a new variant: refused, naming the action and the flag.
2. **dynamically**, by the cross-check (``crosscheck.crosscheck``): guards, successors and the
   P1-P4 clauses agree on a seeded sample of reachable states and of arbitrary states that
   satisfy the strengthening invariants (the states k-induction starts from).  A mismatch is
   refused, naming the first action and state field that disagree.

A pass is cached on disk by (the source of the model and of the encoding, the configuration,
the design, the sample), so a second proof of the same design costs nothing.  A refusal is
never cached: it is recomputed, and it is cheap.
"""
from __future__ import annotations

import ast
import hashlib
import inspect
import json
import os
import sys
import tempfile
import textwrap
import time
import types
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path

from model.config import Design, ModelConfig

# the sample the pre-proof cross-check takes (see docs/proofs.md for the measured cost)
SAMPLE = {"limit": 400, "arbitrary": 200, "solver_samples": 8, "seed": 20261125}
_ALL = "*"          # a function uses the design in a way the scan cannot follow: every flag


class EncodingRefused(Exception):
    """The Z3 engine will not answer for this design: one line that says why."""


@dataclass(frozen=True)
class Gap:
    """One place where the model and the encoding read different ``Design`` flags."""
    action: str             # the model action (or "quiescence", or "P3 [clause]")
    flag: str
    reader: str             # "model" or "encoding": the side that reads the flag
    where: str              # file:line of the first read on that side

    def line(self) -> str:
        return refusal_line([self])


# --------------------------------------------------------------------------------------------
# static: which Design flags each function reads


def _flag_names() -> frozenset:
    return frozenset(f.name for f in fields(Design))


@lru_cache(maxsize=256)
def _source_tree(fn) -> tuple:
    """(the function's AST, its file, its first line), or None for a builtin or lambda
    without source."""
    try:
        lines, first = inspect.getsourcelines(fn)
        path = inspect.getsourcefile(fn) or "?"
    except (OSError, TypeError):
        return None
    tree = ast.parse(textwrap.dedent("".join(lines)))
    return tree, path, first


def _ours(obj) -> bool:
    mod = getattr(obj, "__module__", "") or ""
    return isinstance(obj, types.FunctionType) and (mod.startswith("model.")
                                                    or mod.startswith("properties."))


def _resolve(node, glb):
    """The function a call's ``func`` node names, through the module's globals."""
    if isinstance(node, ast.Name):
        return glb.get(node.id)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        base = glb.get(node.value.id)
        if isinstance(base, types.ModuleType):
            return getattr(base, node.attr, None)
    return None


def _design_params(fdef) -> set:
    """The parameters of a def that hold the design: annotated ``Design``, or named d/design."""
    out = set()
    args = fdef.args
    for a in args.posonlyargs + args.args + args.kwonlyargs:
        ann = a.annotation
        named = isinstance(ann, ast.Name) and ann.id == "Design" or \
            isinstance(ann, ast.Constant) and ann.value == "Design"
        if named or a.arg in ("d", "design"):
            out.add(a.arg)
    return out


def flag_reads(fn, _seen=None) -> dict:
    """flag -> "file:line" of its first read, in ``fn`` and in every model/properties
    function it calls, transitively.  A use of the design other than reading a flag or
    passing it on (``getattr(d, name)``, a method) reads every flag (key ``"*"``)."""
    _seen = set() if _seen is None else _seen
    if fn is None or fn in _seen or not _ours(fn):
        return {}
    _seen.add(fn)
    got = _source_tree(fn)
    if got is None:
        return {_ALL: f"{fn.__module__}.{fn.__qualname__}"}
    tree, path, first = got
    flags = _flag_names()
    rel = _short(path)
    out: dict = {}
    glb = fn.__globals__
    design_names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.Lambda)):
            design_names |= _design_params(node) if isinstance(node, ast.FunctionDef) else \
                {a.arg for a in node.args.args if a.arg in ("d", "design")}
    passed = set()          # the design passed on to a function of ours (scanned in turn)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            callee = _resolve(node.func, glb)
            if callee is not None and _ours(callee):
                for a in list(node.args) + [k.value for k in node.keywords]:
                    if isinstance(a, ast.Name):
                        passed.add(id(a))
                for flag, where in flag_reads(callee, _seen).items():
                    out.setdefault(flag, where)
    for node in ast.walk(tree):
        line = f"{rel}:{first + getattr(node, 'lineno', 1) - 1}"
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in design_names):
            out.setdefault(node.attr if node.attr in flags else _ALL, line)
        elif isinstance(node, ast.Name) and node.id in design_names and id(node) not in passed:
            parent_ok = False
            for p in ast.walk(tree):        # d.x: the Name is the value of an Attribute
                if isinstance(p, ast.Attribute) and p.value is node:
                    parent_ok = True
                    break
            if not parent_ok and not isinstance(node.ctx, ast.Store):
                out.setdefault(_ALL, line)
    return out


def _short(path: str) -> str:
    p = Path(path)
    for anchor in ("model", "properties"):
        if anchor in p.parts:
            i = len(p.parts) - 1 - p.parts[::-1].index(anchor)
            return "/".join(p.parts[i:])
    return p.name


def _pairs():
    """(what, the model's function, the encoding's function) for every action, quiescence
    and every clause of P1-P4."""
    from model import actions as model_actions
    from model import next as model_next
    from properties import registry
    from properties.symbolic import actions as sym_actions
    from properties.symbolic.props import CLAUSES, SUPPORTED
    for name, fn, _kind, _msgs in model_next.ACTIONS:
        yield name, fn, sym_actions.ENCODINGS.get(name)
    yield "quiescence", model_actions.time_pending, sym_actions.time_pending
    for pid in SUPPORTED:
        for clause in registry.BY_ID[pid].clauses:
            yield f"{pid} [{clause.name}]", clause.holds, CLAUSES.get(clause.name)


def static_gaps(design: Design | None = None) -> list:
    """The gaps between the model and the encoding for the flags that are on in ``design``
    (every flag when ``design`` is None), in the model's action order."""
    on = set(_flag_names()) if design is None else set(design.flags_on())
    out = []
    for what, mfn, zfn in _pairs():
        if zfn is None:
            # an action with no encoding at all: a configuration that can take it is refused
            # as a whole (``properties.symbolic.next.unencoded_actions``, checked first by
            # ``check_encoding``), and one that cannot never runs it, whatever its flags
            continue
        m, z = flag_reads(mfn), flag_reads(zfn)
        for reads, other, side in ((m, z, "model"), (z, m, "encoding")):
            for flag in sorted(reads):
                if flag == _ALL:
                    if on:
                        out.append(Gap(what, "(every flag: the design is used indirectly)",
                                       side, reads[flag]))
                    continue
                if flag in on and flag not in other and _ALL not in other:
                    out.append(Gap(what, flag, side, reads[flag]))
    return out


def refusal_line(gaps: list) -> str:
    """One line for the first gap, naming every action with the same gap."""
    g = gaps[0]
    same = [x.action for x in gaps if (x.flag, x.reader) == (g.flag, g.reader)]
    one = len(same) == 1
    names = ", ".join(same)
    if g.reader == "model":
        return (f"the model's {'' if one else 'actions '}{names} "
                f"{'reads' if one else 'read'} Design flag {g.flag} ({g.where}) and "
                f"{'its Z3 encoding does' if one else 'their Z3 encodings do'} not handle "
                f"that flag")
    return (f"the Z3 {'encoding' if one else 'encodings'} of {names} "
            f"{'reads' if one else 'read'} Design flag {g.flag} ({g.where}) and the "
            f"model's {'does' if one else 'do'} not")


def unknown_fields() -> list:
    """Fields of the model's state records that the symbolic layout does not carry.  Channel
    items, messages and log records are stored by position (each kind names its fields its own
    way): every kind must have exactly the layout's number of positions."""
    from model import state as ms
    from properties.symbolic import state as ss
    known = {
        ms.Reply: {f for f, _ in ss.REPLY_FIELDS},
        ms.Write: {f for f, _ in ss.WRITE_FIELDS},
        ms.Response: {f for f, _ in ss.RESPONSE_FIELDS} | {"endpoints"},
        ms.Event: {"req", "reply", "via_envelope", "privileged", "sender_cluster_action",
                   "acked"},
        ms.Client: {f for f, _ in ss.CLIENT_SCALARS} | {"responses"},
        ms.Channel: {"cached", "queue", "inflight"},
        ms.Node: {f for f, _ in ss.NODE_SCALARS} | {"channel", "events",
                                                    "not_controller_from", "config_writes"},
        ms.Zk: {"controller", "epoch", "epoch_version", "writes", "epoch_holders", "broker_ids"},
        ms.Quorum: {"leader", "epoch", "log", "uncommitted"},
        ms.State: {"now", "nodes", "clients", "network", "zk", "quorum"} | set(ss.BUDGETS),
    }
    out = []
    for slots, kinds in ((ss.ITEM_FIELDS, ms.ITEM_TYPES), (ss.MSG_FIELDS, ms.MSG_TYPES),
                         (ss.RECORD_FIELDS, ms.RECORD_TYPES)):
        for rec in kinds.values():
            out += [f"{rec.__name__}.{f}" for f in rec._fields[len(slots):]]
    for rec, names in known.items():
        have = rec._fields if hasattr(rec, "_fields") else tuple(
            f.name for f in fields(rec))
        out += [f"{rec.__name__}.{f}" for f in have if f not in names]
    return out


# --------------------------------------------------------------------------------------------
# dynamic: the cross-check, cached


def _cache_dir() -> Path:
    base = os.environ.get("KIPCHECK_CACHE_DIR")
    if base:
        return Path(base) / "encoding"
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "kipcheck" / "encoding"


@lru_cache(maxsize=1)
def _source_digest() -> str:
    """A digest of every loaded module of the model, the encoding and the registry: a change
    to any of them invalidates every cached pass."""
    import z3
    h = hashlib.sha256(z3.get_version_string().encode())
    for name in sorted(sys.modules):
        if not (name == "model" or name.startswith("model.") or name == "properties.registry"
                or name.startswith("properties.symbolic")):
            continue
        path = getattr(sys.modules[name], "__file__", None)
        if path and os.path.exists(path):
            h.update(name.encode())
            h.update(Path(path).read_bytes())
    return h.hexdigest()


def _code_digest(fn) -> bytes:
    code = getattr(fn, "__code__", None)
    if code is None:
        return repr(fn).encode()
    return code.co_code + repr(code.co_consts).encode() + repr(code.co_names).encode()


def cache_key(cfg: ModelConfig, design: Design, sample: dict) -> str:
    """The sources of the model and the encoding, and the functions the Next relations are
    made of now (a function replaced at run time changes the key too)."""
    from model import next as model_next
    # make sure every module the check reads is loaded before the digest is taken
    from properties.symbolic import arbitrary, crosscheck, invariants, props  # noqa: F401
    from properties.symbolic.actions import ENCODINGS
    h = hashlib.sha256(_source_digest().encode())
    for name, fn, _kind, _msgs in model_next.ACTIONS:
        h.update(name.encode() + _code_digest(fn) + _code_digest(ENCODINGS.get(name)))
    h.update(repr(cfg).encode())
    h.update(repr(design).encode())
    h.update(json.dumps(sample, sort_keys=True).encode())
    return h.hexdigest()


def _cached(key: str) -> dict | None:
    try:
        doc = json.loads((_cache_dir() / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("ok") is True else None


def _store(key: str, doc: dict) -> None:
    """Best effort: an unwritable cache only costs the next run the check again."""
    d = _cache_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, d / f"{key}.json")
    except OSError:
        pass


AGREES, NOT_ENCODED, DISAGREES = "agrees", "not encoded", "disagrees"


@dataclass
class Verdict:
    ok: bool
    cached: bool
    seconds: float
    states: int = 0             # reachable states compared
    arbitrary: int = 0          # arbitrary (invariant-satisfying) states compared
    steps: int = 0
    reason: str = ""            # why not, one line
    kind: str = AGREES          # AGREES | NOT_ENCODED (static: a flag or field the encoding
                                # lacks) | DISAGREES (the cross-check found a difference)


def check_encoding(cfg: ModelConfig, design: Design, variant: str = "correct", *,
                   sample: dict | None = None, use_cache: bool = True) -> Verdict:
    """Can the Z3 engine answer for (cfg, design)?  Static checks first (instant), then the
    cross-check on the sample (seconds), whose pass is cached."""
    t0 = time.perf_counter()
    from properties.symbolic.next import unencoded_actions, unencoded_reason
    missing = unencoded_actions(cfg)
    if missing:
        return Verdict(False, False, time.perf_counter() - t0,
                       reason=unencoded_reason(cfg, missing), kind=NOT_ENCODED)
    gaps = static_gaps(design)
    if gaps:
        return Verdict(False, False, time.perf_counter() - t0, reason=refusal_line(gaps),
                       kind=NOT_ENCODED)
    extra = unknown_fields()
    if extra:
        return Verdict(False, False, time.perf_counter() - t0,
                       reason=f"the model's state has field {extra[0]}, which the symbolic "
                              f"layout (properties/symbolic/state.py) does not carry",
                       kind=NOT_ENCODED)
    sample = dict(SAMPLE if sample is None else sample)
    key = cache_key(cfg, design, sample)
    if use_cache:
        hit = _cached(key)
        if hit is not None:
            return Verdict(True, True, time.perf_counter() - t0, hit.get("states", 0),
                           hit.get("arbitrary", 0), hit.get("steps", 0))
    from properties.symbolic.crosscheck import crosscheck
    res = crosscheck(cfg, design, variant, limit=sample["limit"], seed=sample["seed"],
                     arbitrary=sample["arbitrary"], solver_samples=sample["solver_samples"],
                     max_mismatches=1)
    seconds = time.perf_counter() - t0
    if not res.ok:
        first = res.first
        if first:
            action, field_, text = first
            where = f"{action}" + (f", field {field_}" if field_ else "")
        else:
            where, text = "?", res.mismatches[0]
        return Verdict(False, False, seconds, res.states, res.arbitrary, res.steps,
                       reason=f"the Z3 encoding disagrees with the model at {where} "
                              f"(sample seed {sample['seed']}): {text}", kind=DISAGREES)
    if use_cache:
        _store(key, {"ok": True, "config": cfg.name, "variant": variant,
                     "design": list(design.flags_on()), "states": res.states,
                     "arbitrary": res.arbitrary, "steps": res.steps,
                     "seconds": round(seconds, 3)})
    return Verdict(True, False, seconds, res.states, res.arbitrary, res.steps)


def require_encoding(cfg: ModelConfig, design: Design, variant: str = "correct") -> Verdict:
    """``check_encoding`` or raise ``EncodingRefused`` with its one line."""
    v = check_encoding(cfg, design, variant)
    if not v.ok:
        raise EncodingRefused(f"no answer for {cfg.name} [{variant}]: {v.reason}")
    return v


__all__ = ["EncodingRefused", "Gap", "Verdict", "SAMPLE", "flag_reads", "static_gaps",
           "unknown_fields", "check_encoding", "require_encoding", "cache_key"]
