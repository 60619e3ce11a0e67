# songlab: the two commands are `make lab` and `make test`.
#
# Python: songlab supports 3.11, 3.12 and 3.13. .venv is made with the newest of them on
# the PATH (or PYTHON=/path/to/python3.X); .ci/pythons finds them by running each one.
# `make test` runs the full suite there, then a fast subset on every other supported
# Python found on the machine (PATH, pyenv), each in its own .venv-X.Y.
ifeq ($(origin PYTHON),undefined)
FOUND  := $(shell bash .ci/pythons newest 2>/dev/null)
PYTHON := $(lastword $(FOUND))
PYVER  := $(firstword $(FOUND))
else
PYVER  := $(firstword $(shell bash .ci/pythons check "$(PYTHON)" 2>/dev/null))
endif
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PORT   ?= 0
# pytest-xdist workers for the full suite (--dist loadfile: a notebook's cells stay in one kernel).
# Three on two cores: many tests wait on a sandbox, a subprocess or a kernel, and a third worker
# fills those waits (measured idle: 261 s with 3 against about 350 s with 2)
WORKERS ?= 3
# pytest with PYTHONDONTWRITEBYTECODE unset (this machine and many CI images set it): pytest
# then keeps its assertion-rewritten test modules in __pycache__ and every later pytest process
# (each xdist worker, each run) loads them instead of parsing and rewriting 200 test files.
# Collecting the suite took 21-24 s a process without that cache against 12 s with it.
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest
# workers of each other Python's subset: the subsets run side by side (.ci/test-pythons)
PY_WORKERS ?= 2
# What test-pythons runs on each other interpreter: what depends on the interpreter, nothing else.
#  - tests/client: the sync and async clients (asyncio, anyio, httpx, typing) over the sandbox
#  - tests/sandbox/http: the sandbox's HTTP contract (FastAPI, uvicorn, msgspec on that Python)
#  - tests/test_codec.py, tests/audio/test_audio_codec.py: the codec (PyAV, soundfile wheels)
#  - tests/listening/test_crowd_service.py: the served campaign (Starlette, SQLAlchemy, SQLite)
#  - tests/install/test_wheel.py (marked every_python): the wheel installed in a fresh venv of
#    THAT Python (it uses sys.executable), then `songlab sandbox`, `songlab report --demo`
#    (ledger, pandas, pyarrow, matplotlib end to end) and nbval of the copied quickstart
#  - notebooks/01_quickstart.ipynb: a kernel of that Python runs the first notebook
# Tests marked slow are left out (the thousand-create batch, mypy over user code): they test
# volume and typing, not the interpreter. The ledger, sandbox engine, storage and process tests
# ran here before (570 s under load per Python); their interpreter-dependent part is the wheel test.
FAST_SUBSET := tests/client tests/sandbox/http tests/test_codec.py tests/audio/test_audio_codec.py \
	tests/listening/test_crowd_service.py \
	tests/install/test_wheel.py notebooks/01_quickstart.ipynb --nbval \
	--nbval-sanitize-with notebooks/sanitize.cfg -m "every_python or not slow" \
	-p no:cacheprovider -q -n $(PY_WORKERS) --dist loadfile

.PHONY: lab screenshots test check suite docs test-fast test-pythons measure-tests lint sandbox browser-deps java-deps postgres-deps bench clean

# .venv belongs to one Python: made (or remade, when PYTHON's version changed) here
$(VENV)/.python-$(PYVER):
	@bash .ci/pythons check "$(PYTHON)" >/dev/null
	@if [ -x $(PY) ] && [ "$$($(PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" != "$(PYVER)" ]; then \
	  echo "make: .venv is not Python $(PYVER) (PYTHON=$(PYTHON)): making it again"; rm -rf $(VENV); fi
	@[ -x $(PY) ] || { echo "$(PYTHON) -m venv $(VENV)   # Python $(PYVER)"; $(PYTHON) -m venv $(VENV); }
	@rm -f $(VENV)/.python-*; touch $@

