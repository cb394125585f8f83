# The project's two commands: `make demo` and `make test` (both set up .venv on first use).
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench fuzz soak clean sysdeps

$(STAMP): pyproject.toml
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q -e '.[test]'
	touch $(STAMP)

# make demo: python -m ember.examples.gpt (120 s of float32 training, then a KV-cache sample);
# make demo ARGS="--vs-torch" adds torch eager's tokens/s on the same model (torch needed).
# make demo NPROC=2 (or ARGS="--nproc 2 ..."): the same training, data-parallel over 2
# processes (DistributedDataParallel over MPI)
demo: $(STAMP)
	$(VPY) -m ember.examples.gpt $(if $(NPROC),--nproc $(NPROC)) $(ARGS)

test: $(STAMP) sysdeps
	$(VPY) -m pytest -n 2 tests

# System packages some tests use: Debian's chromium (the memory viewer's page is tested in a
# real browser), graphviz's `dot` (autograd graph rendering) and g++ (C++ extensions). As
# root with apt they are installed when missing; elsewhere those tests skip, unless
# EMBER_REQUIRE_BROWSER=1 (set by .ci/run) makes the browser test fail instead.
SYSPKGS := chromium:chromium dot:graphviz g++:g++
sysdeps:
	@missing=""; for pair in $(SYSPKGS); do cmd=$${pair%%:*}; pkg=$${pair#*:}; \
	  command -v $$cmd >/dev/null 2>&1 || missing="$$missing $$pkg"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing:$$missing"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing >/dev/null; } || \
	    echo "could not install$$missing: the tests that need them will skip"; \
	  else echo "not installed:$$missing (the tests that need them will skip)"; fi; fi

# the differential fuzzer over every case (tests/fuzz; `make test` runs 8 % of them at seed 0)
FUZZ_SEED ?= 0
fuzz: $(STAMP)
	$(VPY) tests/fuzz/fuzzer.py --seed $(FUZZ_SEED) --share 100 \
	  --show crash,wrong_value,accepted_bad,spurious_error,error_class

# the soak run (tests/soak): 10,000 GPT steps, a SIGKILL during a checkpoint save, resume
soak: $(STAMP)
	$(VPY) -m pytest -p no:warnings -m soak tests/soak -v

bench: $(STAMP)
	$(VPY) -m benchmarks

clean:
	rm -rf $(VENV) build *.egg-info
