#!/usr/bin/env bash
# Creates .venv and installs fred-fabric (editable) with the given extras.
# Installs Icarus Verilog, and clang for Verilator's models, through apt-get when they are
# missing and we are root.
set -euo pipefail
extras="${1:-hw,plot,dev}"
cd "$(dirname "$0")/.."
can_apt() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; }
updated=""
apt_install() {
    if [ -z "$updated" ]; then apt-get update -qq; updated=1; fi
    apt-get install -y -qq "$@" >/dev/null
}
if ! command -v iverilog >/dev/null 2>&1; then
    if can_apt; then
        echo "bootstrap: installing Icarus Verilog (apt-get)"
        apt_install iverilog
    else
        echo "bootstrap: iverilog not found and not root; Icarus benches will be skipped" >&2
    fi
fi
# Verilator's models compile faster with clang than with g++ (about 2.5 times as fast
# at -O3) and run a little faster (docs/cosim.md); without it they build with g++.
if ! compgen -c clang++ >/dev/null 2>&1; then
    if can_apt; then
        echo "bootstrap: installing clang (apt-get), the C++ compiler for Verilator's models"
        apt_install clang || echo "bootstrap: clang not installed; Verilator builds use g++" >&2
    else
        echo "bootstrap: clang++ not found and not root; Verilator builds use g++" >&2
    fi
fi
if [ ! -x .venv/bin/python ]; then
    echo "bootstrap: creating .venv"
    python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[${extras}]"