# --compile-bytecode: uv (unlike pip) writes no .pyc by default, and where PYTHONDONTWRITEBYTECODE
# is set (this machine, many CI images) every process then compiles what it imports from source:
# `import songlab.audio, songlab.ledger, songlab.sandbox.http.server` took 16-27 s without .pyc
# against 5 s with them under load, in each pytest worker, kernel and subprocess the suite starts
# --excludes: what .ci/uv-excludes.txt says (a dependency nothing here uses that costs 2 s of
# CPU in every process importing nbformat); an older .venv that has it loses it here
$(STAMP): pyproject.toml setup.py .ci/uv-excludes.txt $(VENV)/.python-$(PYVER)
	$(PY) -m pip install --quiet --upgrade pip uv
	$(VENV)/bin/uv pip install --quiet --compile-bytecode --python $(PY) \
	  --excludes .ci/uv-excludes.txt -e '.[lab,test]'
	$(VENV)/bin/uv pip uninstall --quiet --python $(PY) -r .ci/uv-excludes.txt 2>/dev/null || true
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (songlab)" >/dev/null
	@touch $(STAMP)

## lab: create .venv, install, start JupyterLab on notebooks/ (any user, root included) and print
##   the address to open with its token. LAB_PORT=8899 (else the first free one from 8888),
##   LAB_IP=0.0.0.0 (reach a container from its host), LAB_BROWSER=no (open no browser)
LAB_PORT    ?=
LAB_IP      ?= 127.0.0.1
LAB_BROWSER ?= yes
lab: $(STAMP)
	LAB_PORT=$(LAB_PORT) LAB_IP=$(LAB_IP) LAB_BROWSER=$(LAB_BROWSER) $(PY) scripts/lab.py

## screenshots: the README's pictures (docs/img/*.png), made by headless Chromium driving JupyterLab
screenshots: $(STAMP) browser-deps
	$(PY) scripts/screenshots.py

## test: every proof, in timed phases (docs/development.md): install (.venv and the Debian packages
##   the tests need: Chromium, Java, PostgreSQL), check (ruff, mypy --strict, the docs site), suite (pytest and the notebooks
##   under nbval on .venv's Python), pythons (the fast subset on every other supported Python).
##   Each phase prints its wall time as it ends; the last line is a table of them.
PHASES := .make-test-phases
TIMED  := bash .ci/timed $(PHASES)
test:
	@rm -f $(PHASES)
	@$(TIMED) install $(MAKE) --no-print-directory $(STAMP) browser-deps java-deps postgres-deps
	@$(TIMED) check $(MAKE) --no-print-directory check
	@$(TIMED) suite $(MAKE) --no-print-directory suite
	@$(TIMED) pythons $(MAKE) --no-print-directory test-pythons
	@$(TIMED) --report

## check: ruff (lint and format), mypy --strict over src/songlab, and the docs site built strictly
check: $(STAMP)
	$(PY) -m ruff check src tests benchmarks scripts
	$(PY) -m ruff format --check src tests benchmarks scripts
	@# the suite is collected once beside mypy (one core each): that fills pytest's rewrite cache
	@# (see PYTEST), so the workers of `make suite` collect in about half the time
	@$(PYTEST) tests notebooks --nbval -p no:cacheprovider -q -m "" --collect-only >/dev/null 2>&1 </dev/null & warm=$$!; \
	  echo "$(PY) -m mypy src/songlab"; $(PY) -m mypy src/songlab; status=$$?; wait $$warm; exit $$status
	$(MAKE) --no-print-directory docs

## suite: pytest over tests/ and the notebooks (nbval), everything, slow and browser tests included;
##   the other Pythons' venvs are made in the background meanwhile (.venv/prepare-pythons.log)
suite: $(STAMP)
	@$(PY) -m compileall -q src  # songlab's own .pyc (editable: not in site-packages), see $(STAMP)
	@bash .ci/test-pythons --prepare $(PYVER) "$(PYTHON)" >$(VENV)/prepare-pythons.log 2>&1 </dev/null & prep=$$!; \
	  $(PYTEST) tests notebooks --nbval --nbval-sanitize-with notebooks/sanitize.cfg -m "" \
	    -p no:cacheprovider -n $(WORKERS) --dist loadfile --no-loadscope-reorder --durations=30; \
	    status=$$?; \
	  wait $$prep; exit $$status

