#!/usr/bin/env bash
# Creates .venv and installs fred-fabric (editable) with the given extras.
# Installs Icarus Verilog through apt-get when it is missing and we are root.
set -euo pipefail
extras="${1:-hw,plot,dev}"
cd "$(dirname "$0")/.."
if ! command -v iverilog >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "bootstrap: installing Icarus Verilog (apt-get)"
        apt-get update -qq && apt-get install -y -qq iverilog >/dev/null
    else
        echo "bootstrap: iverilog not found and not root; Icarus benches will be skipped" >&2
    fi
fi
if [ ! -x .venv/bin/python ]; then
    echo "bootstrap: creating .venv"
    python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[${extras}]"
