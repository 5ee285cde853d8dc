"""kipcheck as a pytest plugin: a model-checking gate for CI (docs/ci.md).

Registered through the ``pytest11`` entry point ``kipcheck``, so it loads in every pytest run
of an environment where kipcheck is installed, and does nothing until asked:

* ``pytest --kipcheck-profile=ci`` (or ``kipcheck_profile = ci`` in the ini file) turns the
  gate on.  For every configuration chosen (``--kipcheck-configs``, default ``tiny``) the
  session then collects one test per property (``P1[kraft-registration]``, ..., ``L1[...]``)
  and one ``witnesses[<config>]`` test, under the node ``kipcheck/<config>`` (JUnit classname
  ``kipcheck.<config>``; with a design variant ``kipcheck/<config>/<variant>``).  The tests of
  one configuration share one stateful fuzz run (``properties.stateful.fuzz``), started by the
  first of them that runs.  A property's test fails iff that run violated the property; the
  failure names the clause, the seed, the failing round, the trace written to
  ``--kipcheck-trace-dir`` and how to replay it.  The run stops at the first violation, so the
  other tests of that configuration pass with a note saying so.
* The session fixture ``kipcheck_fuzz`` gives a project's own tests the same runs.

Without ``--kipcheck-profile`` (and no ``kipcheck_profile`` in the ini file) the plugin
collects nothing and adds no header; it only registers the ``kipcheck`` marker and the
fixture.  ``-p no:kipcheck`` disables it altogether.
"""
from __future__ import annotations

from pathlib import Path

import pytest

__all__ = ["DEFAULT_SEED", "DEFAULT_CONFIGS", "DEFAULT_TRACE_DIR", "GateSettings",
           "read_settings", "expand_configs", "KipcheckFuzz", "ConfigurationRun",
           "PropertyItem", "WitnessItem", "trace_file_name"]

DEFAULT_SEED = 0
DEFAULT_CONFIGS = "tiny"
DEFAULT_VARIANT = "correct"
DEFAULT_TRACE_DIR = ".kipcheck/traces"
DEFAULT_FIXTURE_PROFILE = "ci"          # what ``kipcheck_fuzz`` uses when the gate is off
OFF = "off"
MARKER = "kipcheck"
_GROUPS = ("tiny", "small", "all")

# (option dest / ini key, command-line flag, help)
_OPTIONS = (
    ("kipcheck_profile", "--kipcheck-profile",
     "turn the kipcheck gate on with this budget: ci, dev or nightly ('off': gate off)"),
    ("kipcheck_configs", "--kipcheck-configs",
     "configurations to check: tiny (default), small, all, or a comma-separated list of names"),
    ("kipcheck_variant", "--kipcheck-variant",
     "design variant to check (default: correct, the shipped design)"),
    ("kipcheck_seed", "--kipcheck-seed",
     f"seed of the fuzz runs (default {DEFAULT_SEED})"),
    ("kipcheck_time_budget", "--kipcheck-time-budget",
     "seconds per configuration, overriding the profile's cap"),
    ("kipcheck_trace_dir", "--kipcheck-trace-dir",
     f"where counterexample traces are written (default {DEFAULT_TRACE_DIR}, relative to "
     f"the rootdir)"),
)

_GATE = pytest.StashKey["GateSettings | None"]()
_RUNS = pytest.StashKey["_Runs"]()


# ---- options --------------------------------------------------------------------------------

def pytest_addoption(parser):
    group = parser.getgroup("kipcheck", "kipcheck model-checking gate (docs/ci.md)")
    for dest, flag, help_text in _OPTIONS:
        group.addoption(flag, dest=dest, default=None, metavar=dest.split("_", 1)[1].upper(),
                        help=help_text)
        parser.addini(dest, f"{help_text} (the command line's {flag} takes precedence)",
                      default="")
    group.addoption("--kipcheck-coverage", dest="kipcheck_coverage", action="store_true",
                    default=None,
                    help="also measure coverage against the explorer's reachable set (explores "
                         "each configuration once, cached on disk)")
    parser.addini("kipcheck_coverage", "measure coverage against the reachable set",
                  type="bool", default=False)


