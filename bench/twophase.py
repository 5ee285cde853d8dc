"""TLA+'s TwoPhase commit (Lamport, ``TwoPhase.tla``) as a ``Spec``: the explorer's reference model.

The specification, as in the TLA+ examples::

    TPInit == rmState = [rm \\in RM |-> "working"] /\\ tmState = "init"
              /\\ tmPrepared = {} /\\ msgs = {}
    TMRcvPrepared(rm)  == tmState = "init" /\\ [type |-> "Prepared", rm |-> rm] \\in msgs
                          /\\ tmPrepared' = tmPrepared \\cup {rm}
    TMCommit           == tmState = "init" /\\ tmPrepared = RM
                          /\\ tmState' = "committed" /\\ msgs' = msgs \\cup {[type |-> "Commit"]}
    TMAbort            == tmState = "init"
                          /\\ tmState' = "aborted" /\\ msgs' = msgs \\cup {[type |-> "Abort"]}
    RMPrepare(rm)      == rmState[rm] = "working" /\\ rmState' = [.. EXCEPT ![rm] = "prepared"]
                          /\\ msgs' = msgs \\cup {[type |-> "Prepared", rm |-> rm]}
    RMChooseToAbort(rm)== rmState[rm] = "working" /\\ rmState' = [.. EXCEPT ![rm] = "aborted"]
    RMRcvCommitMsg(rm) == [type |-> "Commit"] \\in msgs
                          /\\ rmState' = [.. EXCEPT ![rm] = "committed"]
    RMRcvAbortMsg(rm)  == [type |-> "Abort"] \\in msgs /\\ rmState' = [.. EXCEPT ![rm] = "aborted"]
    TPNext == TMCommit \\/ TMAbort \\/ \\E rm \\in RM : TMRcvPrepared(rm) \\/ RMPrepare(rm)
              \\/ RMChooseToAbort(rm) \\/ RMRcvCommitMsg(rm) \\/ RMRcvAbortMsg(rm)

Reachable states (TLC, Stateright): 3 RMs 288; 5 RMs 8,832; 7 RMs 296,448; 8 RMs 1,745,408;
10 RMs 61,515,776.  Note that ``TMRcvPrepared``, ``RMRcvCommitMsg`` and ``RMRcvAbortMsg`` have no
guard on the RM's own state, so they can be stuttering steps (self-loops); they count as generated
transitions, as in TLC.

State encoding
--------------
A state is one non-negative ``int`` (fast to hash, compare and copy):

* bits 0-1: ``tmState`` (0 = init, 1 = committed, 2 = aborted)
* bit 2: ``[type |-> "Commit"] \\in msgs``;  bit 3: ``[type |-> "Abort"] \\in msgs``
* for RM ``i`` (0-based) the nibble at bits ``4 + 4*i .. 7 + 4*i``:
  bits 0-1 ``rmState[i]`` (0 working, 1 prepared, 2 committed, 3 aborted),
  bit 2 ``i \\in tmPrepared``, bit 3 ``[type |-> "Prepared", rm |-> i] \\in msgs``.

``describe(state)`` (and ``TwoPhaseSpec.describe``) renders it readably.  The semantics are the
small per-action functions below (``tm_rcv_prepared`` ... ``rm_rcv_abort_msg``), used by
``TwoPhaseSpec.step`` for replay and by ``slow_successors``; the fast ``successors`` is a table
compiled *from those functions*: every per-RM action changes only its RM's nibble and depends only
on that nibble and the 4 global bits, so for each RM the table maps (global bits, nibble) to the
enabled steps and the nibble deltas.  A test checks ``successors == slow_successors`` on every
reachable state.

Fingerprint: for ``n_rms <= 15`` the packed state fits in 64 bits and is its own fingerprint
(injective, hence collision-free, and deterministic across processes); above that a
64-bit mix of the integer is used.  Symmetry: all RMs are interchangeable, ``canonical`` sorts the
RM nibbles (``rmState``, membership in ``tmPrepared`` and the Prepared message, together).

Flaws (for tests): ``flaw="rm-commit-without-msg"`` lets ``RMRcvCommitMsg`` fire without the Commit
message; ``flaw="tm-commit-unprepared"`` lets ``TMCommit`` fire without every RM prepared.  Both
break ``TCConsistent``.
"""
from __future__ import annotations

