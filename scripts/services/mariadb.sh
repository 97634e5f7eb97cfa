#!/usr/bin/env bash
# MariaDB on loopback, for MySQLStore's tests and benchmarks.
#
#   scripts/services/mariadb.sh start    install MariaDB (Debian) if missing, start it bound to
#                                        127.0.0.1 (or reuse the one already answering), make
#                                        the test user and database, print the settings
#   scripts/services/mariadb.sh status   say whether it answers, and print the settings
#   scripts/services/mariadb.sh stop     stop the server, only if this script started it
#
# Idempotent. A server already answering on 127.0.0.1:$PSYCH_MARIADB_PORT (default 3306) is
# reused as it is. Otherwise Debian's mariadb-server is installed if missing, and a server of
# this script's own is started: data in .cache/mariadb/data, no config file, bound to
# 127.0.0.1 only, root without a password. The tests connect as root with an empty password
# when the server allows that over TCP; otherwise this script makes user `psych` (password
# `psych`) that may create and drop the databases named psych_test*. The base database is
# psych_test; each test makes its own beside it. The tests read PSYCH_TEST_MYSQL_DSN.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
state="$root/.cache/mariadb"
run="$state/run"
port="${PSYCH_MARIADB_PORT:-3306}"
database="psych_test"

log() { echo "mariadb: $*" >&2; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

client() { command -v mariadb || command -v mysql; }
admin_tool() { command -v mariadb-admin || command -v mysqladmin; }

answers() {
    # ping says "alive" even when it is refused a login: it asks only whether a server speaks.
    local tool
    tool="$(admin_tool)" || return 1
    "$tool" --protocol=TCP -h 127.0.0.1 -P "$port" --connect-timeout=2 ping >/dev/null 2>&1
}

install_missing() {
    if command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; then
        client >/dev/null && return 0
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        log "MariaDB is not installed and this is not a Debian-like system: install MariaDB" \
            "10.6+ (or MySQL 8), start it on 127.0.0.1:$port, and run this again"
        exit 2
    fi
    log "installing MariaDB from Debian ..."
    DEBIAN_FRONTEND=noninteractive as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends \
        mariadb-server mariadb-client >/dev/null
}

start_server() {
    if answers; then
        log "reusing the server answering on 127.0.0.1:$port"
        return 0
    fi
    # A server of our own, with its own data folder, socket and no config file: it cannot
    # clash with a system server, and it listens on loopback only.
    local datadir="$state/data"
    mkdir -p "$state" "$run"
    chown mysql:mysql "$run" 2>/dev/null || true  # the server writes its socket and log there
    if [ ! -d "$datadir/mysql" ]; then
        log "initialising $datadir ..."
        rm -rf "$datadir"
        mkdir -p "$datadir"
        chown mysql:mysql "$datadir" 2>/dev/null || true
        # root@localhost without a password: the tests log in over TCP from 127.0.0.1.
        as_root mariadb-install-db --no-defaults --user=mysql --datadir="$datadir" \
            --auth-root-authentication-method=normal >"$state/install.log" 2>&1 || {
            log "mariadb-install-db failed; see $state/install.log"
            tail -n 20 "$state/install.log" >&2
            exit 1
        }
    fi
    log "starting mariadbd on 127.0.0.1:$port (data in $datadir) ..."
    as_root setsid mariadbd-safe --no-defaults --user=mysql --datadir="$datadir" \
        --socket="$run/mysqld.sock" --pid-file="$run/mysqld.pid" \
        --log-error="$run/error.log" --bind-address=127.0.0.1 --port="$port" \
        >"$state/server.log" 2>&1 </dev/null &
    echo "started" >"$state/started"
    for _ in $(seq 300); do
        answers && return 0
        sleep 0.1
    done
    log "the server did not answer on 127.0.0.1:$port; see $run/error.log"
    tail -n 20 "$run/error.log" >&2 || true
    exit 1
}

# Runs SQL as the server's administrator: through our own server's socket, or (a server we
# reuse) through the system's socket as the system's root, as Debian sets root up.
admin_sql() {
    if [ -f "$state/started" ]; then
        "$(client)" --socket="$run/mysqld.sock" -u root "$@"
    else
        as_root "$(client)" -u root "$@"
    fi
}

can_login() {
    "$(client)" --protocol=TCP -h 127.0.0.1 -P "$port" "$@" -e "SELECT 1" >/dev/null 2>&1
}

# Sets $dsn: root without a password when the server allows it, else user psych.
choose_user() {
    if can_login -u root; then
        dsn="mysql://root@127.0.0.1:$port/$database"
    else
        dsn="mysql://psych:psych@127.0.0.1:$port/$database"
    fi
}

# Makes user psych when root cannot log in over TCP, and the base database.
prepare() {
    local login=(-u root)
    if ! can_login -u root; then
        if ! can_login -u psych -ppsych; then
            log "creating user psych for the test databases ..."
            admin_sql <<'SQL'
CREATE USER IF NOT EXISTS 'psych'@'127.0.0.1' IDENTIFIED BY 'psych';
CREATE USER IF NOT EXISTS 'psych'@'localhost' IDENTIFIED BY 'psych';
GRANT ALL PRIVILEGES ON `psych\_test%`.* TO 'psych'@'127.0.0.1';
GRANT ALL PRIVILEGES ON `psych\_test%`.* TO 'psych'@'localhost';
SQL
        fi
        login=(-u psych -ppsych)
    fi
    "$(client)" --protocol=TCP -h 127.0.0.1 -P "$port" "${login[@]}" -e \
        "CREATE DATABASE IF NOT EXISTS $database CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
    choose_user
}

settings() {
    echo "PSYCH_TEST_MYSQL_DSN=$dsn"
}

case "${1:-status}" in
start)
    install_missing
    start_server
    prepare
    settings
    ;;
status)
    if answers; then
        log "up on 127.0.0.1:$port"
        choose_user
        settings
    else
        log "down (start it: scripts/services/mariadb.sh start)"
        dsn="mysql://root@127.0.0.1:$port/$database"
        settings
        exit 1
    fi
    ;;
stop)
    if [ -f "$state/started" ]; then
        log "stopping the server this script started ..."
        "$(admin_tool)" --socket="$run/mysqld.sock" -u root shutdown || true
        rm -f "$state/started"
    else
        log "leaving the server alone: this script did not start it"
    fi
    ;;
*)
    echo "usage: $0 start|status|stop" >&2
    exit 2
    ;;
esac
