-- 001: the actions table and the completion notification.
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

-- Completion wake-ups: when an action leaves running, the committing
-- transaction notifies channel toolgate_ledger with a JSON payload naming the
-- schema, tenant, id and new state. NOTIFY is transactional: nothing is sent
-- for a write that rolls back, and listeners hear it only after commit.
CREATE FUNCTION actions_notify_left_running() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    payload text := json_build_object(
        'schema', TG_TABLE_SCHEMA, 'tenant', NEW.tenant, 'id', NEW.id, 'state', NEW.state)::text;
BEGIN
    -- A payload must stay under 8000 bytes; an over-long tenant or id sends
    -- one without them, which listeners read as "re-check every waiter".
    IF octet_length(payload) >= 7900 THEN
        payload := json_build_object('schema', TG_TABLE_SCHEMA, 'state', NEW.state)::text;
    END IF;
    PERFORM pg_notify('toolgate_ledger', payload);
    RETURN NULL;
END
$$;

CREATE TRIGGER actions_left_running
    AFTER UPDATE OF state ON actions
    FOR EACH ROW
    WHEN (OLD.state = 'running' AND NEW.state <> 'running')
    EXECUTE FUNCTION actions_notify_left_running();