import operator
from collections.abc import Iterable

from model.step import Step

WORKING, PREPARED, COMMITTED, ABORTED = 0, 1, 2, 3
RM_STATE_NAMES = ("working", "prepared", "committed", "aborted")
TM_INIT, TM_COMMITTED, TM_ABORTED = 0, 1, 2
TM_STATE_NAMES = ("init", "committed", "aborted", "<invalid>")

# global bits
_TM_MASK = 0b0011
_COMMIT_MSG = 0b0100
_ABORT_MSG = 0b1000
# bits inside an RM nibble
_RM_STATE = 0b0011
_RM_TM_PREPARED = 0b0100
_RM_PREPARED_MSG = 0b1000

FLAWS = (None, "rm-commit-without-msg", "tm-commit-unprepared")

ACTIONS = ("TMCommit", "TMAbort", "TMRcvPrepared", "RMPrepare", "RMChooseToAbort",
           "RMRcvCommitMsg", "RMRcvAbortMsg")
RM_ACTIONS = ACTIONS[2:]

WITNESSES = ("some-abort", "all-aborted", "some-commit", "all-committed")

_M64 = 0xFFFFFFFFFFFFFFFF
# witnesses holding, by a 4-bit code: some aborted | all aborted << 1 | some committed << 2 |
# all committed << 3
_HOLDS = tuple(frozenset(w for i, w in enumerate(WITNESSES) if code >> i & 1) for code in range(16))


def _shift(rm: int) -> int:
    return 4 + 4 * rm


def rm_field(state: int, rm: int) -> int:
    return (state >> _shift(rm)) & 15


def _set_rm_state(state: int, rm: int, rm_state: int) -> int:
    sh = _shift(rm)
    return (state & ~(_RM_STATE << sh)) | (rm_state << sh)


def _all_prepared_mask(n: int) -> int:
    return sum(_RM_TM_PREPARED << _shift(i) for i in range(n))


# ---------------------------------------------------------------------------------------------
# The actions, one small function each: state -> successor or None (not enabled).
# ``n`` is the number of RMs; ``flaw`` selects a broken variant.

def tm_rcv_prepared(n: int, state: int, rm: int, flaw=None):
    """TMRcvPrepared(rm): the TM records the Prepared message of ``rm``."""
    if state & _TM_MASK != TM_INIT or not rm_field(state, rm) & _RM_PREPARED_MSG:
        return None
    return state | (_RM_TM_PREPARED << _shift(rm))


def tm_commit(n: int, state: int, flaw=None):
    """TMCommit: every RM prepared, the TM commits and sends Commit."""
    if state & _TM_MASK != TM_INIT:
        return None
    every = _all_prepared_mask(n)
    if flaw != "tm-commit-unprepared" and state & every != every:
        return None
    return (state & ~_TM_MASK) | TM_COMMITTED | _COMMIT_MSG


def tm_abort(n: int, state: int, flaw=None):
    """TMAbort: the TM aborts (spontaneously) and sends Abort."""
    if state & _TM_MASK != TM_INIT:
        return None
    return (state & ~_TM_MASK) | TM_ABORTED | _ABORT_MSG


def rm_prepare(n: int, state: int, rm: int, flaw=None):
    """RMPrepare(rm): a working RM prepares and sends Prepared."""
    if rm_field(state, rm) & _RM_STATE != WORKING:
        return None
    return _set_rm_state(state, rm, PREPARED) | (_RM_PREPARED_MSG << _shift(rm))


def rm_choose_to_abort(n: int, state: int, rm: int, flaw=None):
    """RMChooseToAbort(rm): a working RM aborts on its own."""
    if rm_field(state, rm) & _RM_STATE != WORKING:
        return None
    return _set_rm_state(state, rm, ABORTED)


