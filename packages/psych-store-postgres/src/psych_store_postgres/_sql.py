"""Every statement the store sends, written once for the store's schema.

Each hot-path call is ONE statement sent in autocommit: no BEGIN or COMMIT round trips. asyncpg
prepares each text once per connection and keeps it in its statement cache, so a call costs one
Bind/Execute/Sync exchange. Times come from the database (``statement_timestamp()``), so leases
follow the database's clock, whatever the clocks of the worker hosts say.

Group commit (``append_group``) is that statement for several runs at once: their batches go as
arrays, one element per batch, so N runs' appends cost one round trip and one commit (one WAL
flush) instead of N. It writes every batch that passes its fence and returns which; the others
take the single path, whose diagnosis names their refusal.

NOTIFY serialises commits (PostgreSQL takes one global lock to queue notifications), so
statements notify only when work appears (admission, a wake-up by a signal or a notice, a
release) or when a reader is watching the run (``watched_until``), never on every append.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from psych_core.ports import RUN_ROW_COLUMNS

FINAL = "('completed', 'failed', 'cancelled')"
"""The statuses of a run that has ended, as an SQL list."""

_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,47}")

RUN_COLUMNS = f"n, {RUN_ROW_COLUMNS}"
"""The creation number (for cursors), then the columns a `RunRow` is built from
(`_rows.run_row`)."""


def started_body(run_id: str, seq: str, attempt: str, at: str, tail: str) -> str:
    """SQL for the bytes of an `AttemptStarted` record as `record_json` writes them, from SQL
    expressions for its fields; `tail` is the bytes after its time (`started_tail`), which
    hold the worker's name.

    pydantic writes a UTC time with six digits of microseconds, or none when they are zero,
    and escapes a string as ``to_json`` does (tests/contract/test_postgres_claim.py holds the
    two to the same bytes).
    """
    utc = f"({at} AT TIME ZONE 'UTC')"
    return f"""convert_to(
        '{{"run_id":' || to_json({run_id}::text)::text || ',"seq":' || {seq}
        || ',"attempt":' || {attempt} || ',"at":"'
        || to_char({utc}, 'YYYY-MM-DD"T"HH24:MI:SS')
        || CASE WHEN date_part('microseconds', {utc})::bigint % 1000000 = 0 THEN ''
            ELSE to_char({utc}, '.US') END
        || 'Z"', 'UTF8') || {tail}::bytea"""


def check_schema_name(schema: str) -> str:
    """`schema` when it is a plain lower-case SQL name; it is spliced into statements."""
    if not _SCHEMA_NAME.fullmatch(schema):
        raise ValueError(
            f"schema {schema!r} is not a plain lower-case name (letters, digits and _, at most "
            "48 characters, not starting with a digit); pick one such as 'psych'"
        )
    return schema


@dataclass(frozen=True, slots=True)
class Sql:
    """The statements of one schema. Build it with `Sql.for_schema`."""

    schema: str
    work_channel: str
    records_channel: str
    create_run: str
    create_run_diagnose: str
    append: str
    append_one: str
    append_with_notices: str
    append_group: str
    append_diagnose: str
    claim_any: str
    claim_landed: str
    claim_pick_any: str
    claim_pick_one: str
    claim_start: str
    claim_exhaust: str
    renew: str
    release: str
    lease_diagnose: str
    signal: str
    signal_diagnose: str
    signal_lock: str
    signal_after_end: str
    read: str
    record_body: str
    signals: str
    due: str
    get_run: str
    get_spec: str
    put_spec: str
    delete_run: str
    delete_records: str
    delete_inbox: str
    work_ahead: str
    watch_run: str

    @classmethod
    def for_schema(cls, schema: str) -> Sql:
        """The statements, with `schema` and the channel names spliced in."""
        s = check_schema_name(schema)
        work = f"{s}.work"
        records = f"{s}.records"

        # Only a run someone is watching (`wait(run_id, ...)` sets watched_until) is notified of
        # its new records; a run no reader follows costs no NOTIFY.
        def tell_watchers(run_id: str = "$1") -> str:
            return f"CASE WHEN run.watched THEN pg_notify('{records}', {run_id}) END"

        def append_head(source: str) -> str:
            return f"""
            WITH run AS (
                UPDATE {s}.runs SET
                    status = $6,
                    waiting = $7,
                    next_seq = $3::bigint + $4::bigint,
                    updated_at = statement_timestamp(),
                    lease_owner = CASE WHEN $8::boolean THEN NULL ELSE lease_owner END,
                    lease_expires_at = CASE WHEN $8::boolean THEN NULL ELSE lease_expires_at END,
                    runnable_at = CASE WHEN $8::boolean THEN $9::timestamptz ELSE runnable_at END,
                    claims = CASE WHEN $6 = 'waiting' THEN 0 ELSE claims END
                WHERE run_id = $1 AND attempt = $2 AND next_seq = $3::bigint
                    AND lease_owner IS NOT NULL
                    AND (NOT $8::boolean OR inbox_last <= $10::bigint)
                RETURNING inbox_last, coalesce(watched_until > statement_timestamp(), false)
                    AS watched
            ),
            written AS (
                INSERT INTO {s}.records (run_id, seq, attempt, batch_id, body)
                SELECT $1, $3::bigint + b.ord - 1, $2,
                    CASE WHEN b.ord = 1 THEN $5 END, b.body
                FROM run, {source}
            )"""

        pick = f"""
            SELECT run_id, tenant, attempt, claims, next_seq, inbox_last,
                clock_timestamp() AS now
            FROM {s}.runs
            WHERE run_id = coalesce(
                (SELECT run_id FROM {s}.runs
                    WHERE runnable_at > '-infinity' AND runnable_at <= statement_timestamp()
                        AND lease_owner IS NOT NULL AND status NOT IN {FINAL}
                    ORDER BY runnable_at, n LIMIT 1 FOR UPDATE SKIP LOCKED),
                (SELECT run_id FROM {s}.runs
                    WHERE runnable_at <= statement_timestamp() AND status NOT IN {FINAL}
                    ORDER BY runnable_at, n LIMIT 1 FOR UPDATE SKIP LOCKED))
            FOR UPDATE
        """

        # The records: an array of bytea (each element bytes), or one bytea for the common
        # one-record batch, which spares the server an array and a function scan.
        many = "unnest($11::bytea[]) WITH ORDINALITY AS b(body, ord)"
        one = "(SELECT $11::bytea AS body, 1::bigint AS ord) AS b"
        return cls(
            schema=s,
            work_channel=work,
            records_channel=records,
            # ON CONFLICT DO NOTHING without a target covers both the run id and the tenant's
            # idempotency key; a second statement (a fresh snapshot) tells which it was.
            create_run=f"""
                WITH run AS (
                    INSERT INTO {s}.runs (
                        run_id, tenant, agent, spec_version, status, parent_run_id, attempt,
                        runnable_at, next_seq, idempotency_key, request_hash,
                        created_at, updated_at
                    ) VALUES (
                        $1, $2, $3, $4, 'queued', $5, 0, '-infinity', 1, $6, $7,
                        statement_timestamp(), statement_timestamp()
                    )
                    ON CONFLICT DO NOTHING
                    RETURNING run_id
                ),
                written AS (
                    INSERT INTO {s}.records (run_id, seq, attempt, batch_id, body)
                    SELECT run_id, 0, $8, NULL, $9 FROM run
                )
                SELECT count(pg_notify('{work}', '')) FROM run
            """,
            create_run_diagnose=f"""
                SELECT
                    (SELECT run_id FROM {s}.runs
                        WHERE tenant = $2 AND idempotency_key = $3) AS key_run_id,
                    (SELECT request_hash FROM {s}.runs
                        WHERE tenant = $2 AND idempotency_key = $3) AS key_request_hash,
                    (SELECT body FROM {s}.records WHERE run_id = $1 AND seq = 0) AS first_body,
                    EXISTS (SELECT 1 FROM {s}.runs WHERE run_id = $1) AS taken
            """,
            append=f"""{append_head(many)}
                SELECT run.inbox_last, {tell_watchers()} FROM run
            """,
            append_one=f"""{append_head(one)}
                SELECT run.inbox_last, {tell_watchers()} FROM run
            """,
            # Notices: each target that has not ended gets its inbox_last raised by the number
            # of new entries in one UPDATE (so its row lock orders them after any racing
            # signal), and the entries are numbered from the value that UPDATE saw. A key
            # already in the target's inbox is skipped; one that a racing signal commits
            # meanwhile makes the statement fail on the (run_id, key) index and be re-sent.
            append_with_notices=f"""{append_head(many)},
            notices AS (
                SELECT DISTINCT ON (x.run_id, x.key) x.run_id, x.key, x.body, x.ord
                FROM run, unnest($12::text[], $13::text[], $14::bytea[])
                    WITH ORDINALITY AS x(run_id, key, body, ord)
                WHERE x.run_id <> $1 AND NOT EXISTS (
                    SELECT 1 FROM {s}.inbox i WHERE i.run_id = x.run_id AND i.key = x.key
                )
                ORDER BY x.run_id, x.key, x.ord
            ),
            counts AS (
                SELECT run_id, count(*) AS added FROM notices GROUP BY run_id
            ),
            targets AS (
                UPDATE {s}.runs t SET
                    inbox_last = t.inbox_last + c.added,
                    runnable_at = CASE WHEN t.status = 'waiting' THEN '-infinity'
                        ELSE t.runnable_at END
                FROM counts c
                WHERE t.run_id = c.run_id AND t.status NOT IN {FINAL}
                RETURNING t.run_id, t.inbox_last - c.added AS base, t.status = 'waiting' AS woke
            ),
            delivered AS (
                INSERT INTO {s}.inbox (run_id, number, key, body, at)
                SELECT n.run_id,
                    t.base + row_number() OVER (PARTITION BY n.run_id ORDER BY n.ord),
                    n.key, n.body, statement_timestamp()
                FROM notices n JOIN targets t ON t.run_id = n.run_id
            )
            SELECT run.inbox_last, {tell_watchers()},
                (SELECT count(pg_notify('{work}', '')) FROM targets WHERE targets.woke)
            FROM run
            """,
            # Group commit (`_group`): several runs' batches, each fenced exactly as
            # `append_head` fences one, in one statement. The input arrives as parallel arrays,
            # one element per batch; the records as two flat arrays (the batch's ordinal, the
            # body), numbered within their batch by row_number(). `locked` takes the rows in
            # run id order before the UPDATE reaches them, whatever join the planner picks, so
            # two groups that share runs wait for each other instead of deadlocking. A batch
            # the UPDATE does not match writes nothing and is not returned: the caller sends it
            # through `append`, whose diagnosis names the refusal.
            append_group=f"""
            WITH input AS (
                SELECT * FROM unnest(
                    $1::text[], $2::integer[], $3::bigint[], $4::bigint[], $5::text[],
                    $6::text[], $7::text[], $8::boolean[], $9::timestamptz[], $10::bigint[]
                ) WITH ORDINALITY AS u(run_id, attempt, first, count, batch_id, status,
                    waiting, releases, due_at, inbox_seen, ord)
            ),
            locked AS (
                SELECT run_id FROM {s}.runs WHERE run_id = ANY($1::text[])
                ORDER BY run_id FOR NO KEY UPDATE
            ),
            run AS (
                UPDATE {s}.runs r SET
                    status = u.status,
                    waiting = u.waiting,
                    next_seq = u.first + u.count,
                    updated_at = statement_timestamp(),
                    lease_owner = CASE WHEN u.releases THEN NULL ELSE r.lease_owner END,
                    lease_expires_at = CASE WHEN u.releases THEN NULL
                        ELSE r.lease_expires_at END,
                    runnable_at = CASE WHEN u.releases THEN u.due_at ELSE r.runnable_at END,
                    claims = CASE WHEN u.status = 'waiting' THEN 0 ELSE r.claims END
                FROM locked l JOIN input u ON u.run_id = l.run_id
                WHERE r.run_id = l.run_id AND r.attempt = u.attempt AND r.next_seq = u.first
                    AND r.lease_owner IS NOT NULL
                    AND (NOT u.releases OR r.inbox_last <= u.inbox_seen)
                RETURNING u.ord, r.run_id, r.attempt, u.first, u.batch_id, r.inbox_last,
                    coalesce(r.watched_until > statement_timestamp(), false) AS watched
            ),
            written AS (
                INSERT INTO {s}.records (run_id, seq, attempt, batch_id, body)
                SELECT run.run_id, run.first + b.pos - 1, run.attempt,
                    CASE WHEN b.pos = 1 THEN run.batch_id END, b.body
                FROM run JOIN (
                    SELECT x.owner, x.body,
                        row_number() OVER (PARTITION BY x.owner ORDER BY x.n) AS pos
                    FROM unnest($11::bigint[], $12::bytea[]) WITH ORDINALITY AS x(owner, body, n)
                ) b ON b.owner = run.ord
            )
            SELECT run.ord, run.inbox_last, {tell_watchers("run.run_id")} FROM run
            """,
            append_diagnose=f"""
                SELECT r.attempt, r.next_seq, r.status, r.lease_owner IS NOT NULL AS leased,
                    r.inbox_last, b.batch_id, b.attempt AS batch_attempt
                FROM {s}.runs r
                LEFT JOIN {s}.records b ON b.run_id = r.run_id AND b.seq = $2
                WHERE r.run_id = $1
            """,
            # The claim's first statement, inside its transaction: a run whose lease expired
            # (it still names its owner: its worker died with it started), else the oldest
            # claimable run, that no other claimer holds. COALESCE evaluates its second
            # sub-select only when the first found nothing, so only the run taken is locked.
            # Leased runs never hold '-infinity', so the first one's range on the partial index
            # over runnable_at holds only them, due waits and runs released to a time: a short
            # scan however long the queue of new runs. The outer read locks the row again
            # (already held: it does not wait) so it reads the row's newest version, and `now`
            # is read with clock_timestamp(), which is evaluated again when the row had changed
            # under the statement (PostgreSQL re-checks the newest version), so the new attempt
            # starts after every record the old one managed to write.
            # The claim of any run, in one statement: the pick, the start (the run row and its
            # AttemptStarted record, written here byte for byte as `record_json` writes it:
            # `started_body`) and the watchers' notice. A run claimed `max_attempts` times is
            # returned unstarted, and the store fails it through the transaction below. The
            # record's batch_id is the claim's token, which `claim_landed` looks for when the
            # answer was lost.
            claim_any=f"""
                WITH picked AS ({pick}),
                run AS (
                    UPDATE {s}.runs r SET
                        attempt = p.attempt + 1, claims = r.claims + 1, status = 'running',
                        waiting = NULL, lease_owner = $1,
                        lease_expires_at = p.now + $2::bigint * interval '1 microsecond',
                        runnable_at = p.now + $2::bigint * interval '1 microsecond',
                        next_seq = p.next_seq + 1, updated_at = p.now
                    FROM picked p
                    WHERE r.run_id = p.run_id AND p.claims < $3
                    RETURNING r.run_id, r.lease_expires_at,
                        coalesce(r.watched_until > statement_timestamp(), false) AS watched
                ),
                written AS (
                    INSERT INTO {s}.records (run_id, seq, attempt, batch_id, body)
                    SELECT p.run_id, p.next_seq, p.attempt + 1, $4,
                        {started_body("p.run_id", "p.next_seq", "p.attempt + 1", "p.now", "$5")}
                    FROM picked p JOIN run USING (run_id)
                )
                SELECT p.run_id, p.tenant, p.attempt, p.next_seq, p.inbox_last, p.now,
                    run.lease_expires_at, {tell_watchers("p.run_id")},
                    CASE WHEN p.next_seq = 1 AND run.run_id IS NOT NULL THEN
                        (SELECT body FROM {s}.records WHERE run_id = p.run_id AND seq = 0)
                    END AS first_body
                FROM picked p LEFT JOIN run USING (run_id)
            """,
            # The claim whose token is $3, if it landed and its lease (by $1, `ttl` $2
            # microseconds) is still live: such a run's runnable_at is its lease expiry, within
            # the next `ttl`, a short range of the runnable index.
            claim_landed=f"""
                SELECT rec.body, r.tenant, r.inbox_last, r.lease_expires_at
                FROM {s}.runs r
                JOIN {s}.records rec ON rec.run_id = r.run_id AND rec.seq = r.next_seq - 1
                WHERE r.runnable_at > statement_timestamp()
                    AND r.runnable_at <= statement_timestamp()
                        + $2::bigint * interval '1 microsecond'
                    AND r.lease_owner = $1 AND r.status = 'running' AND rec.batch_id = $3
            """,
            claim_pick_any=pick,
            # One given run: wait for a racing claimer instead of skipping it, then look again
            # at the row it left (so the loser sees the lease and takes nothing).
            claim_pick_one=f"""
                SELECT run_id, tenant, attempt, claims, next_seq, inbox_last,
                    clock_timestamp() AS now
                FROM {s}.runs
                WHERE run_id = $1 AND runnable_at <= statement_timestamp()
                    AND status NOT IN {FINAL}
                FOR UPDATE
            """,
            claim_start=f"""
                WITH run AS (
                    UPDATE {s}.runs SET
                        attempt = $2, claims = claims + 1, status = 'running', waiting = NULL,
                        lease_owner = $3, lease_expires_at = $4, runnable_at = $4,
                        next_seq = $5::bigint + 1, updated_at = $6
                    WHERE run_id = $1
                    RETURNING coalesce(watched_until > statement_timestamp(), false) AS watched
                ),
                written AS (
                    INSERT INTO {s}.records (run_id, seq, attempt, batch_id, body)
                    SELECT $1, $5::bigint, $2, NULL, $7 FROM run
                )
                SELECT {tell_watchers()} FROM run
            """,
            claim_exhaust=f"""
                WITH run AS (
                    UPDATE {s}.runs SET
                        status = 'failed', waiting = NULL, lease_owner = NULL,
                        lease_expires_at = NULL, runnable_at = NULL,
                        next_seq = $3::bigint + 1, updated_at = $4
                    WHERE run_id = $1
                    RETURNING coalesce(watched_until > statement_timestamp(), false) AS watched
                ),
                written AS (
                    INSERT INTO {s}.records (run_id, seq, attempt, batch_id, body)
                    SELECT $1, $3::bigint, $2, NULL, $5 FROM run
                )
                SELECT {tell_watchers()} FROM run
            """,
            renew=f"""
                UPDATE {s}.runs SET
                    lease_expires_at = statement_timestamp() + $3::interval,
                    runnable_at = statement_timestamp() + $3::interval
                WHERE run_id = $1 AND attempt = $2 AND lease_owner IS NOT NULL
                RETURNING lease_expires_at, inbox_last
            """,
            release=f"""
                WITH run AS (
                    UPDATE {s}.runs SET
                        lease_owner = NULL, lease_expires_at = NULL,
                        runnable_at = coalesce($3::timestamptz, '-infinity'),
                        status = 'queued', waiting = NULL, updated_at = statement_timestamp()
                    WHERE run_id = $1 AND attempt = $2 AND lease_owner IS NOT NULL
                    RETURNING run_id
                )
                SELECT count(pg_notify('{work}', '')) FROM run
            """,
            lease_diagnose=f"""
                SELECT attempt, lease_owner IS NOT NULL AS leased, status
                FROM {s}.runs WHERE run_id = $1
            """,
            # The key check reads the statement's snapshot; a racing signal with the same key
            # that commits first makes this one fail on the (run_id, key) index instead, which
            # is the same answer: DuplicateSignal.
            signal=f"""
                WITH run AS (
                    UPDATE {s}.runs SET
                        inbox_last = inbox_last + 1,
                        runnable_at = CASE WHEN status = 'waiting' THEN '-infinity'
                            ELSE runnable_at END
                    WHERE run_id = $1 AND tenant = $2 AND status NOT IN {FINAL}
                        AND NOT EXISTS (
                            SELECT 1 FROM {s}.inbox WHERE run_id = $1 AND key = $3
                        )
                    RETURNING inbox_last, status = 'waiting' AS woke
                ),
                delivered AS (
                    INSERT INTO {s}.inbox (run_id, number, key, body, at)
                    SELECT $1, inbox_last, $3, $4, statement_timestamp() FROM run
                )
                SELECT inbox_last, CASE WHEN woke THEN pg_notify('{work}', '') END FROM run
            """,
            # Why `signal` wrote nothing ($4: the "continued" key): the key's entry, then the
            # status, then whether an ended run was continued already.
            signal_diagnose=f"""
                SELECT r.status,
                    (SELECT number FROM {s}.inbox WHERE run_id = $1 AND key = $3) AS number,
                    (SELECT body FROM {s}.inbox WHERE run_id = $1 AND key = $3) AS body,
                    EXISTS (SELECT 1 FROM {s}.inbox WHERE run_id = $1 AND key = $4)
                        AS continued
                FROM {s}.runs r WHERE r.run_id = $1 AND r.tenant = $2
            """,
            # A run that has ended takes a message for its next run until its inbox holds the
            # "continued" key: a transaction that first locks the row, so that the next
            # statement's snapshot, taken under the lock, sees a mark committed by a racing
            # signal (one statement would check the inbox in a snapshot taken before waiting).
            signal_lock=f"""
                SELECT status FROM {s}.runs WHERE run_id = $1 AND tenant = $2
                FOR NO KEY UPDATE
            """,
            # Under that lock: numbered like any signal, nothing else of the row changes ($5:
            # the "continued" key).
            signal_after_end=f"""
                WITH run AS (
                    UPDATE {s}.runs SET inbox_last = inbox_last + 1
                    WHERE run_id = $1 AND tenant = $2 AND status IN {FINAL}
                        AND NOT EXISTS (
                            SELECT 1 FROM {s}.inbox WHERE run_id = $1 AND key IN ($3, $5)
                        )
                    RETURNING inbox_last
                ),
                delivered AS (
                    INSERT INTO {s}.inbox (run_id, number, key, body, at)
                    SELECT $1, inbox_last, $3, $4, statement_timestamp() FROM run
                )
                SELECT inbox_last FROM run
            """,
            read=f"""
                SELECT body FROM {s}.records
                WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3
            """,
            record_body=f"SELECT body FROM {s}.records WHERE run_id = $1 AND seq = $2",
            signals=f"""
                SELECT number, key, body, at FROM {s}.inbox
                WHERE run_id = $1 AND number > $2 ORDER BY number
            """,
            due=f"""
                SELECT {RUN_COLUMNS} FROM {s}.runs
                WHERE runnable_at <= $1 AND status = 'waiting'
                ORDER BY runnable_at, n LIMIT $2
            """,
            get_run=f"SELECT {RUN_COLUMNS} FROM {s}.runs WHERE run_id = $1 AND tenant = $2",
            get_spec=f"SELECT spec_json FROM {s}.specs WHERE version = $1",
            put_spec=f"""
                INSERT INTO {s}.specs (version, spec_json) VALUES ($1, $2)
                ON CONFLICT (version) DO NOTHING
            """,
            # Deletion runs in a transaction: the run row first (its lock waits out an append
            # in flight), then what hangs off it, read with a snapshot taken after that lock.
            delete_run=f"DELETE FROM {s}.runs WHERE run_id = $1 AND tenant = $2 RETURNING n",
            delete_records=f"DELETE FROM {s}.records WHERE run_id = $1",
            delete_inbox=f"DELETE FROM {s}.inbox WHERE run_id = $1",
            # For `wait(None)`: is a run claimable now, else in how many seconds is the next?
            work_ahead=f"""
                SELECT runnable_at <= statement_timestamp() AS ready,
                    CASE WHEN isfinite(runnable_at)
                        THEN extract(epoch FROM runnable_at - statement_timestamp())::float8
                    END AS seconds
                FROM {s}.runs
                WHERE runnable_at IS NOT NULL AND status NOT IN {FINAL}
                ORDER BY runnable_at, n LIMIT 1
            """,
            # For `wait(run_id, ...)`: mark the run watched (so appends notify it) unless it
            # already is for long enough, and read its next seq. The UPDATE takes the row lock,
            # so an append racing with it either committed first (its seq is read here) or sees
            # the mark and notifies.
            watch_run=f"""
                WITH watch AS (
                    UPDATE {s}.runs
                    SET watched_until = statement_timestamp() + $3::float8 * interval '1 second'
                    WHERE run_id = $1 AND status NOT IN {FINAL} AND (watched_until IS NULL
                        OR watched_until < statement_timestamp() + $2::float8 * interval '1 second')
                    RETURNING next_seq
                )
                SELECT coalesce(
                    (SELECT next_seq FROM watch),
                    (SELECT next_seq FROM {s}.runs WHERE run_id = $1)
                )
            """,
        )
