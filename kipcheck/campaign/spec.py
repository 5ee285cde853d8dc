"""Campaign specifications: a TOML file that names what to run, with which budget and seed.

A campaign is a grid of (configuration, design variant, engine) groups, each split into
``shards`` shards with seeds from one campaign seed (``seeds.py``).  Every shard does a fixed
amount of *work* (rounds x examples x steps, or walk steps), never "as much as fits in N
seconds", so that a shard's result is a function of its seed and a rerun can be compared
digest for digest (DESIGN section 6).  Example (``examples/campaign-ci.toml``)::

    name = "ci"
    seed = 20261121                 # the campaign seed: every shard seed derives from it
    output = "campaign-out/ci"      # relative to the current directory; --out overrides it
    configurations = ["tiny"]       # names, or "tiny" / "small" / "all"
    variants = ["correct", "seeded"]  # names, or "seeded" (DESIGN section 5) / "all"
    engines = ["stateful", "random-walk"]
    shards = 2                      # per (configuration, variant, engine)
    cross = "matching"              # "matching": a variant only on the configurations that
                                    # catch it (model/configs.py); "all": every pair
    coverage = "auto"               # against the explorer's reachable set: auto / always / never
    determinism_check = 2           # finished shards re-run in-process and compared by digest

    [budget]                        # per shard
    rounds = 2                      # stateful: Hypothesis rounds (random-walk: swarm rounds)
    examples_per_round = 10
    steps_per_example = 100
    walk_steps = 4000               # random-walk: model steps per shard
    walk_depth = 40                 # random-walk: restart after this many steps
    conformance_steps = 40          # conformance: steps per example (rounds x examples_per_round
                                    # examples, each step applied to model and implementation)
    minimise_seconds = 10           # cap on delta-debugging one counterexample
    max_seconds = 3600              # safety cap per shard (a capped shard is not reproducible)

Engines: ``stateful`` (Hypothesis via ``properties.stateful.fuzz_spec``), ``random-walk``
(seeded random walks over ``model.next.successors`` with restarts), ``conformance`` (model
and implementation in lock-step; available once ``properties.conformance`` provides
``run_conformance(config, seed=, steps=)``; it runs on the correct design only, the one the
implementation implements).

``load_spec`` validates everything up front: an unknown key, configuration, variant or engine
(the valid names are listed), a non-positive budget, a missing seed -- each is a ``SpecError``
whose one-line message names the file and the key.  So is a file that is no spec at all: not
UTF-8 (binary, UTF-16), over 1 MiB (``MAX_SPEC_BYTES``; a spec is a few dozen lines), or nested
deeper than a spec ever is (``MAX_NESTING``; TOML's parser would otherwise recurse thousands of
levels and fail with RecursionError).  Values quoted in messages are cut short.
"""
from __future__ import annotations

import importlib
import json
import os
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

try:                                    # Python 3.11+
    import tomllib
except ImportError:                     # pragma: no cover - Python 3.10
    tomllib = None

__all__ = ["SpecError", "Budget", "CampaignSpec", "load_spec", "spec_from_dict",
           "available_engines", "conformance_runner", "TEST_ENGINE", "TEST_ENGINE_ENV",
           "ENGINES"]

ENGINES = ("stateful", "random-walk", "conformance")
TEST_ENGINE = "nondeterministic-test"
TEST_ENGINE_ENV = "KIPCHECK_CAMPAIGN_TEST_ENGINES"
"""``nondeterministic-test`` is a deliberately non-reproducible engine (its walks mix the
process id and the clock into the seed) for testing the determinism check; it is a valid
engine name only while this environment variable is "1"."""

MAX_SPEC_BYTES = 1 << 20
MAX_NESTING = 8                         # a spec nests two levels ([budget], its values)
CROSS = ("matching", "all")
COVERAGE = ("auto", "always", "never")
SEED_LIMIT = 2 ** 64
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class SpecError(ValueError):
    """A campaign spec that cannot run; the message is one line naming the file and key."""


