-- 003: drop actions_state. CountByState is served as well by a covering scan
-- of actions_tenant_state_created (the scan is O(rows) either way), and every
-- state change rewrote an entry of this index: on a lone commit, one more page
-- written to the WAL and checkpointed, per write.
DROP INDEX IF EXISTS actions_state;