def rm_rcv_commit_msg(n: int, state: int, rm: int, flaw=None):
    """RMRcvCommitMsg(rm): the RM receives Commit (no guard on its own state, as in TLA+)."""
    if not state & _COMMIT_MSG and flaw != "rm-commit-without-msg":
        return None
    return _set_rm_state(state, rm, COMMITTED)


def rm_rcv_abort_msg(n: int, state: int, rm: int, flaw=None):
    """RMRcvAbortMsg(rm): the RM receives Abort (no guard on its own state, as in TLA+)."""
    if not state & _ABORT_MSG:
        return None
    return _set_rm_state(state, rm, ABORTED)


ACTION_FUNCTIONS = {
    "TMCommit": tm_commit, "TMAbort": tm_abort, "TMRcvPrepared": tm_rcv_prepared,
    "RMPrepare": rm_prepare, "RMChooseToAbort": rm_choose_to_abort,
    "RMRcvCommitMsg": rm_rcv_commit_msg, "RMRcvAbortMsg": rm_rcv_abort_msg,
}


def slow_successors(n: int, state: int, flaw=None) -> list[tuple[Step, int]]:
    """TPNext straight from the action functions, in ``successors`` order (for tests)."""
    out = []
    for name in ("TMCommit", "TMAbort"):
        nxt = ACTION_FUNCTIONS[name](n, state, flaw=flaw)
        if nxt is not None:
            out.append((Step(name, ()), nxt))
    for rm in range(n):
        for name in RM_ACTIONS:
            nxt = ACTION_FUNCTIONS[name](n, state, rm, flaw=flaw)
            if nxt is not None:
                out.append((Step(name, (rm,)), nxt))
    return out


# ---------------------------------------------------------------------------------------------
# Readable rendering and the TLA+ view of a state

def decode(n: int, state: int) -> dict:
    """The TLA+ variables of a packed state (RMs numbered from 0)."""
    rm_state = tuple(RM_STATE_NAMES[rm_field(state, i) & _RM_STATE] for i in range(n))
    tm_prepared = frozenset(i for i in range(n) if rm_field(state, i) & _RM_TM_PREPARED)
    msgs = [("Prepared", i) for i in range(n) if rm_field(state, i) & _RM_PREPARED_MSG]
    if state & _COMMIT_MSG:
        msgs.append(("Commit",))
    if state & _ABORT_MSG:
        msgs.append(("Abort",))
    return {"rmState": rm_state, "tmState": TM_STATE_NAMES[state & _TM_MASK],
            "tmPrepared": tm_prepared, "msgs": frozenset(msgs)}


def describe(n: int, state: int) -> str:
    v = decode(n, state)
    msgs = sorted(v["msgs"], key=lambda m: (m[0] != "Prepared", m))
    msg_txt = ", ".join(f"Prepared(rm{m[1]})" if m[0] == "Prepared" else m[0] for m in msgs)
    prep = ", ".join(f"rm{i}" for i in sorted(v["tmPrepared"]))
    rms = ", ".join(f"rm{i}={s}" for i, s in enumerate(v["rmState"]))
    return f"tmState={v['tmState']} rmState=[{rms}] tmPrepared={{{prep}}} msgs={{{msg_txt}}}"


def type_ok(n: int, state: int) -> bool:
    """TPTypeOK for a packed state: only tmState = 3 or stray high bits can be ill-typed."""
    return state >= 0 and state >> _shift(n) == 0 and state & _TM_MASK != 3


def tc_consistent(n: int, state: int) -> bool:
    """TCConsistent: no RM has committed while another has aborted."""
    states = [rm_field(state, i) & _RM_STATE for i in range(n)]
    return not (COMMITTED in states and ABORTED in states)


def _mix64(x: int) -> int:
    """A deterministic 64-bit mix (splitmix64 finaliser), folding wider ints 64 bits at a time."""
    h = 0
    while True:
        z = (h ^ (x & _M64)) + 0x9E3779B97F4A7C15 & _M64
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & _M64
        z = (z ^ (z >> 27)) * 0x94D049BB133111EB & _M64
        h = z ^ (z >> 31)
        x >>= 64
        if not x:
            return h


