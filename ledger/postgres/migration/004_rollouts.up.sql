-- 004: rollout state (docs/release-gate.md). One record per tool, stored as
-- the JSON of ledger.Rollout with its compare-and-set revision beside it; the
-- audit history, one row per revision the record went through (the newest
-- ledger.RolloutHistoryKeep are kept); and the rollout counters that every
-- replica adds to, keyed by the candidate's observation period (epoch).
-- json, not jsonb, for the reason given in 001; keys use the "C" collation.
CREATE TABLE rollouts (
    tool_id    text COLLATE "C" NOT NULL PRIMARY KEY,
    rev        bigint NOT NULL,
    record     json   NOT NULL,
    updated_at bigint NOT NULL
);

CREATE TABLE rollout_events (
    tool_id text COLLATE "C" NOT NULL,
    rev     bigint NOT NULL,
    event   json   NOT NULL,
    PRIMARY KEY (tool_id, rev)
);

CREATE TABLE rollout_counts (
    tool_id   text COLLATE "C" NOT NULL,
    epoch     bigint NOT NULL,
    version   text COLLATE "C" NOT NULL,
    kind      text COLLATE "C" NOT NULL,
    pointer   text COLLATE "C" NOT NULL DEFAULT '',
    code      text COLLATE "C" NOT NULL DEFAULT '',
    principal text COLLATE "C" NOT NULL DEFAULT '',
    n         bigint NOT NULL,
    PRIMARY KEY (tool_id, epoch, version, kind, pointer, code, principal)
);
