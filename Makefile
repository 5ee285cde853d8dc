# Every target installs what it needs into .venv first (idempotent), so each one
# works on a fresh machine that has python3 with venv.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: venv check test test-slow test-spark bench java-check clean

venv: $(STAMP)

# Create the virtual environment only if it is missing.
$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# (Re-)install only when pyproject.toml is newer than the stamp.
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

check: venv
	$(VENV)/bin/kipcheck check

test: venv
	$(PY) -m pytest $(PYTEST_ARGS)

test-slow: venv
	$(PY) -m pytest -m slow $(PYTEST_ARGS)

# The Spark tests (a local JVM; Java 17): killed workers, streaming, explore --spark counts.
test-spark: venv java-check
	$(PY) -m pytest -m spark $(PYTEST_ARGS)

bench: venv
	$(PY) -m bench.explore

bench-stateful: venv
	$(PY) -m bench.stateful

java-check:
	bash scripts/require-java

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
