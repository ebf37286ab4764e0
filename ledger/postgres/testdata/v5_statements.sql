-- The statements of the store at schema version 5 (before migration 006),
-- as that code sent them: the old gateway of the rolling-upgrade test
-- (upgrade_test.go) runs these texts verbatim. Sections start with
-- "-- name: ". Parameters are in that code's order (values in actions.go,
-- which migration 006 did not change).

-- name: insert
INSERT INTO actions (tenant, id, tool_id, version, state, needs_operator, args_digest, arguments,
	attempts, lease_owner, lease_until, last_sent_at, unknown_since, next_check_at, checks,
	result_status, result_content_type, result_body, provider_calls,
	correlation_id, scope, policy_version, created_at, updated_at, history, rev)
	VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25,$26)
	ON CONFLICT (tenant, id) DO NOTHING

-- name: get
SELECT tenant, id, tool_id, version, state, needs_operator, args_digest, arguments,
	attempts, lease_owner, lease_until, last_sent_at, unknown_since, next_check_at, checks,
	result_status, result_content_type, result_body, provider_calls,
	correlation_id, scope, policy_version, created_at, updated_at, history, rev FROM actions WHERE tenant = $1 AND id = $2

-- name: update
WITH upd AS (
	UPDATE actions SET
		version = $3, state = $4, needs_operator = $5, args_digest = $6, arguments = $7,
		attempts = $8, lease_owner = $9, lease_until = $10, last_sent_at = $11, unknown_since = $12,
		next_check_at = $13, checks = $14, result_status = $15, result_content_type = $16, result_body = $17,
		provider_calls = $18, correlation_id = $19, scope = $20, policy_version = $21,
		updated_at = $22, history = $23, rev = $24 + 1
	WHERE tenant = $1 AND id = $2 AND rev = $24
	RETURNING rev
), cur AS (
	SELECT rev, state FROM actions WHERE tenant = $1 AND id = $2
)
SELECT (SELECT rev FROM upd), (SELECT rev FROM cur), (SELECT state FROM cur)

-- name: count
SELECT state, count(*) FROM actions GROUP BY state
