"""How far partial-order reduction can shrink the Kafka model (issue 18, item 2).

    python -m bench.por [--config NAME[,NAME...]] [--variant NAME]
                        [--relax none,netlen,now,invisible,quorum] [--bounds JSON]
                        [--out bench/results/por.json]

For each configuration (default: kraft-forward-leader-change and zk-forward-zombie):

1. measures, over its whole reachable space, what every step reads and writes and what every
   ALWAYS clause and state witness reads (``properties/footprint.py``), per action, with node
   indices generalised to the step's own node (SELF: its node argument or its message's
   destination), its message's source (SRC) or any node (ANY);
2. builds from those footprints the static dependence of transition classes (an action with its
   node, client, or message kind, source and destination) and their necessary enabling sets
   (the classes that write what a class reads);
3. explores the space twice, breadth first: in full, and with stubborn sets: from each enabled
   class, the closure under dependence (enabled classes) and necessary enabling sets (disabled
   ones); usable when it is a proper subset of the enabled steps, holds no step that writes what
   an ALWAYS clause or a state witness reads (nor an action a step witness names), and holds a
   step that is never a fault (so quiescent and deadlocked states are reached exactly); the
   smallest usable one is taken, and only when every successor it gives is new (the BFS cycle
   proviso), else the state is expanded in full.

Footprints measured on the very space explored are the smallest any declaration could be, so
the reduction measured is an upper bound for a sound static one.  ``--relax`` drops, unsoundly,
to see what stands in the way: ``netlen`` the reads of the network's size (``max_in_flight``)
and the visibility of network locations; ``now`` also the reads of the clock; ``invisible``
also every step's visibility (no property or witness is preserved: the bound of any reduction
of this dependence relation); ``quorum`` also every read and write of the metadata store
(ZooKeeper's znodes, and the KRaft quorum: the metadata log, its leader, the uncommitted
records).  Per
configuration and level the JSON has both state counts, the ratio, how many states had a usable
stubborn set, and the commonest reasons the closures failed (the enabled class that made a
seed's closure unusable).  ``--bounds '{"max_time": 2, ...}'`` replaces those bounds of every
configuration (its name gets ``-cut``): the shapes of kraft-small and zk-small, whose whole spaces
are too large to record footprints on, at bounds that fit.  Exit 1 when a verdict differs with
and without reduction; 2 on bad options.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime as _dt
import json
import sys
import time

from bench.explore import git_commit, machine_info, write_json
from model import next as N
from model.config import ModelConfig
from model.next import CLIENT_ARG, MSG_ARG, NODE_ARG, NONE_ARG
from properties import footprint as FP
from properties import registry as R
from properties.kafka_spec import KafkaSpec

DEFAULT_CONFIGS = ("kraft-forward-leader-change", "zk-forward-zombie")
RELAX_LEVELS = ("none", "netlen", "now", "invisible", "quorum")
N_KINDS = 10


def _generalise(loc, own=None, src=None, client=None):
    if loc[0] == "node":
        return ("node", "SELF" if loc[1] == own else "SRC" if loc[1] == src else "ANY", loc[2])
    if loc[0] == "client":
        return ("client", "SELF" if loc[1] == client else "ANY", loc[2])
    if loc[0] == "net" and loc[1] != "*":
        return ("net", loc[1], "SELF" if loc[2] == own else "SRC" if loc[2] == src else "ANY")
    return loc


def _instances(s, kind, kinds, args):
    """(argument, own node, message source, client) of every instance of an action at ``s``."""
    if kind == MSG_ARG:
        return [(m, m.dst, m.src, m.client if hasattr(m, "client") else None)
                for m in sorted(s.network) if m.kind in kinds]
    if kind == NONE_ARG:
        return [(None, None, None, None)]
    if kind == NODE_ARG:
        return [(a, a, None, None) for a in args]
    return [(a, None, None, a) for a in args]


def measure_footprints(spec):
    """(reads per action, writes per action {location: "w" | "add"}, reads per clause or
    witness, states) over the whole reachable space of ``spec``; raises AssertionError if a
    step behaves differently on the recording copy of a state."""
    cfg, d = spec.cfg, spec.design
    plan = N._plan(cfg)
    reads = collections.defaultdict(set)
    writes = collections.defaultdict(dict)
    clause_reads = collections.defaultdict(set)
    checked = [(c.name, c.holds) for _, c in R._ALWAYS]
    state_witnesses = [w for w in cfg.witnesses if not R.WITNESSES[w].steps]
    s0 = N.initial_state(cfg)
    seen, frontier = {s0}, [s0]
    while frontier:
        nxt = []
        for s in frontier:
            for name, holds in checked:
                clause_reads[name] |= {_generalise(x) for x in FP.reads_of(holds, s, cfg, d)[1]}
            for w in state_witnesses:
                seen_fn = R.WITNESSES[w].seen
                _, r = FP.reads_of(lambda x, f=seen_fn: f(None, None, x, cfg), s)
                clause_reads["witness:" + w] |= {_generalise(x) for x in r}
            for action, fn, kind, kinds, args in plan:
                for arg, own, src, client in _instances(s, kind, kinds, args):
                    extra = () if arg is None else (arg,)
                    t = fn(s, cfg, d, *extra)
                    t2, r = FP.reads_of(fn, s, cfg, d, *extra)
                    if kind == MSG_ARG:
                        r.add(("net", arg.kind, arg.dst))
                    assert (t is None) == (t2 is None) and (
                        t is None or FP.writes(s, t) == FP.writes(s, t2)), (action, arg)
                    reads[action] |= {_generalise(x, own, src, client) for x in r}
                    if t is None:
                        continue
                    for loc, mode in FP.writes(s, t).items():
                        g = _generalise(loc, own, src, client)
                        if writes[action].get(g) != "w":
                            writes[action][g] = mode
                    if t not in seen:
                        seen.add(t)
                        nxt.append(t)
        frontier = nxt
    return reads, writes, clause_reads, len(seen)


class Reducer:
    """Stubborn sets from measured footprints (module docstring)."""

    def __init__(self, spec, reads, writes, clause_reads, relax: str):
        cfg = self.cfg = spec.cfg
        self.n_nodes, self.n_clients = len(cfg.nodes), len(cfg.clients)
        self.kind_of = {a[0]: a[2] for a in N._plan(cfg)}
        classes = []
        for action, _, kind, kinds, args in N._plan(cfg):
            if kind == MSG_ARG:
                classes += [(action, k, src, dst) for k in kinds for src in range(self.n_nodes)
                            for dst in range(self.n_nodes)]
            elif kind == NONE_ARG:
                classes.append((action,))
            elif kind == NODE_ARG:
                classes += [(action, a) for a in args]
            else:
                classes += [(action, "client", a) for a in args]
        self.classes = classes
        drop = set()
        if relax != "none":
            drop.add(FP.NETLEN)
        if relax in ("now", "invisible", "quorum"):
            drop.add(("s", "now"))
        keep = ((lambda locs: frozenset(x for x in locs if x[0] not in ("quorum", "zk")))
                if relax == "quorum" else (lambda locs: locs))
        fps = {}
        for c in classes:
            own, src, client = self._roles(c)
            r = self._expand(reads[c[0]], own, src, client)
            if self.kind_of[c[0]] == MSG_ARG:
                r |= {("net", c[1], c[3])}
            w = self._expand([x for x, m in writes[c[0]].items() if m == "w"], own, src, client)
            add = self._expand([x for x, m in writes[c[0]].items() if m == "add"], own, src,
                               client) - w
            fps[c] = (keep(r - drop), keep(w - drop), keep(add - drop))
        self.fps = fps
        self.dep = {x: {y for y in classes if self._dependent(x, y)} for x in classes}
        self.nes = {x: {y for y in classes if (fps[y][1] | fps[y][2]) & fps[x][0]}
                    for x in classes}
        visible = set()
        for locs in clause_reads.values():
            visible |= self._expand(locs, None, None, None)
        if relax != "none":
            visible = {x for x in visible if x[0] != "net"}
        visible -= drop
        named = {a for w in cfg.witnesses for a in R.WITNESSES[w].steps}
        self.invisible = {c for c in classes
                          if c[0] not in named and not ((fps[c][1] | fps[c][2]) & visible)}
        if relax in ("invisible", "quorum"):
            self.invisible = set(classes)

    def _roles(self, c):
        kind = self.kind_of[c[0]]
        if kind == MSG_ARG:
            return c[3], c[2], None
        if kind == NODE_ARG:
            return c[1], None, None
        if kind == CLIENT_ARG:
            return None, None, c[2]
        return None, None, None

    def _expand(self, templates, own, src, client) -> frozenset:
        out = set()
        nodes = range(self.n_nodes)
        for x in templates:
            if x[0] == "node":
                who = {"SELF": own, "SRC": src}.get(x[1])
                out |= {("node", i, x[2]) for i in ([who] if who is not None else nodes)}
            elif x[0] == "client":
                who = client if x[1] == "SELF" else None
                out |= {("client", i, x[2])
                        for i in ([who] if who is not None else range(self.n_clients))}
            elif x == FP.NET_ALL:
                out |= {("net", k, i) for k in range(N_KINDS) for i in nodes}
            elif x[0] == "net":
                who = {"SELF": own, "SRC": src}.get(x[2])
                out |= {("net", x[1], i) for i in ([who] if who is not None else nodes)}
            else:
                out.add(x)
        return frozenset(out)

    def _dependent(self, x, y) -> bool:
        rx, wx, ax = self.fps[x]
        ry, wy, ay = self.fps[y]
        return x == y or bool(wx & (ry | wy | ay) or wy & (rx | ax) or ax & ry or ay & rx)

    def class_of(self, st):
        kind = self.kind_of[st.action]
        if kind == MSG_ARG:
            m = st.args[0]
            return (st.action, m[0], m[1], m[2])
        if kind == NODE_ARG:
            return (st.action, st.args[0])
        if kind == CLIENT_ARG:
            return (st.action, "client", st.args[0])
        return (st.action,)

    def stubborn(self, succ, why: collections.Counter):
        """The smallest usable stubborn subset of ``succ`` (module docstring), or None."""
        enabled = collections.defaultdict(list)
        for pair in succ:
            enabled[self.class_of(pair[0])].append(pair)
        best = None
        for seed in sorted(enabled, key=repr):
            if seed not in self.invisible:
                why[("visible seed", seed[0])] += 1
                continue
            closure, work, blocker = {seed}, [seed], None
            while work and blocker is None:
                x = work.pop()
                for y in (self.dep[x] if x in enabled else self.nes[x]):
                    if y in closure:
                        continue
                    if y in enabled and y not in self.invisible:
                        blocker = y
                        break
                    closure.add(y)
                    work.append(y)
            if blocker is not None:
                why[("closure reaches a visible step", seed[0], blocker[0])] += 1
                continue
            ample = [p for c in sorted(closure, key=repr) if c in enabled for p in enabled[c]]
            if len(ample) == len(succ):
                why[("closure is every enabled step", seed[0])] += 1
            elif not any(st.action != "controller_becomes_leader"
                         and st.action not in N.FAULT_ACTIONS for st, _ in ample):
                why[("only faults", seed[0])] += 1
            elif best is None or len(ample) < len(best):
                best = ample
        return best


def bfs(spec, reducer=None, why=None):
    """(distinct, violation or None, states per level, states reduced)."""
    cfg, d = spec.cfg, spec._model_design
    s0 = N.initial_state(cfg)
    seen, frontier, levels = {s0}, [s0], []
    violation, reduced = None, 0
    while frontier:
        levels.append(len(frontier))
        nxt = []
        for s in frontier:
            succ = N.successors(s, cfg, d)
            v = spec.violation(s, succ)
            if v is not None and violation is None:
                violation = v
            use = succ
            if reducer is not None:
                ample = reducer.stubborn(succ, why)
                if ample is not None and all(t not in seen for _, t in ample):
                    use, reduced = ample, reduced + 1
            for _, t in use:
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        frontier = nxt
    return len(seen), violation, levels, reduced


def _spec(config: str, variant: str | None, bounds: dict | None):
    spec = KafkaSpec.named(config, variant)
    if not bounds:
        return spec
    return KafkaSpec(dataclasses.replace(spec.cfg, name=config + "-cut", **bounds), spec.design,
                     spec.variant)


def run(config: str, relax: str, measured: dict, variant: str | None = None,
        bounds: dict | None = None) -> dict:
    spec = _spec(config, variant, bounds)
    if config not in measured:
        t0 = time.process_time()
        measured[config] = measure_footprints(spec) + (time.process_time() - t0,)
    reads, writes, clause_reads, states, seconds = measured[config]
    reducer = Reducer(spec, reads, writes, clause_reads, relax)
    why: collections.Counter = collections.Counter()
    full = bfs(spec)
    red = bfs(spec, reducer, why)
    return {"config": spec.cfg.name, "variant": variant or "correct", "relax": relax,
            "bounds": bounds or {},
            "footprint_states": states,
            "footprint_cpu_seconds": round(seconds, 1),
            "classes": len(reducer.classes), "invisible_classes": len(reducer.invisible),
            "full_states": full[0], "reduced_states": red[0],
            "reduction": round(full[0] / red[0], 3), "states_with_stubborn_set": red[3],
            "verdict_full": full[1], "verdict_reduced": red[1],
            "full_levels": full[2], "reduced_levels": red[2],
            "why_no_stubborn_set": [[list(map(str, k)), v] for k, v in why.most_common(12)]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.por", description=__doc__.split("\n")[0])
    ap.add_argument("--config", default=",".join(DEFAULT_CONFIGS))
    ap.add_argument("--variant", default=None, help="a design variant (default: correct)")
    ap.add_argument("--relax", default=",".join(RELAX_LEVELS))
    ap.add_argument("--bounds", default=None,
                    help="JSON object of ModelConfig bounds to replace, e.g. '{\"max_time\": 2}'")
    ap.add_argument("--out", default="bench/results/por.json")
    args = ap.parse_args(argv)
    bounds = None
    if args.bounds is not None:
        try:
            bounds = json.loads(args.bounds)
            if not isinstance(bounds, dict):
                raise ValueError("not a JSON object")
            unknown = sorted(set(bounds) - {f.name for f in dataclasses.fields(ModelConfig)})
            if unknown:
                raise ValueError(f"no such ModelConfig field: {unknown[0]}")
        except ValueError as e:
            print(f"bench.por: --bounds: {e}", file=sys.stderr)
            return 2
    relax = args.relax.split(",")
    bad = [r for r in relax if r not in RELAX_LEVELS]
    if bad:
        print(f"bench.por: unknown --relax {bad[0]!r}; one of {', '.join(RELAX_LEVELS)}",
              file=sys.stderr)
        return 2
    results, measured = [], {}
    for config in args.config.split(","):
        try:
            _spec(config, args.variant, bounds).cfg.validate()
        except KeyError as e:
            print(f"bench.por: {e.args[0] if e.args else e}", file=sys.stderr)
            return 2
        except (TypeError, ValueError) as e:
            print(f"bench.por: --bounds: {e}", file=sys.stderr)
            return 2
        for level in relax:
            r = run(config, level, measured, args.variant, bounds)
            results.append(r)
            print(f"{r['config']}[{r['variant']}]".ljust(44)
                  + f" relax={level:7} full {r['full_states']:>9,}  reduced "
                  f"{r['reduced_states']:>9,}  x{r['reduction']:<6} stubborn sets at "
                  f"{r['states_with_stubborn_set']:,} states; violation "
                  f"{r['verdict_full'] or '-'} / {r['verdict_reduced'] or '-'}", flush=True)
    write_json(args.out, {"schema": "kipcheck-bench-por/1", "commit": git_commit(),
                          "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                          "machine": machine_info(), "results": results})
    differ = [r for r in results if r["relax"] == "none"
              and (r["verdict_full"] is None) != (r["verdict_reduced"] is None)]
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