@dataclass(frozen=True)
class Budget:
    """The work one shard does.  Positive numbers only."""
    rounds: int = 2
    examples_per_round: int = 10
    steps_per_example: int = 100
    walk_steps: int = 5000
    walk_depth: int = 60
    conformance_steps: int = 40
    minimise_seconds: float = 10.0
    max_seconds: float = 3600.0

    @property
    def rule_calls(self) -> int:
        return self.rounds * self.examples_per_round * self.steps_per_example


@dataclass(frozen=True)
class CampaignSpec:
    name: str
    seed: int
    output: str
    configurations: tuple
    variants: tuple                     # "correct" and/or variant names of model.config.VARIANTS
    engines: tuple
    shards: int = 1
    budget: Budget = field(default_factory=Budget)
    determinism_check: int = 2
    cross: str = "matching"
    coverage: str = "auto"
    source: str = ""                    # the file it was loaded from (not part of its identity)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["configurations"] = list(self.configurations)
        d["variants"] = list(self.variants)
        d["engines"] = list(self.engines)
        return d

    def identity(self) -> dict:
        """What decides the shards and their results: two specs with equal identities have
        the same tasks with the same seeds (``--resume`` requires it).  Output directory,
        source file and the determinism sample size do not count."""
        d = self.to_dict()
        for key in ("output", "source", "determinism_check", "coverage"):
            d.pop(key)
        return d

    def identity_hash(self) -> str:
        import hashlib
        text = json.dumps(self.identity(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def pairs(self) -> list:
        """The (configuration, variant) pairs the campaign runs, in spec order."""
        return [(c, v) for c in self.configurations for v in self.variants
                if self.cross == "all" or _matches(c, v)]

    def warnings(self) -> list:
        """Advice that does not stop the campaign (printed by the CLI)."""
        out = []
        # about 3 k model steps/s for the stateful engine on this kind of machine
        # (docs/stateful.md); Spark pays 14-26 ms per task (Spark pitfall P7)
        if "stateful" in self.engines and self.budget.rule_calls < 3000:
            out.append(f"budget: {self.budget.rule_calls:,} rule calls per stateful shard is "
                       f"under a second of work; Spark pays 14-26 ms per task, so keep shards "
                       f">= 1 s (raise rounds) on Spark")
        if "conformance" in self.engines:
            from model.configs import CONFIGS
            from properties.conformance import unsupported
            skipped = sorted({c for c, _ in self.pairs() if unsupported(CONFIGS[c])})
            if skipped:
                out.append(f"engines: conformance skips {', '.join(skipped)} (its clients send "
                           f"APIs whose version ranges the model does not describe)")
        return out


def _matches(config: str, variant: str) -> bool:
    if variant == "correct":
        return True
    from model.configs import CONFIGS
    return variant in CONFIGS[config].variants


def conformance_runner():
    """``properties.conformance.run_conformance`` if the conformance engine exists, else None."""
    try:
        mod = importlib.import_module("properties.conformance")
    except ImportError:
        return None
    fn = getattr(mod, "run_conformance", None)
    return fn if callable(fn) else None


def available_engines() -> tuple:
    names = ["stateful", "random-walk"]
    if conformance_runner() is not None:
        names.append("conformance")
    if os.environ.get(TEST_ENGINE_ENV) == "1":
        names.append(TEST_ENGINE)
    return tuple(names)


_TOP_KEYS = {"name", "seed", "output", "configurations", "variants", "engines", "shards",
             "determinism_check", "cross", "coverage", "budget"}
_INT_BUDGET = {f.name for f in fields(Budget) if f.type in ("int", int)}
_FLOAT_BUDGET = {f.name for f in fields(Budget)} - _INT_BUDGET


def load_spec(path) -> CampaignSpec:
    """Read and validate a campaign spec (TOML)."""
    path = Path(path)
    if tomllib is None:                 # pragma: no cover
        raise SpecError(f"{path}: reading TOML needs Python 3.11 or newer")
    try:
        with open(path, "rb") as f:     # at most one byte past the cap: /dev/zero ends too
            raw = f.read(MAX_SPEC_BYTES + 1)
    except OSError as e:
        raise SpecError(f"{path}: cannot read the campaign spec: "
                        f"{e.strerror or e}") from None
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(f"{path}: over {MAX_SPEC_BYTES >> 20} MiB: not a campaign spec (a spec "
                        f"is a few dozen lines of TOML)")
    text = _decode(path, raw)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{path}: not valid TOML: {_show(str(e), 200, quote=False)}") from None
    except RecursionError:
        raise SpecError(f"{path}: arrays or tables nested thousands of levels deep (a "
                        f"campaign spec nests two)") from None
    if _depth(data) > MAX_NESTING:
        raise SpecError(f"{path}: arrays or tables nested more than {MAX_NESTING} levels deep "
                        f"(a campaign spec nests two)")
    return spec_from_dict(data, source=str(path))


def _decode(path, raw: bytes) -> str:
    """The spec's text: UTF-8, as TOML requires (a UTF-8 byte-order mark is dropped)."""
    import codecs
    if raw.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        raise SpecError(f"{path}: UTF-32 text; TOML is UTF-8: save the spec as UTF-8")
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise SpecError(f"{path}: UTF-16 text; TOML is UTF-8: save the spec as UTF-8")
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8):]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SpecError(f"{path}: not UTF-8 text (byte 0x{raw[e.start]:02x} at offset "
                        f"{e.start}); a campaign spec is TOML, which is UTF-8") from None


