"""Exit codes and the one bad-input exception of every ``kipcheck`` command.

``cli.py``, ``lint.py`` and ``campaign/cli.py`` import them from here (no module of the CLI
imports another for its error type).  The codes, as the README documents them:

- 0 ``EXIT_OK``: no violation (``check``: the correct design holds, every variant is caught);
- 1 ``EXIT_VIOLATION``: a property is violated, or a check failed (``lint-config``: a security
  warning); never used for bad input or a broken environment;
- 2 ``EXIT_BAD_INPUT``: bad input (an unknown name, a malformed file, an unwritable output, an
  empty selection) or an environment that cannot run the command (a missing package, no Java),
  always with one line on stderr.  An output that could not be written once the work is done
  (``outputs.write_output``) also gives 2, unless a violation was found: 1 outranks it, and
  the line on stderr names the missing output;
- 3 ``EXIT_INCONCLUSIVE``: no verdict either way: ``prove`` found neither a proof nor a
  counterexample; ``explore`` stopped early (``--max-states``, ``--max-depth``) with no
  violation; ``check`` left a variant unchecked (its home configuration was not selected);
- 4 ``EXIT_WITNESS_MISSING``: a complete search found no violation, but a witness (a
  "sometimes" predicate) was never reached: the model may be doing nothing where it should,
  so "no violation" proves little.  Distinct from 1: nothing was violated;
- 130 ``EXIT_INTERRUPTED``: Ctrl-C; the work done so far is printed or kept.

Where several apply, the lowest non-zero code other than 2 wins (a violation outranks an
unchecked variant, which outranks a missing witness); 2 wins over 3 and 4.
"""
from __future__ import annotations

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_BAD_INPUT = 2
EXIT_INCONCLUSIVE = 3
EXIT_WITNESS_MISSING = 4
EXIT_INTERRUPTED = 130


class BadInput(Exception):
    """Bad input from the user, or an environment that cannot run the command: printed as one
    line on stderr (``kipcheck: <message>``), exit code 2."""
