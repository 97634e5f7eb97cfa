#!/usr/bin/env bash
# The quick start: the example agent, offline, with the fake model and the memory store.
set -euo pipefail
source "$(dirname "$0")/bootstrap.sh"
cd "$psych_root"
uv sync --frozen --all-packages --quiet
exec uv run --frozen --no-sync python examples/quickstart.py