class GateSettings:
    """The validated options of a session (``profile`` None = the gate is off)."""

    def __init__(self, profile, configs, variant, seed, time_budget, trace_dir, coverage):
        self.profile = profile                  # a name of PROFILES, or None
        self.configs = configs                  # tuple of configuration names
        self.variant = variant                  # "correct" or a name of VARIANTS
        self.seed = seed
        self.time_budget = time_budget          # float or None (the profile's cap)
        self.trace_dir = trace_dir              # absolute Path
        self.coverage = coverage

    @property
    def on(self) -> bool:
        return self.profile is not None

    def describe(self) -> str:
        from properties.stateful import get_profile
        prof = get_profile(self.profile)
        budget = ("" if self.time_budget is None else
                  f"; time budget {self.time_budget:g} s per configuration (overrides the "
                  f"profile's {prof.time_budget:g} s)")
        return (f"kipcheck: profile {prof.describe()}{budget}; seed {self.seed}; "
                f"variant {self.variant}; configurations {', '.join(self.configs)}; "
                f"traces to {self.trace_dir}")


def _value(config, dest):
    """(value, where it came from) of an option: the command line, else the ini file."""
    value = config.getoption(dest, None)
    if value is not None:
        flag = next((f for d, f, _ in _OPTIONS if d == dest), "--" + dest.replace("_", "-"))
        return value, flag
    value = config.getini(dest)
    if isinstance(value, str):
        value = value.strip()
    if value in ("", None):
        return None, None
    return value, f"{dest} (ini)"


def _bad(where, message):
    return pytest.UsageError(f"kipcheck: {where}: {message}")


def expand_configs(text: str, where: str = "--kipcheck-configs") -> tuple:
    """Configuration names from 'tiny', 'small', 'all' or a comma-separated list (which may
    mix names and groups); UsageError on an unknown name."""
    from model.configs import CONFIGS, SMALL, TINY
    groups = {"tiny": TINY, "small": SMALL, "all": tuple(TINY) + tuple(SMALL)}
    names = []
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        if part in groups:
            names.extend(groups[part])
        elif part in CONFIGS:
            names.append(part)
        else:
            raise _bad(where, f"unknown configuration {part!r}; configurations: "
                              f"{', '.join(CONFIGS)} (or {', '.join(_GROUPS)})")
    if not names:
        raise _bad(where, "no configuration given")
    return tuple(dict.fromkeys(names))


def read_settings(config) -> GateSettings:
    """The session's options, validated; ``pytest.UsageError`` (one line) on a bad value."""
    if all(_value(config, dest)[0] is None for dest, _, _ in _OPTIONS):
        # nothing asked for (the usual pytest run): import nothing of kipcheck's
        return GateSettings(None, (), DEFAULT_VARIANT, DEFAULT_SEED, None,
                            Path(config.rootpath) / DEFAULT_TRACE_DIR,
                            bool(config.getoption("kipcheck_coverage", None)
                                 or config.getini("kipcheck_coverage")))
    from properties.kafka_spec import UnknownName, get_design

    profile, where = _value(config, "kipcheck_profile")
    if profile is not None:
        profile = str(profile).strip()
        if profile == OFF:
            profile = None
        else:
            try:        # Hypothesis is in kipcheck's [test] extra: import it only when asked
                from properties.stateful import PROFILES
            except ImportError as e:
                raise _bad(where, f"the gate needs Hypothesis and pytest ({e}); install "
                                  f"kipcheck[test]") from None
            if profile not in PROFILES:
                raise _bad(where, f"unknown profile {profile!r}; profiles: "
                                  f"{', '.join(PROFILES)} (or {OFF})")

    configs, where = _value(config, "kipcheck_configs")
    configs = expand_configs(DEFAULT_CONFIGS if configs is None else configs,
                             where or "--kipcheck-configs")

    variant, where = _value(config, "kipcheck_variant")
    variant = DEFAULT_VARIANT if variant is None else str(variant).strip()
    try:
        get_design(variant)
    except UnknownName as e:
        raise _bad(where, str(e)) from None
    variant = variant or DEFAULT_VARIANT

    seed, where = _value(config, "kipcheck_seed")
    if seed is None:
        seed = DEFAULT_SEED
    else:
        try:
            seed = int(str(seed).strip(), 10)
        except ValueError:
            seed = -1
        if not 0 <= seed < 2 ** 64:             # what ``kipcheck fuzz --seed`` accepts
            raise _bad(where, f"a seed is a whole number from 0 to 2**64 - 1, got "
                              f"{_value(config, 'kipcheck_seed')[0]!r}")

    budget, where = _value(config, "kipcheck_time_budget")
    if budget is not None:
        try:
            budget = float(str(budget).strip())
        except ValueError:
            raise _bad(where, f"a time budget is a number of seconds, got {budget!r}") from None
        if not budget > 0:
            raise _bad(where, f"the time budget must be positive, got {budget:g}")

    trace_dir, _ = _value(config, "kipcheck_trace_dir")
    trace_dir = Path(DEFAULT_TRACE_DIR if trace_dir is None else str(trace_dir))
    if not trace_dir.is_absolute():
        trace_dir = Path(config.rootpath) / trace_dir

    coverage = config.getoption("kipcheck_coverage", None)
    if coverage is None:
        coverage = bool(config.getini("kipcheck_coverage"))
    return GateSettings(profile, configs, variant, seed, budget, trace_dir, coverage)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", f"{MARKER}: a kipcheck model-checking test (the gate's tests carry it; "
                   f"select them with -m {MARKER})")
    settings = read_settings(config)
    config.stash[_GATE] = settings if settings.on else None
    config.stash[_RUNS] = _Runs(settings, Path(config.invocation_params.dir))


