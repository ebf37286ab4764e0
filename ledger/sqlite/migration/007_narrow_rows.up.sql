-- 007: the action row narrowed (docs/performance.md, "The ledger's storage
-- shape: SQLite (issue 32)").
--
-- action_rows keeps as columns what a query filters or sorts on (tenant, id,
-- tool, state, creation time, revision, lease end for Expired, next check
-- for DueChecks, policy version and correlation id for List) and the
-- payloads that Purge drops (arguments, result body, provider evidence);
-- every other field is one JSON object, doc, with short keys
-- (ledger/sqlite/row.go). rid, the rowid, grows with every insert, so the
-- table's pages fill in order whatever the client's key.
--
-- history is the transitions' JSON array without its brackets, so that a
-- write appends what it adds (history || ',' || the new ones) instead of
-- encoding the whole array again. (A table of history rows was built and
-- measured: its b-tree added a page to every batch's commit, 0.55 WAL
-- frames per new action, more than the row's few hundred bytes cost.)
--
-- The list indexes hold created_at ascending and id descending, scanned
-- backwards for List's "created_at DESC, id ASC": a new action's entry is
-- then appended at the right end of its tenant's part, where SQLite fills
-- pages full, instead of inserted at its left end, where it splits them
-- in halves.
--
-- The old table is dropped, not kept beside: a gateway still running the
-- previous version fails every statement on "actions" (no such table)
-- instead of writing rows this version would not read (docs/operations.md,
-- "Upgrading").
CREATE TABLE action_rows (
    rid            INTEGER PRIMARY KEY,
    tenant         TEXT    NOT NULL,
    id             TEXT    NOT NULL,
    tool_id        TEXT    NOT NULL,
    state          TEXT    NOT NULL,
    created_at     INTEGER NOT NULL,
    rev            INTEGER NOT NULL,
    lease_until    INTEGER,
    next_check_at  INTEGER,
    policy_version TEXT    NOT NULL DEFAULT '',
    correlation_id TEXT    NOT NULL DEFAULT '',
    doc            TEXT    NOT NULL,
    arguments      BLOB,
    result_body    BLOB,
    evidence       TEXT,
    history        TEXT
);

-- The rows, oldest first, so rid follows creation; a history array's text
-- without its brackets.
INSERT INTO action_rows (tenant, id, tool_id, state, created_at, rev, lease_until, next_check_at,
    policy_version, correlation_id, doc, arguments, result_body, evidence, history)
SELECT tenant, id, tool_id, state, created_at, rev, lease_until, next_check_at,
    policy_version, correlation_id,
    json_object('v', version, 'no', needs_operator, 'd', args_digest, 'n', attempts,
        'lo', lease_owner, 'ls', last_sent_at, 'us', unknown_since, 'c', checks,
        'rs', result_status, 'rt', result_content_type, 'sc', scope, 'ua', updated_at),
    arguments, result_body, provider_calls,
    CASE WHEN length(trim(history)) > 2 THEN substr(trim(history), 2, length(trim(history)) - 2) END
FROM actions ORDER BY created_at, tenant, id;

DROP TABLE actions;

-- Get, Update, Delete, and Insert's conflict.
CREATE UNIQUE INDEX action_rows_key ON action_rows (tenant, id);
-- List: newest first within a tenant, optionally by tool.
CREATE INDEX action_rows_tenant_created ON action_rows (tenant, created_at, id DESC);
CREATE INDEX action_rows_tenant_tool_created ON action_rows (tenant, tool_id, created_at, id DESC);
-- List by a state that is not terminal, and CountByState's count of those
-- states: a partial index, so that a new action's entry is added at its
-- claim and removed at its completion near one end of the index, instead of
-- moved from the running to the succeeded part of a (tenant, state) index
-- as 001's did. List by a terminal state reads action_rows_tenant_created.
CREATE INDEX action_rows_live_state ON action_rows (tenant, state, created_at, id DESC) WHERE state NOT IN ('succeeded', 'rejected');
-- Retention (Purge and Forget scan terminal actions by age) and
-- CountByState's count of the terminal states.
CREATE INDEX action_rows_terminal ON action_rows (state, created_at) WHERE state IN ('succeeded', 'rejected');
-- List by policy version or correlation id (partial: '' costs no entry).
CREATE INDEX action_rows_tenant_policy_created ON action_rows (tenant, policy_version, created_at, id DESC) WHERE policy_version <> '';
CREATE INDEX action_rows_tenant_correlation_created ON action_rows (tenant, correlation_id, created_at, id DESC) WHERE correlation_id <> '';
-- Expired: running actions by lease end. DueChecks: unknown actions by next lookup.
CREATE INDEX action_rows_running_lease ON action_rows (lease_until) WHERE state = 'running';
CREATE INDEX action_rows_unknown_next_check ON action_rows (next_check_at) WHERE state = 'unknown';
