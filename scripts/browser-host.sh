#!/usr/bin/env bash
# What the browser tests need on this host: Chromium and its WebDriver from Debian. Playwright
# drives /usr/bin/chromium; it never downloads a browser of its own.
#
#   scripts/browser-host.sh start    install Chromium when missing (Debian, as root)
#   scripts/browser-host.sh status   say which Chromium is there, and print the settings the tests read
#
# Idempotent. Prints the settings (PSYCH_CHROMIUM=...) on standard output, messages on standard
# error.
set -euo pipefail

chromium=/usr/bin/chromium
driver=/usr/bin/chromedriver
packages=(chromium chromium-driver)

log() { echo "browser-host: $*" >&2; }

installed() { [ -x "$chromium" ] && [ -x "$driver" ]; }

install_missing() {
    installed && return 0
    if ! command -v apt-get >/dev/null 2>&1; then
        log "missing $chromium and this is not a Debian-like system: install Chromium and its" \
            "driver yourself, then link the browser at $chromium"
        exit 2
    fi
    if [ "$(id -u)" -ne 0 ]; then
        log "missing $chromium: as root, run" \
            "apt-get install --no-install-recommends ${packages[*]}"
        exit 2
    fi
    log "installing ${packages[*]} ..."
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${packages[@]}" >/dev/null
    installed || {
        log "apt-get installed ${packages[*]} but $chromium or $driver is still missing"
        exit 1
    }
}

settings() {
    echo "PSYCH_CHROMIUM=$chromium"
}

case "${1:-status}" in
start)
    install_missing
    log "$("$chromium" --version 2>/dev/null || echo "$chromium")"
    settings
    ;;
status)
    if installed; then
        log "$("$chromium" --version 2>/dev/null || echo "$chromium")"
    else
        log "Chromium: missing (scripts/browser-host.sh start installs it)"
    fi
    settings
    installed
    ;;
*)
    echo "usage: $0 start|status" >&2
    exit 2
    ;;
esac
