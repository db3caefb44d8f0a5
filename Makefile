# urlsan — `make test` and `make run` are the two commands README starts with.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.urlsan-installed
EXTRAS ?= proxy,test,peers,dask

.PHONY: install test lint typecheck pytest run bench bench-proxy check-all clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# Strict editable mode: mypy cannot follow setuptools' default editable finder
# through the package-dir mapping (core/ -> urlsan.core, addon/ -> urlsan.addon).
$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install -q -e '.[$(EXTRAS)]' --config-settings editable_mode=strict
	@touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy -p urlsan.core -p urlsan.addon

pytest: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

test: lint typecheck pytest

# Start the sanitizing proxy on 127.0.0.1:8080 with an audit log.
run: $(STAMP)
	$(VENV)/bin/urlsan proxy --set urlsan_log=urlsan-audit.jsonl

bench: $(STAMP)
	$(PY) bench/core.py
	$(PY) bench/cli.py --quick

bench-proxy: $(STAMP)
	$(PY) bench/proxy.py

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .pytest_cache .ruff_cache
