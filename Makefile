# Two commands on a fresh machine:  `make run`  and  `make test`.
PYTHON  ?= python3
VENV    := .venv
GEN     := .venv-gen
BIN     := $(abspath $(VENV))/bin
CORES   ?= 2
UI_PORT ?= 5000
# The AlgoLisp reference executor, a test oracle only (see pyproject.toml's test extra).
ALGOLISP_ORACLE := program-synthesis==0.1.2

# Pipeline commands (`tprepro`, `snakemake`, `dvc`) come from .venv; the data
# stage re-executes itself in .venv-gen, the generator's pinned environment.
export PATH := $(BIN):$(PATH)
export TPREPRO_GENERATE_PYTHON := $(abspath $(GEN))/bin/python

.PHONY: help install system-deps run dvc-commit dvc-yaml docs-plan ui test test-fast bench clean

## help: list these targets
help:
	@grep -E '^## [a-z-]+:' $(MAKEFILE_LIST) | sed -E 's/^## ([a-z-]+): /  \1\t/' | expand -t 14

# A venv's scripts and editable install point at the folder it was made in. Its stamp holds that
# folder: in a copied checkout the stamps differ, so a target that needs a venv makes it anew for this
# folder, saying so (a recipe: `make -n` and `make help` delete nothing).
made_elsewhere = $(and $(wildcard $(1)/.installed),$(filter-out $(CURDIR),$(shell cat $(1)/.installed)))
remake_here = $(if $(call made_elsewhere,$(1)),@echo "$(1) was made for $(call made_elsewhere,$(1)): deleting it to make it anew here"; rm -rf $(1))
$(foreach venv,$(VENV) $(GEN),$(if $(call made_elsewhere,$(venv)),$(eval $(venv)/.installed: made-elsewhere)))
.PHONY: made-elsewhere

## install: the pipeline's venv (.venv) and the generator's (.venv-gen), then the offline DVC plots page
# The two venvs install side by side (-j2): the generator's 40 s hide behind the pipeline's minutes.
install:
	@$(MAKE) --no-print-directory -j2 $(VENV)/.installed $(GEN)/.installed
	@$(MAKE) --no-print-directory .dvc/offline_plots.html

# torch is pinned (==2.13.0) in pyproject.toml: pip takes the CPU build from local disk.
$(VENV)/.installed: pyproject.toml
	$(call remake_here,$(VENV))
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[test]'
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps $(ALGOLISP_ORACLE)
	echo "$(CURDIR)" > $@

# `dvc plots show` draws offline: .dvc/config names this page, which carries the Vega libraries.
.dvc/offline_plots.html: $(VENV)/.installed
	$(BIN)/tprepro plots-template --out $@

$(GEN)/.installed: requirements/generate.txt pyproject.toml
	$(call remake_here,$(GEN))
	$(PYTHON) -m venv $(GEN)
	$(GEN)/bin/pip install --quiet --disable-pip-version-check -r requirements/generate.txt
	$(GEN)/bin/pip install --quiet --disable-pip-version-check --no-deps -e .
	echo "$(CURDIR)" > $@

## run: install, then the tiny CPU pipeline end to end (data -> train -> evaluate -> tables -> report)
run: install
	$(BIN)/snakemake --cores $(CORES)
	@$(MAKE) --no-print-directory dvc-commit
	@echo "tables: results/tables/  report: results/report.html  figures: results/figures/, */interpret/"
	@echo "MLflow: make ui"

## dvc-commit: record in dvc.lock what Snakemake built, so that `dvc status` agrees with it (also repairs an interrupted one)
# `dvc commit --force --no-relink`: --no-relink leaves every output as Snakemake wrote it (a relink rewrites
# the files, and Snakemake would then plan their consumers again). A dvc.lock that an interrupted commit
# left truncated is moved aside first (kept) and every stage recorded again; DVC's failure is make's.
dvc-commit:
	@$(BIN)/tprepro dvc-commit

## dvc-yaml: regenerate dvc.yaml from the stages the experiments declare (after editing one)
dvc-yaml: $(VENV)/.installed
	$(BIN)/tprepro dvc-yaml --out dvc.yaml

## docs-plan: regenerate the plan figures docs/plan.md and docs/rehearsal.md quote (after a measurement changes)
docs-plan: $(VENV)/.installed
	$(BIN)/python -m tprepro.plan.quoted

# The single-node SLURM the tests start (tests/slurm/local_slurm.sh) needs Debian's
# SLURM and munge packages; apt-get runs only when one of them is missing.
SLURM_PACKAGES := slurmctld slurmd slurm-client munge
# Headless Chromium for the MLflow UI checks (tests/tracking/test_mlflow_server.py), and its driver for
# the one that clicks README's comparison path through Selenium.
UI_PACKAGES := chromium chromium-driver
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

## ui: the MLflow UI on this project's store; it prints each experiment's training runs, the address to open
# MLflow 3 opens on its GenAI view and folds runs under their parent: `tprepro ui-links` gives each experiment's
# training runs in the training view, flat (tick two, Compare).
ui:
	@test -x $(BIN)/mlflow || { echo "run make install first"; exit 2; }
	@echo "MLflow UI: http://127.0.0.1:$(UI_PORT)/#/experiments?workflowType=machine_learning  (Ctrl-C stops it)"
	-@$(BIN)/tprepro ui-links --ui http://127.0.0.1:$(UI_PORT)
	$(BIN)/mlflow ui --backend-store-uri sqlite:///mlflow.db --host 127.0.0.1 --port $(UI_PORT)

## system-deps: Debian's SLURM, munge and Chromium, which the tests use (apt-get only when missing)
system-deps:
	@for pkg in $(SLURM_PACKAGES) $(UI_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$pkg 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$pkg"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

## test: install, then the whole test suite (slow end-to-end checks included)
# Two workers, each taking whole test files (module fixtures such as the SLURM run are built once):
# most tests are one process waiting on another, so two at a time fill CI's two cores.
test: install system-deps
	$(BIN)/python -m pytest -n 2 --dist loadfile

## test-fast: the unit tests only
test-fast: install
	$(BIN)/python -m pytest -m "not slow"

## bench: the self-contained speed benchmarks (tables printed, JSON under results/benchmarks/)
# The learning studies (data_order.py, learning.py, module_screen.py) train for tens of minutes to hours
# and the shard and summarization benchmarks read a finished run: each says its command line at its top.
bench: install
	$(BIN)/python -m benchmarks.train_throughput
	$(BIN)/python -m benchmarks.decode

## clean: remove everything `make run` made (data, models, results, MLflow store, DVC and Snakemake state); the venvs stay
clean:
	rm -rf data mathematics logs two_variable n2f summarization \
	       results/tables results/figures results/interpret results/n2f results/plots \
	       results/metrics.json results/*_metrics.json results/report.html dvc_plots \
	       mlflow.db mlflow.db.lock mlartifacts mlruns .snakemake dvc.lock .dvc/tmp .dvc/cache .dvc/offline_plots.html