def pytest_report_header(config):
    gate = config.stash.get(_GATE, None)
    if gate is not None:
        return [gate.describe()]
    return None


# ---- runs -----------------------------------------------------------------------------------

def trace_file_name(result) -> str:
    """The file name of a run's counterexample trace: config.variant.property.profile-seedN.json
    (no brackets or spaces, so that it needs no quoting in a shell)."""
    return (f"{result.config}.{result.variant or DEFAULT_VARIANT}.{result.property}."
            f"{result.profile}-seed{result.seed}.json")


class _Runs:
    """The fuzz runs of a session, each run once: keyed by configuration, variant and the
    keyword arguments; a run that raised raises the same error again."""

    def __init__(self, settings: GateSettings, invocation_dir: Path):
        self.settings = settings
        self.invocation_dir = invocation_dir
        self._done: dict = {}
        self.order: list = []               # keys in the order the runs finished
        self.trace_paths: dict = {}         # id(result) -> (result, Path): keeps the id valid

    def get(self, config: str, variant: str | None = None, *, coverage: bool = False, **kw):
        from properties.stateful import fuzz
        variant = variant or DEFAULT_VARIANT
        try:
            key = (config, variant, coverage, tuple(sorted(kw.items())))
            hash(key)
        except TypeError:                   # a callable or an object: run it, do not cache
            key = None
        if key is not None and key in self._done:
            ok, value = self._done[key]
            if ok:
                return value
            raise value
        try:
            if coverage and "reach" not in kw:
                from properties.coverage import reachable
                from properties.kafka_spec import KafkaSpec
                kw["reach"] = reachable(KafkaSpec.named(config, variant))
            result = fuzz(config, None if variant == DEFAULT_VARIANT else variant, **kw)
            if result.stop_reason == "interrupted":
                raise KeyboardInterrupt
            if result.found and result.trace is not None:
                path = self.settings.trace_dir / trace_file_name(result)
                path.parent.mkdir(parents=True, exist_ok=True)
                result.trace.dump(path)
                self.trace_paths[id(result)] = (result, path)
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as e:
            if key is not None:
                self._done[key] = (False, e)
            raise
        if key is not None:
            self._done[key] = (True, result)
            self.order.append(key)
        return result

    def results(self):
        return [self._done[k][1] for k in self.order]

    def trace_path(self, result):
        """Where the run's trace was written (None if it found nothing)."""
        found = self.trace_paths.get(id(result))
        return found[1] if found is not None and found[0] is result else None

    def shown(self, path: Path) -> str:
        """``path`` as the user should type it: relative to where pytest was started when it
        is below it."""
        try:
            return str(path.relative_to(self.invocation_dir))
        except ValueError:
            return str(path)


