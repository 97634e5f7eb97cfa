#!/usr/bin/env bash
# Every database the store tests need, on loopback: runs each scripts/services/*.sh.
#
#   scripts/dev-services.sh start    install what is missing, start (or reuse) every service
#   scripts/dev-services.sh status   say what answers
#   scripts/dev-services.sh stop     stop what the service scripts started
#
# Prints the settings the tests read (KEY=VALUE lines such as PSYCH_TEST_POSTGRES_DSN=...) on
# standard output, and each service's messages on standard error. Idempotent. Every service is
# tried even when one fails; the exit status is non-zero if any did. Load the settings into a
# shell with:  eval "$(scripts/dev-services.sh start)"  (then `export` them, or prefix commands).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command="${1:-status}"
case "$command" in
start | status | stop) ;;
*)
    echo "usage: $0 start|status|stop" >&2
    exit 2
    ;;
esac

failed=()
for service in "$here"/services/*.sh; do
    [ -e "$service" ] || continue
    name="$(basename "$service" .sh)"
    if ! output="$(bash "$service" "$command")"; then
        failed+=("$name")
    fi
    printf '%s\n' "$output" | grep -E '^[A-Z][A-Z0-9_]*=' || true
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "dev-services: $command failed for: ${failed[*]} (see the messages above)" >&2
    exit 1
fi
