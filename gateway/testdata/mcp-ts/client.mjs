// Drives the official TypeScript MCP client against a running toolgate
// gateway. gateway/mcp_ts_test.go starts the gateway, runs this script with
// TOOLGATE_URL and TOOLGATE_KEY set, and checks what it prints (one JSON
// object) against the sandbox's effect count.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = process.env.TOOLGATE_URL;
const key = process.env.TOOLGATE_KEY;
const dropAfterMs = Number(process.env.DROP_AFTER_MS || "400");

// dropNext, when set, is aborted to cut the connection of the next tools/call
// POST: the request was sent, its answer never arrives.
let dropNext = null;
const droppingFetch = async (input, init = {}) => {
  const body = typeof init.body === "string" ? init.body : "";
  if (dropNext && init.method === "POST" && body.includes('"tools/call"')) {
    const drop = dropNext;
    dropNext = null;
    const signal = init.signal ? AbortSignal.any([init.signal, drop.signal]) : drop.signal;
    setTimeout(() => drop.abort(new Error("connection dropped by the test")), dropAfterMs);
    return fetch(input, { ...init, signal });
  }
  return fetch(input, init);
};

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
  fetch: droppingFetch,
});
const client = new Client({ name: "toolgate-ts-test", version: "1.0.0" });
await client.connect(transport);

const out = {};
const tools = await client.listTools();
out.tools = tools.tools.map((t) => ({ name: t.name, annotations: t.annotations, hasOutputSchema: !!t.outputSchema }));

const refund = {
  order_id: "ord_12345678",
  amount_minor: 1500,
  currency: "EUR",
  reason: "customer_request",
};
const call = (args, meta, options) =>
  client.callTool({ name: "payments.issue_refund", arguments: args, ...(meta ? { _meta: meta } : {}) }, undefined, options);

// The SDK checks structuredContent against the tool's outputSchema itself.
out.first = await call(refund, { "toolgate/idempotency_key": "ts-key-00000001" });
out.again = await call(refund, { "toolgate/idempotency_key": "ts-key-00000001" });
out.missingKey = await call(refund, null);
out.invalid = await call({ ...refund, order_id: "jane@example.com", amount_minor: 0 }, { "toolgate/idempotency_key": "ts-key-00000002" });

// A dropped stream: the first tools/call is cut while the refund is in flight
// downstream; the client re-issues the same call with the same key.
const dropKey = { "toolgate/idempotency_key": "ts-drop-00000001" };
const dropArgs = { ...refund, amount_minor: 2500 };
dropNext = new AbortController();
const cut = new AbortController();
setTimeout(() => cut.abort(new Error("the host gave up on the dropped call")), dropAfterMs + 50);
try {
  out.dropped = { result: await call(dropArgs, dropKey, { signal: cut.signal, timeout: 30000 }) };
} catch (err) {
  out.dropped = { error: String(err && err.message ? err.message : err) };
}
out.reissued = await call(dropArgs, dropKey, { timeout: 30000 });

await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
