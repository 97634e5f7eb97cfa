#!/usr/bin/env bash
# PostgreSQL on loopback, for PostgresStore's tests and benchmarks.
#
#   scripts/services/postgres.sh start    install PostgreSQL (Debian) if missing, start it (or
#                                         reuse the one already answering), create the test
#                                         role and database, print the settings
#   scripts/services/postgres.sh status   say whether it answers, and print the settings
#   scripts/services/postgres.sh stop     stop the cluster, only if this script started it
#
# Idempotent. A server already answering on 127.0.0.1:$PSYCH_POSTGRES_PORT (default 5432) is
# reused as it is; otherwise the Debian cluster is started (created first if there is none),
# with Debian's default listen_addresses='localhost'. The tests connect as role `psych`
# (password `psych`; it may create databases and roles, it is not a superuser) to database
# `psych_test`: that works under trust and password authentication alike. Each test makes its
# own schema (the server-restart test its own database, the permissions test its own role).
# The tests read PSYCH_TEST_POSTGRES_DSN.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
state="$root/.cache/postgres"
port="${PSYCH_POSTGRES_PORT:-5432}"
role="psych"
password="psych"
database="psych_test"
dsn="postgresql://$role:$password@127.0.0.1:$port/$database"

log() { echo "postgres: $*" >&2; }

answers() { pg_isready -q -h 127.0.0.1 -p "$port" -t 2 >/dev/null 2>&1; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

install_missing() {
    command -v pg_ctlcluster >/dev/null 2>&1 && command -v psql >/dev/null 2>&1 && return 0
    if ! command -v apt-get >/dev/null 2>&1; then
        log "PostgreSQL is not installed and this is not a Debian-like system: install" \
            "PostgreSQL 13 or later, start it on 127.0.0.1:$port, and run this again"
        exit 2
    fi
    log "installing PostgreSQL from Debian ..."
    DEBIAN_FRONTEND=noninteractive as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends \
        postgresql postgresql-client >/dev/null
}

start_cluster() {
    if answers; then
        log "reusing the server answering on 127.0.0.1:$port"
        return 0
    fi
    local clusters
    clusters="$(pg_lsclusters -h 2>/dev/null | awk -v port="$port" '$3 == port {print $1" "$2}')"
    if [ -z "$clusters" ]; then
        local version
        version="$(ls /usr/lib/postgresql | sort -V | tail -n 1)"
        log "creating cluster $version/main on port $port ..."
        as_root pg_createcluster --port "$port" "$version" main >/dev/null
        clusters="$version main"
    fi
    read -r version name <<<"$(echo "$clusters" | head -n 1)"
    log "starting cluster $version/$name ..."
    mkdir -p "$state"
    as_root pg_ctlcluster "$version" "$name" start
    echo "$version $name" >"$state/started-cluster"
    for _ in $(seq 100); do
        answers && return 0
        sleep 0.1
    done
    log "the server did not answer on 127.0.0.1:$port; see /var/log/postgresql/"
    exit 1
}

superuser_psql() {
    # Debian's postgres superuser, by peer authentication on the local socket.
    if [ "$(id -u)" -eq 0 ] && id postgres >/dev/null 2>&1; then
        runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -p "$port" -d postgres "$@"
    elif [ "$(id -un)" = postgres ]; then
        psql -X -q -v ON_ERROR_STOP=1 -p "$port" -d postgres "$@"
    else
        psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d postgres "$@"
    fi
}

create_role_and_database() {
    if [ "$(PGPASSWORD="$password" psql -X -q -At -h 127.0.0.1 -p "$port" -U "$role" \
        -d "$database" -c "SELECT pg_get_userbyid(datdba) = current_user
                                  AND rolcreatedb AND rolcreaterole
                           FROM pg_database, pg_roles
                           WHERE datname = current_database() AND rolname = current_user" \
        2>/dev/null)" = "t" ]; then
        return 0
    fi
    log "creating role $role and database $database ..."
    superuser_psql <<SQL
DO \$\$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$role') THEN
        CREATE ROLE $role LOGIN CREATEDB CREATEROLE PASSWORD '$password';
    ELSE
        ALTER ROLE $role LOGIN CREATEDB CREATEROLE PASSWORD '$password';
    END IF;
END
\$\$;
SQL
    local exists
    exists="$(superuser_psql -Atc "SELECT 1 FROM pg_database WHERE datname = '$database'")"
    if [ "$exists" != "1" ]; then
        superuser_psql -c "CREATE DATABASE $database OWNER $role"
    fi
    # The tests create and drop schemas in it: the role must own it.
    superuser_psql -c "ALTER DATABASE $database OWNER TO $role"
    if ! PGPASSWORD="$password" psql -X -q -h 127.0.0.1 -p "$port" -U "$role" -d "$database" \
        -c "SELECT 1" >/dev/null 2>&1; then
        log "role $role cannot log in to $database on 127.0.0.1:$port; check pg_hba.conf"
        exit 1
    fi
}

settings() {
    echo "PSYCH_TEST_POSTGRES_DSN=$dsn"
}

case "${1:-status}" in
start)
    install_missing
    start_cluster
    create_role_and_database
    settings
    ;;
status)
    if answers; then log "up on 127.0.0.1:$port"; else log "down (start it: scripts/services/postgres.sh start)"; fi
    settings
    answers
    ;;
stop)
    if [ -f "$state/started-cluster" ]; then
        read -r version name <"$state/started-cluster"
        log "stopping cluster $version/$name, which this script started ..."
        as_root pg_ctlcluster "$version" "$name" stop || true
        rm -f "$state/started-cluster"
    else
        log "leaving the server alone: this script did not start it"
    fi
    ;;
*)
    echo "usage: $0 start|status|stop" >&2
    exit 2
    ;;
esac
