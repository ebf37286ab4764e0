-- 001: the actions table.
--
-- Times are bigint unix nanoseconds (UTC) so they round-trip at nanosecond
-- precision, as the store conformance suite demands; NULL stands for the zero
-- time. (For a person: to_timestamp(lease_until / 1e9).) history and
-- provider_calls are json (NULL when empty): json, not jsonb, because jsonb
-- refuses the \u0000 escape a Go string may carry. arguments and the result
-- body are bytea so replays are byte-exact. rev is the compare-and-set revision.
--
-- Text keys use the "C" collation: ordering and the List cursor compare bytes,
-- as SQLite does, whatever the database's default locale.
CREATE TABLE actions (
    tenant              text COLLATE "C" NOT NULL,
    id                  text COLLATE "C" NOT NULL,
    tool_id             text COLLATE "C" NOT NULL DEFAULT '',
    version             text    NOT NULL DEFAULT '',
    state               text COLLATE "C" NOT NULL,
    needs_operator      boolean NOT NULL DEFAULT false,
    args_digest         text    NOT NULL DEFAULT '',
    arguments           bytea,
    attempts            integer NOT NULL DEFAULT 0,
    lease_owner         text    NOT NULL DEFAULT '',
    lease_until         bigint,
    last_sent_at        bigint,
    unknown_since       bigint,
    next_check_at       bigint,
    checks              integer NOT NULL DEFAULT 0,
    result_status       integer,
    result_content_type text    NOT NULL DEFAULT '',
    result_body         bytea,
    provider_calls      json,
    correlation_id      text    NOT NULL DEFAULT '',
    scope               text    NOT NULL DEFAULT '',
    policy_version      text    NOT NULL DEFAULT '',
    created_at          bigint  NOT NULL,
    updated_at          bigint,
    history             json,
    rev                 bigint  NOT NULL,
    PRIMARY KEY (tenant, id)
);

-- List: newest first within a tenant, optionally by state or tool.
CREATE INDEX actions_tenant_created ON actions (tenant, created_at DESC, id);
CREATE INDEX actions_tenant_state_created ON actions (tenant, state, created_at DESC, id);
CREATE INDEX actions_tenant_tool_created ON actions (tenant, tool_id, created_at DESC, id);

-- Expired: running actions by lease end (a missing lease end sorts first).
CREATE INDEX actions_running_lease ON actions (lease_until NULLS FIRST, tenant, id) WHERE state = 'running';

-- DueChecks: unknown actions by next lookup time (never scheduled sorts first).
CREATE INDEX actions_unknown_next_check ON actions (next_check_at NULLS FIRST, tenant, id) WHERE state = 'unknown';

-- CountByState.
CREATE INDEX actions_state ON actions (state);
