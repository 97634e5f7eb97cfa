#!/usr/bin/env bash
# The playground (`python -m psych_playground dev`) on a store made for one browser test
# session: with PSYCH_E2E_SEED set, first writes the runs the HTTP API cannot make into the
# store (apps/playground/e2e/seed.py stuck, before any worker could take them) and their ids
# into that file; then serves until the tests stop it (SIGTERM or SIGINT to the process group);
# then discards the store (the SQLite file, or the PostgreSQL schema), leaving nothing behind.
#
#   PSYCH_STORE=... PLAYGROUND_PORT=... [PSYCH_E2E_SEED=FILE] bash apps/playground/e2e/serve.sh
#
# Run from the repository root.
set -u

seed() { uv run --frozen --no-sync python apps/playground/e2e/seed.py --store "$PSYCH_STORE" "$@"; }

if [ -n "${PSYCH_E2E_SEED:-}" ]; then
    seed stuck >"$PSYCH_E2E_SEED" || exit 1
fi

# A handler, not an ignore: the servers still get the signal (handlers reset on exec), and
# this shell waits for them to stop before it discards the store.
trap ':' TERM INT

uv run --frozen --no-sync python -m psych_playground dev
status=$?
seed discard >&2
if [ -n "${PSYCH_E2E_SEED:-}" ]; then
    rm -f "$PSYCH_E2E_SEED"
    rmdir "$(dirname "$PSYCH_E2E_SEED")" 2>/dev/null || true # the session's folder, if empty
fi
exit "$status"
