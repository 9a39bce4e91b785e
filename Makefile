# The front door. The first `make demo` or `make test` creates .venv and installs
# what is needed (pip packages, and Icarus and clang via apt-get when missing and root).
PY      := .venv/bin/python
STAMP   := .venv/.installed
EXTRAS  := hw,plot,dev

.PHONY: demo test bench bench-quick formal verilog lint clean

$(STAMP): pyproject.toml
	@scripts/bootstrap.sh "$(EXTRAS)"
	@touch $@

demo: $(STAMP)
	$(PY) -m fredfab.sim.cli.demo

# --durations: every run ends with its slowest tests. Under CI (CI=true) tests/conftest.py
# adds a seed-chosen slice of the slow suite (README, "Tests").
test: $(STAMP)
	$(PY) -m pytest -n auto -q --durations=15

# `make bench QUICK=1` (or `make bench-quick`): fewer repeats and sizes.
bench: $(STAMP)
	$(PY) -m fredfab.sim.bench $(if $(QUICK),--quick)

bench-quick: $(STAMP)
	$(PY) -m fredfab.sim.bench --quick

# Every formal proof and its negative control (docs/formal.md): a summary table, and
# build/formal/summary.json. `make formal JOBS=2` runs two at once; FAST=1 only the proofs
# of the default test suite.
formal: $(STAMP)
	$(PY) -m fredfab.sim.formal --negative $(if $(JOBS),-j $(JOBS)) $(if $(FAST),--fast)

verilog: $(STAMP)
	.venv/bin/fred generate --ports 8 --m 3 --lanes 4 --dtype bf16
	.venv/bin/fred generate --ports 8 --m 3 --lanes 4 --dtype bf16 --packet

lint: $(STAMP)
	.venv/bin/ruff check hw model sim tests
	.venv/bin/ruff format --check hw model sim tests

clean:
	rm -rf build .pytest_cache .hypothesis .ruff_cache
