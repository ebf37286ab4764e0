-- 007: MCP tools/call streams kept for resumption (docs/providers.md,
-- "Resuming a dropped stream"): one row per stream, with who may resume it,
-- and its events (the JSON-RPC messages after the priming event), pruned
-- once older than the stream retention.
CREATE TABLE mcp_streams (
    stream_id  TEXT    NOT NULL PRIMARY KEY,
    tenant     TEXT    NOT NULL,
    principal  TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    done       INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX mcp_streams_created ON mcp_streams (created_at);

CREATE TABLE mcp_stream_events (
    stream_id TEXT    NOT NULL,
    idx       INTEGER NOT NULL,
    data      BLOB    NOT NULL,
    PRIMARY KEY (stream_id, idx)
);