class KipcheckFuzz:
    """What the ``kipcheck_fuzz`` fixture returns: ``kipcheck_fuzz(config, variant=None, **kw)``
    runs ``properties.stateful.fuzz`` with the session's seed, profile and time budget unless
    ``kw`` says otherwise (``coverage=True`` also measures coverage), once per distinct call in
    the session, and writes a counterexample's trace to the trace directory."""

    def __init__(self, runs: _Runs):
        self._runs = runs
        settings = runs.settings
        self.seed = settings.seed
        self.profile = settings.profile or DEFAULT_FIXTURE_PROFILE
        self.time_budget = settings.time_budget
        self.trace_dir = settings.trace_dir

    def __call__(self, config: str, variant: str | None = None, **kw):
        kw.setdefault("seed", self.seed)
        kw.setdefault("profile", self.profile)
        if self.time_budget is not None:
            kw.setdefault("time_budget", self.time_budget)
        return self._runs.get(config, variant, **kw)

    def trace_path(self, result):
        """The path of ``result``'s trace file, or None if it found no violation."""
        return self._runs.trace_path(result)


@pytest.fixture(scope="session")
def kipcheck_fuzz(pytestconfig) -> KipcheckFuzz:
    """``kipcheck_fuzz(config, variant=None, **kw) -> FuzzResult`` (see docs/ci.md)."""
    return KipcheckFuzz(pytestconfig.stash[_RUNS])


# ---- collection -----------------------------------------------------------------------------

@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """Add one ``ConfigurationRun`` per configuration to what the session collects, so that
    the gate's tests are collected, reported, selected (-k, -m) and deselected like any."""
    outcome = yield
    if not isinstance(collector, pytest.Session):
        return
    gate = collector.config.stash.get(_GATE, None)
    if gate is None:
        return
    rep = outcome.get_result()
    if rep.passed:
        rep.result.extend(ConfigurationRun.for_gate(collector, gate, name)
                          for name in gate.configs)


class ConfigurationRun(pytest.Collector):
    """The gate's tests of one configuration (node ``kipcheck/<config>[/<variant>]``), and
    their shared fuzz run."""

    def __init__(self, *, config_name: str, variant: str, gate: GateSettings, **kw):
        super().__init__(**kw)
        self.config_name = config_name
        self.variant = variant
        self.gate = gate
        self.extra_keyword_matches.update({config_name, variant})

    @classmethod
    def for_gate(cls, session, gate: GateSettings, config_name: str):
        node = f"kipcheck/{config_name}"
        if gate.variant != DEFAULT_VARIANT:
            node += f"/{gate.variant}"
        return cls.from_parent(session, name=node, nodeid=node, config_name=config_name,
                               variant=gate.variant, gate=gate)

    def collect(self):
        from properties.registry import PROPERTIES
        for prop in PROPERTIES:
            yield PropertyItem.from_parent(self, name=f"{prop.id}[{self.config_name}]",
                                           prop=prop)
        yield WitnessItem.from_parent(self, name=f"witnesses[{self.config_name}]")

    @property
    def runs(self) -> _Runs:
        return self.config.stash[_RUNS]

    def result(self):
        """The configuration's fuzz run (run by the first test that asks)."""
        gate = self.gate
        kw = {"seed": gate.seed, "profile": gate.profile}
        if gate.time_budget is not None:
            kw["time_budget"] = gate.time_budget
        return self.runs.get(self.config_name, self.variant, coverage=gate.coverage, **kw)


class KipcheckFailure(Exception):
    """A gate test's failure: a one-line headline and the full report."""

    def __init__(self, headline: str, lines: list):
        super().__init__(headline)
        self.headline = headline
        self.lines = lines


