-- 005: rollout state (docs/release-gate.md). One record per tool, stored as
-- the JSON of ledger.Rollout with its compare-and-set revision beside it; the
-- audit history, one row per revision the record went through (the newest
-- ledger.RolloutHistoryKeep are kept); and the rollout counters that every
-- replica adds to, keyed by the candidate's observation period (epoch).
CREATE TABLE rollouts (
    tool_id    TEXT    NOT NULL PRIMARY KEY,
    rev        INTEGER NOT NULL,
    record     TEXT    NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE rollout_events (
    tool_id TEXT    NOT NULL,
    rev     INTEGER NOT NULL,
    event   TEXT    NOT NULL,
    PRIMARY KEY (tool_id, rev)
);

CREATE TABLE rollout_counts (
    tool_id   TEXT    NOT NULL,
    epoch     INTEGER NOT NULL,
    version   TEXT    NOT NULL,
    kind      TEXT    NOT NULL,
    pointer   TEXT    NOT NULL DEFAULT '',
    code      TEXT    NOT NULL DEFAULT '',
    principal TEXT    NOT NULL DEFAULT '',
    n         INTEGER NOT NULL,
    PRIMARY KEY (tool_id, epoch, version, kind, pointer, code, principal)
);