# ---------------------------------------------------------------------------------------------

class TwoPhaseSpec:
    """TwoPhase with ``n_rms`` resource managers, implementing ``properties.spec.Spec``.

    ``fingerprint="identity"`` (default; needs n_rms <= 15) uses the packed state itself,
    ``fingerprint="mix"`` a splitmix64 hash of it (to measure what a real hash costs).
    ``witness_scope="state"`` (default) declares that the witnesses are state predicates (the
    explorer may check them once per new state); ``"transition"`` makes the explorer check them
    on every transition, as for a spec whose witnesses look at the step."""

    def __init__(self, n_rms: int, *, flaw: str | None = None, fingerprint: str = "identity",
                 witness_scope: str = "state"):
        if n_rms < 1:
            raise ValueError("TwoPhase needs at least one RM")
        if flaw not in FLAWS:
            raise ValueError(f"unknown TwoPhase flaw {flaw!r}; known: {FLAWS[1:]}")
        self.n = n = n_rms
        self.flaw = flaw
        if witness_scope not in ("state", "transition"):
            raise ValueError(f"witness_scope is 'state' or 'transition', not {witness_scope!r}")
        self.witness_scope = witness_scope
        self.name = f"TwoPhase-{n}" + (f"[{flaw}]" if flaw else "")
        self._every = _all_prepared_mask(n)
        self._tm_commit_step = Step("TMCommit", ())
        self._tm_abort_step = Step("TMAbort", ())
        self._steps = {(a, rm): Step(a, (rm,)) for rm in range(n) for a in RM_ACTIONS}
        self._shifts = tuple(_shift(i) for i in range(n))
        # Per-RM tables: index (global bits << 4 | nibble) -> ((Step, delta), ...) with the delta
        # already shifted to the RM's nibble (successor = state + delta), compiled from the action
        # functions on a one-RM state (a per-RM action touches only its own nibble).
        rm_tables = []
        for rm in range(n):
            sh = _shift(rm)
            table = []
            for key in range(256):
                g, nib = key >> 4, key & 15
                state = g | (nib << sh)
                entries = []
                for a in RM_ACTIONS:
                    nxt = ACTION_FUNCTIONS[a](n, state, rm, flaw=flaw)
                    if nxt is not None:
                        assert nxt & ~(15 << sh) == state & ~(15 << sh), a  # own nibble only
                        entries.append((self._steps[a, rm], nxt - state))
                table.append(tuple(entries))
            rm_tables.append(table)
        # The fast path looks RMs up two at a time: for each global value g, for each pair of
        # RMs (2i, 2i+1), a table indexed by their byte (the last RM of an odd n alone).
        self._pair_tables = {}
        for g in range(16):
            groups = []
            for first in range(0, n, 2):
                rms = [r for r in (first, first + 1) if r < n]
                table = []
                for byte in range(1 << (4 * len(rms))):
                    entries = ()
                    for j, rm in enumerate(rms):
                        entries += rm_tables[rm][(g << 4) | ((byte >> (4 * j)) & 15)]
                    table.append(entries)
                groups.append((_shift(first), tuple(table)))
            self._pair_tables[g] = tuple(groups)
        self.successors = self._compile_successors()
        self._b0 = sum(1 << _shift(i) for i in range(n))     # bit 0 of every RM nibble
        self.violation, self.witnesses_hit = self._compile_checks()
        if fingerprint == "identity":
            if n > 15:
                raise ValueError("the identity fingerprint needs n_rms <= 15 (64 bits)")
            # The packed state is its own (injective, deterministic) fingerprint; operator.index
            # is a C function returning its int argument unchanged.
            self.fingerprint = operator.index
            self.fingerprint_is_state = True    # properties.spec.states_are_fingerprints
        elif fingerprint == "mix":
            self.fingerprint = _mix64
            self.fingerprint_is_state = False
        else:
            raise ValueError(f"unknown fingerprint kind {fingerprint!r}")

    # -- Spec protocol ---------------------------------------------------------------------------

    def initial_states(self) -> tuple[int, ...]:
        return (0,)                         # all RMs working, TM init, nothing prepared, no msgs

    def _compile_successors(self):
        """TPNext, fast: a closure over the compiled tables (same order as slow_successors)."""
        tables = self._pair_tables
        every = 0 if self.flaw == "tm-commit-unprepared" else self._every
        commit_step, abort_step = self._tm_commit_step, self._tm_abort_step
        to_commit, to_abort = TM_COMMITTED | _COMMIT_MSG, TM_ABORTED | _ABORT_MSG

        def successors(state: int) -> list[tuple[Step, int]]:
            out = []
            app = out.append
            g = state & 15
            if not g:                           # tmState = init, no Commit/Abort message
                if state & every == every:      # TMCommit: tmPrepared = RM
                    app((commit_step, state | to_commit))
                app((abort_step, state | to_abort))
            for sh, table in tables[g]:
                for st, d in table[(state >> sh) & 255]:
                    app((st, state + d))
            return out

        return successors

    # ``successors(state)`` (Spec protocol) is the closure set in __init__.

    def step(self, state: int, step: Step):
        fn = ACTION_FUNCTIONS.get(step.action)
        if fn is None:
            return None
        args = tuple(step.args)
        if step.action in ("TMCommit", "TMAbort"):
            if args:
                return None
            return fn(self.n, state, flaw=self.flaw)
        if len(args) != 1 or not isinstance(args[0], int) or not 0 <= args[0] < self.n:
            return None
        return fn(self.n, state, args[0], flaw=self.flaw)

    # ``violation(state, succ)`` (Spec protocol; TCConsistent) is a closure set in __init__.

    def property_ids(self) -> tuple[str, ...]:
        return ("TCConsistent",)

    def witness_ids(self) -> tuple[str, ...]:
        return WITNESSES

    # ``witnesses_hit(prev, step, nxt, wanted)`` (Spec protocol) is a closure set in __init__.

    def _compile_checks(self):
        """The property and the witnesses as closures over the RM bit mask (fast, no ``self``);
        ``tc_consistent`` and ``decode`` are the readable equivalents (tests compare them)."""
        b0 = self._b0                       # bit 0 of every RM nibble
        holds_by_code = _HOLDS

        def violation(state: int, succ) -> str | None:
            """TCConsistent: no RM committed (rmState 10) while another aborted (rmState 11)."""
            hi = (state >> 1) & b0          # per RM: rmState bit 1 (committed or aborted)
            ab = hi & state                 # per RM: aborted
            if ab and ab != hi:             # some aborted and some committed
                return "TCConsistent"
            return None

        def witnesses_hit(prev, step, nxt: int, wanted: Iterable[str]) -> list[str]:
            """State predicates on ``nxt`` (``prev`` and ``step`` are not used, see
            witness_scope): some-abort, all-aborted, some-commit, all-committed."""
            hi = (nxt >> 1) & b0
            if not hi:
                return []
            ab = hi & nxt                   # aborted RMs
            co = hi ^ ab                    # committed RMs
            holds = holds_by_code[(ab != 0) | (ab == b0) << 1 | (co != 0) << 2 | (co == b0) << 3]
            if holds.isdisjoint(wanted):
                return []
            return [w for w in WITNESSES if w in holds and w in wanted]

        return violation, witnesses_hit

    def action_names(self) -> tuple[str, ...]:
        return ACTIONS

    def canonical(self, state: int) -> int:
        """RM symmetry: the representative with the RM nibbles sorted (ascending)."""
        g = state & 15
        nibs = sorted((state >> sh) & 15 for sh in self._shifts)
        for sh, nib in zip(self._shifts, nibs):
            g |= nib << sh
        return g

    # fingerprint is set per instance in __init__ (identity or mix)

    # -- extras ----------------------------------------------------------------------------------

    def describe(self, state: int) -> str:
        return describe(self.n, state)

    def decode(self, state: int) -> dict:
        return decode(self.n, state)

    def __repr__(self) -> str:
        return f"TwoPhaseSpec({self.n}" + (f", flaw={self.flaw!r})" if self.flaw else ")")
