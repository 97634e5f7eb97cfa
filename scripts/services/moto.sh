#!/usr/bin/env bash
# moto's standalone server, speaking the DynamoDB and S3 APIs on loopback, for DynamoDBStore's
# and S3BlobStore's tests.
#
#   scripts/services/moto.sh start    install moto[server] if missing, start it (or reuse it)
#   scripts/services/moto.sh status   say whether it answers, and print the settings
#   scripts/services/moto.sh stop     stop the server this script started
#
# The server is moto's own application behind a lock (_moto_server.py says why): moto_server
# alone serves requests on parallel threads without making DynamoDB's writes atomic.
#
# Idempotent. moto[server] goes into its own virtual environment under .cache/moto/ (from
# PyPI), so syncing the project's environment never stops a running server. It binds
# 127.0.0.1 only and keeps everything in memory: stopping it forgets every table.
# The port is PSYCH_MOTO_PORT (default 4566). The tests read PSYCH_TEST_DYNAMODB_ENDPOINT and
# PSYCH_TEST_S3_ENDPOINT (the same server).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/../bootstrap.sh"
state="$psych_root/.cache/moto"
venv="$state/venv"
port="${PSYCH_MOTO_PORT:-4566}"
endpoint="http://127.0.0.1:$port"
# The version the tests were written against; moto's DynamoDB grows from release to release.
moto_version="5.2.5"

log() { echo "moto: $*" >&2; }

answers() {
    # moto's dashboard answers on every moto server (cheaply: data.json would dump every
    # table); anything else on the port is not ours.
    python3.12 - "$endpoint" <<'PY' >/dev/null 2>&1
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/moto-api/", timeout=5) as reply:
    sys.exit(0 if reply.status == 200 and b"moto" in reply.read().lower() else 1)
PY
}

install_missing() {
    if "$venv/bin/python" -c "import moto, flask" >/dev/null 2>&1 \
        && [ "$("$venv/bin/python" -c 'import moto; print(moto.__version__)')" = "$moto_version" ]; then
        return 0
    fi
    log "installing moto[server]==$moto_version into $venv ..."
    rm -rf "$venv"
    mkdir -p "$state"
    python3.12 -m venv "$venv"
    if ! "$venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$moto_version" \
        >"$state/install.log" 2>&1; then
        log "pip could not install moto[server]; see $state/install.log"
        tail -n 20 "$state/install.log" >&2
        exit 1
    fi
}

start_server() {
    if answers; then
        log "reusing the moto server on $endpoint"
        return 0
    fi
    log "starting moto's server on $endpoint ..."
    setsid "$venv/bin/python" "$psych_root/scripts/services/_moto_server.py" -H 127.0.0.1 -p "$port" \
        >"$state/server.log" 2>&1 </dev/null &
    echo $! >"$state/server.pid"
    for _ in $(seq 150); do
        answers && return 0
        sleep 0.1
    done
    log "moto's server did not answer on $endpoint; see $state/server.log"
    tail -n 20 "$state/server.log" >&2 || true
    exit 1
}

settings() {
    echo "PSYCH_TEST_DYNAMODB_ENDPOINT=$endpoint"
    echo "PSYCH_TEST_S3_ENDPOINT=$endpoint"
}

case "${1:-status}" in
start)
    install_missing
    start_server
    settings
    ;;
status)
    if answers; then log "up on $endpoint"; else log "down (start it: scripts/services/moto.sh start)"; fi
    settings
    answers
    ;;
stop)
    if [ -f "$state/server.pid" ]; then
        kill "$(cat "$state/server.pid")" 2>/dev/null || true
        rm -f "$state/server.pid"
        log "stopped"
    else
        log "no server started by this script"
    fi
    ;;
*)
    echo "usage: $0 start|status|stop" >&2
    exit 2
    ;;
esac