## docs: the documentation site (mkdocs, Material theme) built into site/ with --strict: a link to a
##   missing page or anchor fails it
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet

## test-pythons: FAST_SUBSET on every supported Python but .venv's, each in .venv-X.Y
##   (OTHER_PYTHONS="/path/python3.12 ..." picks them, OTHER_PYTHONS=none skips them)
test-pythons: $(STAMP)
	@bash .ci/test-pythons $(PYVER) "$(PYTHON)" -- $(FAST_SUBSET)

## test-fast: the edit-run loop: ruff, then
##   pytest without the notebooks, the browser, install, reliability and external suites or
##   the tests marked slow (those start kernels, papermill, mypy or sandbox processes, or take
##   half a minute of a worker); `make test` runs everything
FAST_SKIP := --ignore=tests/notebooks --ignore=tests/browser --ignore=tests/install \
	--ignore=tests/reliability --ignore=tests/external
test-fast: $(STAMP)
	$(PY) -m ruff check src tests benchmarks scripts
	$(PY) -m ruff format --check src tests benchmarks scripts
	@$(PY) -m compileall -q src
	$(PYTEST) tests $(FAST_SKIP) -x -q -p no:cacheprovider \
	  -n $(WORKERS) --dist loadfile

## measure-tests: run the whole suite once measuring each test's CPU and wall seconds, and write
##   tests/cpu-seconds.json (the tests measured over tests/_measured.py's threshold are slow:
##   left out of test-fast and a bare pytest) and tests/file-seconds.json (make suite starts
##   the longest files first). Run it after adding or changing heavy tests.
measure-tests: $(STAMP)
	@rm -rf .cpu-profile
	-CPU_PROFILE_DIR=$(CURDIR)/.cpu-profile $(PYTEST) tests notebooks --nbval \
	  --nbval-sanitize-with notebooks/sanitize.cfg -m "" -p tests._cpu_profile \
	  -p no:cacheprovider -q -n $(WORKERS) --dist loadfile --no-loadscope-reorder
	$(PY) -m tests._cpu_profile .cpu-profile
	@rm -rf .cpu-profile

lint: $(STAMP)
	$(PY) -m ruff check src tests benchmarks scripts
	$(PY) -m ruff format --check src tests benchmarks scripts

## sandbox: run the embedded service in the foreground
sandbox: $(STAMP)
	$(PY) -m songlab.sandbox --port $(PORT)

## browser-deps: Debian's chromium for the JupyterLab browser test, where we can install it
browser-deps:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian chromium for the browser test"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	    || echo "browser test will be skipped: apt-get could not install chromium"; \
	else echo "browser test will be skipped: chromium is absent and apt-get needs root"; fi

## java-deps: a Java runtime for the ledger's Spark backend (pyspark starts a JVM): Debian's
##   openjdk-17-jre-headless where `java` is missing and we can install it
java-deps:
	@if command -v java >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian openjdk-17-jre-headless for the Spark tests"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null) \
	    || echo "Spark tests will fail: apt-get could not install openjdk-17-jre-headless"; \
	else echo "Spark tests will be skipped: java is absent and apt-get needs root"; fi

## postgres-deps: Debian's PostgreSQL server for the served campaign's tests (a real server they
##   start themselves, as the postgres user when run as root), where it is missing and we can install it
postgres-deps:
	@if ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian postgresql for the served campaign's tests"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) \
	    || echo "PostgreSQL tests will be skipped: apt-get could not install postgresql"; \
	else echo "PostgreSQL tests will be skipped: postgresql is absent and apt-get needs root"; fi

bench: $(STAMP) java-deps
	@for f in benchmarks/*.py; do echo "== $$f"; $(PY) $$f | tail -1; done

clean:
	rm -rf $(VENV) .venv-3.* build dist site src/*.egg-info .pytest_cache .ruff_cache $(PHASES)
