"""Suite-wide hooks: missing simulators (tests/simulators.py) and the slow slice
(tests/slow_slice.py).

- ``@pytest.mark.needs("icarus", "verilator")``: checked before the test runs; a ToolMissing
  raised while it runs is treated the same. Missing tools skip the test, or fail it under CI.
- ``--slow-slice`` (on by default when CI is set): besides the default suite, run one
  seed-chosen shard of the slow suite. The shard is chosen once, in the process that starts
  the run, and handed to the xdist workers, so that every worker collects the same tests.
- ``@pytest.mark.installed`` (tests/test_installed.py: the wheel built, installed and run
  outside the checkout): runs under CI or with ``--installed-check``, and then first, so
  that under xdist it overlaps the rest of the suite instead of ending it.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import settings

from fredfab.sim.verify import cosim
from fredfab.sim.verify.toolchain import ToolMissing
from tests.simulators import require, tool_missing, under_ci
from tests.slow_slice import Slice, budget_seconds, choose, seed_from

_SLICE = pytest.StashKey[Slice]()
_CHOSEN = pytest.StashKey[frozenset[str]]()
_WORKER_KEY = "fred_slow_slice"
_DEFAULT_MARKEXPR = "not slow"  # pyproject's addopts


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--installed-check",
        action="store_true",
        help="also build the wheel, install it outside the checkout and run fred there "
        "(tests/test_installed.py; on when CI is set)",
    )
    parser.addoption(
        "--slow-slice",
        action="store_true",
        help="also run a seed-chosen slice of the slow suite (on when CI is set); "
        "FRED_SLOW_SEED and FRED_SLOW_BUDGET choose it",
    )


#: Property tests under CI: the same examples on every run (a failure is reproducible from the
#: log alone), no example database, and no per-example deadline on a shared machine.
settings.register_profile("fred-ci", derandomize=True, database=None, deadline=None)
if under_ci():
    settings.load_profile("fred-ci")

#: The suite's cocotb runs are short, so a Verilator build is mostly its C++ compile: the
#: suite compiles the models unoptimised (the sweep's P = 8 bench took 13.3 s from scratch
#: instead of 22.5 s at -O1). A model at -O0 runs slower (a 40,000-cycle packet soak by about
#: a quarter), which runs of a few seconds barely feel. Users' runs and the bench keep
#: cosim's default.
cosim.VERILATOR_OPT = "-O0"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "needs(*tools): tools the test runs (icarus, verilator, yosys, nextpnr-ecp5, sby); a "
        "missing one skips the test, or fails it when CI is set",
    )
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        chosen = workerinput.get(_WORKER_KEY)
        if chosen is not None:
            config.stash[_CHOSEN] = frozenset(chosen)
            config.option.markexpr = ""
        return
    wanted = config.getoption("slow_slice") or under_ci()
    # An explicit -m (say -m slow, or the bench's -m "not slow") is a deliberate choice of
    # tests: leave it alone.
    if not wanted or config.option.markexpr != _DEFAULT_MARKEXPR or _explicit_m(config):
        return
    slow = _collect_slow(config)
    chosen = choose(slow, seed_from(os.environ), budget_seconds(os.environ, slow))
    config.stash[_SLICE] = chosen
    config.stash[_CHOSEN] = frozenset(chosen.chosen)
    config.option.markexpr = ""  # the slice decides about slow tests, in modifyitems below


def _explicit_m(config: pytest.Config) -> bool:
    return any(
        a == "-m" or (a.startswith("-m") and len(a) > 2) for a in config.invocation_params.args
    )


def _collect_slow(config: pytest.Config) -> list[str]:
    """Node ids of the slow tests under this run's paths, from a collection-only subprocess
    (collection inside this process would have to happen before the workers start)."""
    cmd = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "slow"]
    cmd += ["-p", "no:xdist", "-p", "no:cacheprovider", *config.args]
    result = subprocess.run(
        cmd, cwd=config.invocation_params.dir, capture_output=True, text=True, check=False
    )
    if result.returncode not in (0, 5):  # 5: no tests collected
        raise pytest.UsageError(f"collecting the slow suite failed:\n{result.stdout}")
    return [line for line in result.stdout.splitlines() if "::" in line]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """xdist (controller side): give each worker the chosen shard."""
    chosen = node.config.stash.get(_SLICE, None)
    if chosen is not None:
        node.workerinput[_WORKER_KEY] = list(chosen.chosen)


def pytest_sessionstart(session: pytest.Session) -> None:
    chosen = session.config.stash.get(_SLICE, None)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if chosen is not None and reporter is not None:
        reporter.write_line(chosen.describe())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _installed_first_or_not_at_all(config, items)
    chosen = config.stash.get(_CHOSEN, None)
    if chosen is None:
        return
    keep, drop = [], []
    for item in items:
        slow = item.get_closest_marker("slow") is not None
        (drop if slow and item.nodeid not in chosen else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _installed_first_or_not_at_all(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The installed-package check runs under CI or when asked, and then before everything
    else (xdist hands out tests in collection order); otherwise it is deselected. Every xdist
    worker reorders alike, so their collections agree."""
    installed = [i for i in items if i.get_closest_marker("installed") is not None]
    if not installed:
        return
    rest = [i for i in items if i.get_closest_marker("installed") is None]
    if config.getoption("installed_check") or under_ci():
        items[:] = installed + rest
    else:
        config.hook.pytest_deselected(items=installed)
        items[:] = rest


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    chosen = config.stash.get(_SLICE, None)
    if chosen is not None:
        terminalreporter.write_line(chosen.describe())


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("needs"):
        require(*mark.args)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    try:
        return (yield)
    except ToolMissing as e:
        tool_missing(str(e))