class _Crash:
    """Duck-typed ``ReprFileLocation``: pytest's summaries and JUnit's ``message`` attribute
    read ``reprcrash.message``."""

    def __init__(self, path: str, lineno: int, message: str):
        self.path, self.lineno, self.message = path, lineno, message

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class _FailureRepr:
    """The long report of a ``KipcheckFailure`` (no traceback: the trace is the evidence)."""

    def __init__(self, nodeid: str, failure: KipcheckFailure):
        self.reprcrash = _Crash(nodeid, 0, failure.headline)
        self.lines = [failure.headline, *failure.lines]

    def toterminal(self, tw) -> None:
        tw.line(self.lines[0], red=True, bold=True)
        for line in self.lines[1:]:
            tw.line(line)

    def __str__(self) -> str:
        return "\n".join(self.lines)


class _GateItem(pytest.Item):
    parent: ConfigurationRun

    def __init__(self, **kw):
        super().__init__(**kw)
        self.add_marker(MARKER)

    def reportinfo(self):
        # a virtual path named like the node (kipcheck/<config>), so that locations (skip
        # reasons, JUnit's xunit1 "file") read like the node id rather than "."
        return Path(self.config.rootpath) / self.parent.nodeid, 0, self.nodeid

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, KipcheckFailure):
            return _FailureRepr(self.nodeid, excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def _record(self, result) -> None:
        """The run's figures as JUnit properties."""
        props = [("kipcheck_config", result.config), ("kipcheck_variant", result.variant),
                 ("kipcheck_profile", result.profile), ("kipcheck_seed", result.seed),
                 ("kipcheck_rounds", result.rounds), ("kipcheck_steps", result.steps_run),
                 ("kipcheck_distinct_states", result.distinct),
                 ("kipcheck_stop_reason", result.stop_reason),
                 ("kipcheck_seconds", round(result.seconds, 2))]
        if result.coverage is not None:
            props += [("kipcheck_coverage_states", round(result.coverage.states_share, 6)),
                      ("kipcheck_coverage", result.coverage.describe())]
        self.user_properties.extend(props)

    def _note(self, text: str) -> None:
        self.user_properties.append(("kipcheck_note", text))
        self.add_report_section("call", "kipcheck", text)


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _stopped_at(result) -> str:
    return (f"run stopped at {result.property} after {result.steps_run:,} steps "
            f"({_n(result.rounds, 'round')})")


def _skip(reason: str):
    """``pytest.skip`` located at the item (kipcheck/<config>), not at this file."""
    try:
        exc = pytest.skip.Exception(reason, _use_item_location=True)
    except TypeError:                       # a pytest without the (private) keyword
        exc = pytest.skip.Exception(reason)
    raise exc


class PropertyItem(_GateItem):
    """Fails iff the configuration's run violated ``prop``."""

    def __init__(self, *, prop, **kw):
        super().__init__(**kw)
        self.prop = prop
        self.extra_keyword_matches.update({prop.id, prop.name})

    def runtest(self):
        run = self.parent
        result = run.result()
        self._record(result)
        prop = self.prop
        if result.found and result.property == prop.id:
            raise self._failure(result)
        if result.found:
            self._note(f"{_stopped_at(result)}; {prop.id} was not violated up to then")
        elif result.stop_reason == "time budget":
            self._note(f"run stopped by the time budget after {_n(result.rounds, 'round')} and "
                       f"{result.steps_run:,} steps; {prop.id} was not violated up to then")
        else:
            self._note(f"{prop.id} not violated in {_n(result.rounds, 'round')}, "
                       f"{result.steps_run:,} steps, {result.distinct:,} distinct states")

    def _failure(self, result) -> KipcheckFailure:
        from model.describe import describe_trace
        from properties.kafka_spec import KafkaSpec
        from properties.trace import as_pytest
        runs = self.parent.runs
        prop, fr = self.prop, result.failed_round
        path = runs.trace_path(result)
        shown = runs.shown(path) if path else None
        where = f"{result.config} [{result.variant}]"
        headline = (f"{prop.id} {prop.name} violated on {where}, clause {result.clause}: "
                    f"seed {result.seed}, round {fr.index} (round seed {fr.round_seed}), "
                    f"{len(result.steps)}-step trace {shown}")
        self.user_properties += [("kipcheck_clause", result.clause),
                                 ("kipcheck_round", fr.index),
                                 ("kipcheck_round_seed", fr.round_seed),
                                 ("kipcheck_swarm", fr.swarm.describe()),
                                 ("kipcheck_trace", shown)]
        spec = KafkaSpec.named(result.config, result.variant)
        lines = [
            f"  {prop.statement}",
            "",
            f"run:      profile {result.profile}, seed {result.seed}, "
            f"{_n(result.rounds, 'round')}, {result.steps_run:,} steps, "
            f"{result.distinct:,} distinct states, {result.seconds:.1f} s",
            f"failing:  round {fr.index}, round seed {fr.round_seed}, swarm {fr.swarm.describe()}"
            f", novelty {'on' if fr.novelty else 'off'}",
            f"trace:    {len(result.steps)} steps (Hypothesis shrank the failing example to "
            f"{result.shrunk_length}, then minimised), written to {shown}",
            "",
            f"counterexample ({prop.id} [{result.clause}] is violated after the last step):",
        ]
        lines += [f"  {i:>3}. {text}" for i, text in
                  enumerate(describe_trace(spec.cfg, spec.design, result.steps), 1)]
        name = f"test_{prop.id}_{result.config}_{result.variant}".replace("-", "_").lower()
        lines += [
            "",
            "replay the trace:         kipcheck replay " + shown,
            "as a regression test:     kipcheck replay " + shown + " --pytest  (or paste the "
            "test below)",
            "rerun the whole run:      " + result.replay_hint() + "  (deterministic for a seed)",
            "",
            "as a pytest regression test:",
            "",
        ]
        lines += ["    " + ln if ln else "" for ln in
                  as_pytest(result.trace, test_name=name).splitlines()]
        return KipcheckFailure(headline, lines)


class WitnessItem(_GateItem):
    """Fails if the run missed a witness of its configuration: a run that reaches nothing
    proves nothing.  Skipped when the run stopped early at a violation."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.extra_keyword_matches.add("witnesses")

    def runtest(self):
        result = self.parent.result()
        self._record(result)
        reached, missing = result.witnesses_reached, result.witnesses_missing
        total = len(reached) + len(missing)
        self.user_properties += [("kipcheck_witnesses_reached", f"{len(reached)}/{total}")]
        if missing and result.found:
            _skip(f"{_stopped_at(result)}: witness coverage not assessed "
                  f"({len(reached)}/{total} reached by then)")
        if missing:
            why = (f"the time budget stopped it after {_n(result.rounds, 'round')}"
                   if result.stop_reason == "time budget" else _n(result.rounds, "round"))
            raise KipcheckFailure(
                f"{len(missing)} of {total} witnesses not reached on {result.config} "
                f"[{result.variant}] ({why}, {result.steps_run:,} steps, seed {result.seed}): "
                + ", ".join(missing),
                ["a run that reaches nothing proves nothing: the properties above hold only "
                 "for the states this run visited",
                 f"reached: {', '.join(reached) or '-'}",
                 "give it a bigger profile (--kipcheck-profile=dev), a longer "
                 "--kipcheck-time-budget, or another --kipcheck-seed"])
        self._note(f"all {total} witnesses reached")


# ---- summary --------------------------------------------------------------------------------

def pytest_terminal_summary(terminalreporter, config):
    if config.stash.get(_GATE, None) is None:
        return
    runs = config.stash[_RUNS]
    results = runs.results()
    if not results:
        return
    tr = terminalreporter
    tr.section("kipcheck")
    for r in results:
        path = runs.trace_path(r)
        verdict = (f"{r.property} violated [{r.clause}], trace "
                   f"{runs.shown(path) if path else '(not written)'}"
                   if r.found else "no property violated")
        total = len(r.witnesses_reached) + len(r.witnesses_missing)
        cov = f", coverage {r.coverage.describe()}" if r.coverage is not None else ""
        tr.write_line(f"{r.config} [{r.variant}] seed {r.seed}: {verdict}; "
                      f"{_n(r.rounds, 'round')}, {r.steps_run:,} steps, "
                      f"{r.distinct:,} distinct states, witnesses "
                      f"{len(r.witnesses_reached)}/{total}, stop: {r.stop_reason}, "
                      f"{r.seconds:.1f} s{cov}")
