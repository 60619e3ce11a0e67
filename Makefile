# songlab: the two commands are `make lab` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PORT   ?= 0

.PHONY: lab test test-fast lint sandbox browser-deps bench clean

$(PY):
	@$(PYTHON) -c "import sys; assert sys.version_info[:2] == (3, 11), sys.version" 2>/dev/null || { echo "make: songlab needs Python 3.11; set PYTHON=/path/to/python3.11"; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[lab,test]'
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (songlab)" >/dev/null
	@touch $(STAMP)

## lab: create .venv, install, open JupyterLab on notebooks/ against the embedded sandbox
lab: $(STAMP)
	cd notebooks && ../$(PY) -m jupyter lab

## test: create .venv if needed, lint, run pytest and the notebooks (nbval)
test: $(STAMP) browser-deps
	$(PY) -m ruff check src tests benchmarks
	$(PY) -m mypy src/songlab/client
	$(PY) -m pytest tests notebooks --nbval --nbval-sanitize-with notebooks/sanitize.cfg -p no:cacheprovider

## test-fast: pytest without notebooks or the browser test
test-fast: $(STAMP)
	$(PY) -m pytest tests -m "not browser" -x -q

lint: $(STAMP)
	$(PY) -m ruff check src tests benchmarks

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

bench: $(STAMP)
	@for f in benchmarks/*.py; do echo "== $$f"; $(PY) $$f | tail -1; done

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .ruff_cache
