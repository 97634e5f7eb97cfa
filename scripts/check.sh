#!/usr/bin/env bash
# The whole check: lint, types, import contracts, docs, and every test layer on 3.12 and 3.13.
# Extra arguments go to nox, e.g. `scripts/check.sh -s unit-3.12`.
set -euo pipefail
source "$(dirname "$0")/bootstrap.sh"
cd "$psych_root"
uv sync --frozen --all-packages --quiet
exec uv run --frozen --no-sync nox "$@"
