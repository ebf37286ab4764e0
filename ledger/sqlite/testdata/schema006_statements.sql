-- The statements a gateway on schema 006 (migrations 001-006, before issue
-- 32) runs on the actions table, byte for byte as that version prepared
-- them; upgrade_test.go writes a 006 ledger with "insert" and plays "an old
-- gateway" with all of them against a migrated file. Each statement follows
-- a "-- name:" line.

-- name: insert
INSERT INTO actions (tenant, id, tool_id, version, state, needs_operator, args_digest, arguments,
	attempts, lease_owner, lease_until, last_sent_at, unknown_since, next_check_at, checks,
	result_status, result_content_type, result_body, provider_calls,
	correlation_id, scope, policy_version, created_at, updated_at, history, rev)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT (tenant, id) DO NOTHING

-- name: update
UPDATE actions SET
		version = ?, state = ?, needs_operator = ?, args_digest = ?, arguments = ?,
		attempts = ?, lease_owner = ?, lease_until = ?, last_sent_at = ?, unknown_since = ?,
		next_check_at = ?, checks = ?, result_status = ?, result_content_type = ?, result_body = ?,
		provider_calls = ?, correlation_id = ?, scope = ?, policy_version = ?,
		updated_at = ?, history = ?, rev = ?
		WHERE tenant = ? AND id = ? AND rev = ?

-- name: narrow-update
UPDATE actions SET state = ?, lease_owner = ?, lease_until = ?, result_status = ?, result_content_type = ?, result_body = ?, updated_at = ?, history = ?, rev = ? WHERE tenant = ? AND id = ? AND rev = ?

-- name: purge
UPDATE actions
		SET arguments = NULL, result_body = NULL, provider_calls = NULL, rev = rev + 1
		WHERE rowid IN (SELECT rowid FROM actions
			WHERE state IN ('succeeded', 'rejected') AND created_at < ?
			  AND (arguments IS NOT NULL OR result_body IS NOT NULL OR provider_calls IS NOT NULL)
			LIMIT ?)

-- name: forget
DELETE FROM actions WHERE rowid IN (SELECT rowid FROM actions
			WHERE state IN ('succeeded', 'rejected') AND created_at < ? LIMIT ?)

-- name: delete
DELETE FROM actions WHERE tenant = ? AND id = ? AND rev = ?

-- name: get
SELECT tenant, id, tool_id, version, state, needs_operator, args_digest, arguments,
	attempts, lease_owner, lease_until, last_sent_at, unknown_since, next_check_at, checks,
	result_status, result_content_type, result_body, provider_calls,
	correlation_id, scope, policy_version, created_at, updated_at, history, rev FROM actions WHERE tenant = ? AND id = ?
