# The project's two commands: `make demo` and `make test` (both set up .venv on first use).
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q -e '.[test]'
	touch $(STAMP)

# make demo NPROC=2 (or ARGS="--nproc 2 ..."): the same training, data-parallel over 2
# processes (DistributedDataParallel over MPI)
demo: $(STAMP)
	$(VPY) -m ember.examples.gpt $(if $(NPROC),--nproc $(NPROC)) $(ARGS)

test: $(STAMP)
	$(VPY) -m pytest -n 2 tests

bench: $(STAMP)
	$(VPY) -m benchmarks

clean:
	rm -rf $(VENV) build *.egg-info