def _depth(value) -> int:
    """How deeply lists and tables nest in ``value`` (iteratively: no recursion limit)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = list(v.values())
        elif not isinstance(v, list):
            continue
        deepest = max(deepest, d + 1)
        if deepest > MAX_NESTING:
            return deepest
        stack.extend((x, d + 1) for x in v)
    return deepest


def _show(value, limit: int = 60, *, quote: bool = True) -> str:
    """A value for an error message: its repr (or text), on one line, cut at ``limit``."""
    try:
        text = repr(value) if quote else str(value)
    except RecursionError:                      # pragma: no cover - _depth refuses these
        text = f"<a nested {type(value).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _key(name) -> str:
    """A key of the user's file for an error message (quoted when it is not a plain name)."""
    return name if isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9_.-]{1,40}", name) \
        else _show(name, 40)


def spec_from_dict(data: dict, source: str = "<spec>") -> CampaignSpec:
    """Validate a parsed spec; ``source`` names it in error messages."""
    from model.config import VARIANTS
    from model.configs import CONFIGS, SMALL, TINY

    def fail(key, msg):
        raise SpecError(f"{source}: {key}: {msg}")

    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        fail(_key(unknown[0]), f"unknown key; keys: {', '.join(sorted(_TOP_KEYS))}")

    if "seed" not in data:
        fail("seed", "missing: a campaign needs a seed (a whole number from 0 to 2**64 - 1); "
                     "every shard seed derives from it")
    seed = data["seed"]
    if not _is_int(seed) or not 0 <= seed < SEED_LIMIT:
        fail("seed", f"must be a whole number from 0 to 2**64 - 1, got {_show(seed)}")

    name = data.get("name", Path(source).stem if source != "<spec>" else "campaign")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        fail("name", f"must be a name of letters, digits, '.', '_' and '-', got {_show(name)}")

    output = data.get("output", f"campaign-out/{name}")
    if not isinstance(output, str) or not output.strip() or "\0" in output:
        fail("output", f"must be a directory path, got {_show(output)}")

    configs = _names(data, "configurations", fail, keywords={
        "tiny": TINY, "small": SMALL, "all": tuple(CONFIGS)}, valid=tuple(CONFIGS),
        what="configuration")
    seeded = tuple(n for n, v in VARIANTS.items() if v.kind == "seeded")
    variants = _names(data, "variants", fail, keywords={
        "seeded": seeded, "all": ("correct",) + tuple(VARIANTS)},
        valid=("correct",) + tuple(VARIANTS), what="variant")

    engines = data.get("engines", ["stateful"])
    if isinstance(engines, str):
        engines = [engines]
    if not isinstance(engines, list) or not engines or \
            not all(isinstance(e, str) for e in engines):
        fail("engines", "must be a non-empty list of engine names")
    ok = available_engines()
    for e in engines:
        if e == "conformance" and e not in ok:
            fail("engines", "engine 'conformance' is not available yet (it needs "
                            "properties.conformance with run_conformance(config, seed, "
                            "steps)); engines: " + ", ".join(ok))
        if e not in ok:
            fail("engines", f"unknown engine {_show(e)}; engines: {', '.join(ok)}")
    if len(set(engines)) != len(engines):
        fail("engines", "an engine is listed twice")

    shards = data.get("shards", 1)
    if not _is_int(shards) or shards < 1:
        fail("shards", f"must be a positive whole number, got {_show(shards)}")
    det = data.get("determinism_check", 2)
    if not _is_int(det) or det < 0:
        fail("determinism_check", f"must be a whole number >= 0 (0: off), got {_show(det)}")
    cross = data.get("cross", "matching")
    if cross not in CROSS:
        fail("cross", f"must be one of {', '.join(CROSS)}, got {_show(cross)}")
    coverage = data.get("coverage", "auto")
    if coverage not in COVERAGE:
        fail("coverage", f"must be one of {', '.join(COVERAGE)}, got {_show(coverage)}")

    raw_budget = data.get("budget", {})
    if not isinstance(raw_budget, dict):
        fail("budget", "must be a table ([budget])")
    bad = sorted(set(raw_budget) - _INT_BUDGET - _FLOAT_BUDGET)
    if bad:
        fail(f"budget.{_key(bad[0])}", f"unknown key; keys: "
                                 f"{', '.join(f.name for f in fields(Budget))}")
    values = {}
    for key, value in raw_budget.items():
        if key in _INT_BUDGET:
            if not _is_int(value) or value <= 0:
                fail(f"budget.{key}", f"must be a positive whole number, got {_show(value)}")
        elif not (_is_int(value) or isinstance(value, float)) or not value > 0 \
                or value != value or value == float("inf"):
            fail(f"budget.{key}", f"must be a positive number of seconds, got {_show(value)}")
        values[key] = value
    budget = Budget(**values)

    spec = CampaignSpec(name=name, seed=seed, output=output, configurations=configs,
                        variants=variants, engines=tuple(engines), shards=shards,
                        budget=budget, determinism_check=det, cross=cross, coverage=coverage,
                        source=source)
    if cross == "matching":
        for v in variants:
            if v != "correct" and not any(_matches(c, v) for c in configs):
                fail("variants", f"variant {v!r} runs on no listed configuration with "
                                 f"cross = \"matching\" (it is caught on "
                                 f"{VARIANTS[v].config!r}); add that configuration or set "
                                 f"cross = \"all\"")
    if not spec.pairs():
        fail("variants", "the campaign has nothing to run")
    return spec


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _names(data, key, fail, *, keywords, valid, what) -> tuple:
    raw = data.get(key)
    if raw is None:
        fail(key, f"missing: list the {what}s (or {' / '.join(keywords)})")
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(x, str) for x in raw):
        fail(key, f"must be a non-empty list of {what} names")
    out = []
    for item in raw:
        expanded = keywords.get(item, (item,))
        for n in expanded:
            if n not in valid:
                fail(key, f"unknown {what} {_show(n)}; {what}s: {', '.join(valid)} "
                          f"(or {', '.join(keywords)})")
            if n not in out:
                out.append(n)
    return tuple(out)
