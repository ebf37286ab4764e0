-- 001: the actions table.
--
-- Times are INTEGER unix nanoseconds (UTC); NULL stands for the zero time.
-- history and provider_calls are JSON arrays (NULL when empty); the result
-- body is a BLOB so replays are byte-exact. rev is the compare-and-set revision.
-- A rowid table (not WITHOUT ROWID): rows carry result bodies, which can be large.
CREATE TABLE actions (
    tenant              TEXT    NOT NULL,
    id                  TEXT    NOT NULL,
    tool_id             TEXT    NOT NULL DEFAULT '',
    version             TEXT    NOT NULL DEFAULT '',
    state               TEXT    NOT NULL,
    needs_operator      INTEGER NOT NULL DEFAULT 0,
    args_digest         TEXT    NOT NULL DEFAULT '',
    arguments           BLOB,
    attempts            INTEGER NOT NULL DEFAULT 0,
    lease_owner         TEXT    NOT NULL DEFAULT '',
    lease_until         INTEGER,
    last_sent_at        INTEGER,
    unknown_since       INTEGER,
    next_check_at       INTEGER,
    checks              INTEGER NOT NULL DEFAULT 0,
    result_status       INTEGER,
    result_content_type TEXT    NOT NULL DEFAULT '',
    result_body         BLOB,
    provider_calls      TEXT,
    correlation_id      TEXT    NOT NULL DEFAULT '',
    scope               TEXT    NOT NULL DEFAULT '',
    policy_version      TEXT    NOT NULL DEFAULT '',
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER,
    history             TEXT,
    rev                 INTEGER NOT NULL,
    PRIMARY KEY (tenant, id)
);

-- List: newest first within a tenant, optionally by state or tool.
CREATE INDEX actions_tenant_created ON actions (tenant, created_at DESC, id);
CREATE INDEX actions_tenant_state_created ON actions (tenant, state, created_at DESC, id);
CREATE INDEX actions_tenant_tool_created ON actions (tenant, tool_id, created_at DESC, id);

-- Expired: running actions by lease end.
CREATE INDEX actions_running_lease ON actions (lease_until) WHERE state = 'running';

-- DueChecks: unknown actions by next lookup time.
CREATE INDEX actions_unknown_next_check ON actions (next_check_at) WHERE state = 'unknown';

-- CountByState.
CREATE INDEX actions_state ON actions (state);
