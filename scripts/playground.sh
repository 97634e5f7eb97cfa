#!/usr/bin/env bash
# The example console without containers: the server and a worker, two processes on one SQLite
# file (.cache/playground/playground.db), with the offline demo model (a real one when
# OPENAI_API_KEY is set). Open http://127.0.0.1:3000; Ctrl-C stops both.
#
# Installs what is missing first: the Python workspace (uv, from the lock file) and the UI's
# npm packages (from package-lock.json), and builds the UI when its sources are newer than the
# build. Settings: see .env.example (PSYCH_STORE, PLAYGROUND_PORT, ...).
set -euo pipefail
source "$(dirname "$0")/bootstrap.sh"
cd "$psych_root"
if ! command -v npm >/dev/null 2>&1; then
    echo "The console's UI needs Node.js 20 and npm: install them and run this again." >&2
    exit 2
fi
uv sync --frozen --all-packages --quiet
if [ ! -e node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund --loglevel=error
fi
dist=apps/playground/ui/dist/index.html
if [ ! -e "$dist" ] || [ -n "$(find apps/playground/ui/src apps/playground/ui/index.html -newer "$dist" -print -quit)" ]; then
    npm run build --silent --workspace apps/playground/ui >/dev/null
fi
exec uv run --frozen --no-sync python -m psych_playground dev
