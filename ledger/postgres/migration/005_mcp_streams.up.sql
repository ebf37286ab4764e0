-- 005: MCP tools/call streams kept for resumption (docs/providers.md,
-- "Resuming a dropped stream"): one row per stream, with who may resume it,
-- and its events (the JSON-RPC messages after the priming event), pruned
-- once older than the stream retention. Every replica reads and writes them.
CREATE TABLE mcp_streams (
    stream_id  text        NOT NULL PRIMARY KEY,
    tenant     text        NOT NULL,
    principal  text        NOT NULL,
    created_at timestamptz NOT NULL,
    done       boolean     NOT NULL DEFAULT false
);

CREATE INDEX mcp_streams_created ON mcp_streams (created_at);

CREATE TABLE mcp_stream_events (
    stream_id text    NOT NULL REFERENCES mcp_streams (stream_id) ON DELETE CASCADE,
    idx       integer NOT NULL,
    data      bytea   NOT NULL,
    PRIMARY KEY (stream_id, idx)
);
