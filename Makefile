# urlsan — `make test` and `make run` are the two commands README starts with.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.urlsan-installed
EXTRAS ?= proxy,test,peers,dask,fuzz

.PHONY: install test lint typecheck pytest pytest-pure run bench bench-proxy check-all clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): $(PY) pyproject.toml setup.py core/_speedups.c
	$(PY) -m pip install -q -e '.[$(EXTRAS)]'
	@touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(PY) tools/typecheck.py

pytest: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

test: lint typecheck pytest

# The pure-Python driver alone (core/compiled.py): what runs where no C compiler was found.
pytest-pure: $(STAMP)
	URLSAN_NO_EXTENSIONS=1 $(PY) -m pytest tests/core tests/cli $(PYTEST_ARGS)

# Start the sanitizing proxy on 127.0.0.1:8080 with an audit log.
run: $(STAMP)
	$(VENV)/bin/urlsan proxy --set urlsan_log=urlsan-audit.jsonl

bench: $(STAMP)
	$(PY) bench/core.py
	$(PY) bench/cli.py --quick

bench-proxy: $(STAMP)
	$(PY) bench/proxy.py

# Longer budgets for tests/hardening (issue #5, docs/security.md): ~4 min per Python.
HARDENING_BUDGET ?= URLSAN_FUZZ_EXAMPLES=3000 URLSAN_FUZZ_SECONDS=60 \
	URLSAN_LOAD_REQUESTS=20000 URLSAN_LOAD_CONNECTIONS=50

check-all: $(STAMP)
	env $(HARDENING_BUDGET) $(PY) -m pytest tests/hardening $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .pytest_cache .ruff_cache
