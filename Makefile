# Every target installs what it needs into .venv first (idempotent), so each one
# works on a fresh machine that has python3 with venv.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=
# The environment itself lives outside the work tree (one per checkout, keyed by its path) and
# .venv is a symlink to it: tools that scan the tree (grep -r, the project's rule checks) then
# do not read the installed packages as if they were the project's code.
VENV_HOME ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/kipcheck/venvs/$(shell pwd | cksum | cut -d' ' -f1)

.PHONY: venv check test lint install-check test-slow test-spark test-large bench java-check clean

venv: $(STAMP)

# Create the virtual environment only if it is missing.
$(PY):
	@if [ -e $(VENV) ] && [ ! -L $(VENV) ]; then \
	    echo "$(VENV) is a directory from an older set-up: remove it (rm -rf $(VENV)) and run make again" >&2; exit 2; fi
	mkdir -p $(VENV_HOME)
	$(PYTHON) -m venv $(VENV_HOME)
	ln -sfn $(VENV_HOME) $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# (Re-)install only when pyproject.toml is newer than the stamp.
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

check: venv
	$(VENV)/bin/kipcheck check

# On every core (pytest-xdist, work stealing: the long tests do not queue behind one worker).
test: venv
	$(PY) -m pytest -n auto --dist worksteal $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check .

# A non-editable install into a fresh environment, run from an empty directory (CI runs it).
install-check:
	bash scripts/check-install

test-slow: venv
	$(PY) -m pytest -m "slow and not large" $(PYTEST_ARGS)

# The Spark tests (a local JVM; Java 17): killed workers, streaming, explore --spark counts.
test-spark: venv java-check
	$(PY) -m pytest -m "spark and not large" $(PYTEST_ARGS)

# Beyond CI's budget (about half an hour on 2 cores): explore --spark on zk-small and kraft-small.
test-large: venv java-check
	$(PY) -m pytest -m large -s $(PYTEST_ARGS)

bench: venv
	$(PY) -m bench.explore

bench-stateful: venv
	$(PY) -m bench.stateful

java-check:
	bash scripts/require-java

clean:
	rm -rf $(VENV_HOME) $(VENV) build *.egg-info .pytest_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
