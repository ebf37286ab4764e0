// Drives the official TypeScript MCP client against two toolgate replicas on
// one ledger (gateway/mcp_resume_ts_test.go). Every request goes to replica A,
// except a resumption (GET with Last-Event-ID), which goes to replica B. The
// first tools/call's stream is cut right after its priming event, while the
// refund is in flight downstream; the client resumes it by itself and must
// receive the stored answer. Prints one JSON object.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const replicaA = process.env.REPLICA_A;
const replicaB = process.env.REPLICA_B;
const key = process.env.TOOLGATE_KEY;

const seen = [];
let cut = false;
const routingFetch = async (input, init = {}) => {
  const method = init.method || "GET";
  const headers = new Headers(init.headers);
  const lastEventId = headers.get("last-event-id");
  const resume = method === "GET" && !!lastEventId;
  const url = new URL(input.toString());
  const target = new URL(resume ? replicaB : replicaA);
  url.protocol = target.protocol;
  url.host = target.host;
  const body = typeof init.body === "string" ? init.body : "";
  const call = body.includes('"tools/call"');
  seen.push({ method, replica: resume ? "B" : "A", lastEventId: lastEventId || undefined, call });
  if (method !== "POST" || !call || cut) {
    return fetch(url, init);
  }
  // The first tools/call: pass the priming event on, then drop the connection.
  cut = true;
  const drop = new AbortController();
  const signal = init.signal ? AbortSignal.any([init.signal, drop.signal]) : drop.signal;
  const resp = await fetch(url, { ...init, signal });
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let primed = false;
  const stream = new ReadableStream({
    async pull(controller) {
      if (primed) {
        drop.abort(new Error("connection dropped by the test"));
        controller.error(new Error("connection dropped by the test"));
        return;
      }
      const { value, done } = await reader.read();
      if (done) {
        controller.close();
        return;
      }
      text += decoder.decode(value, { stream: true });
      controller.enqueue(value);
      if (/^id: /m.test(text) && text.includes("\n\n")) {
        primed = true;
        seen.push({ primingEvent: text });
      }
    },
  });
  return new Response(stream, { status: resp.status, headers: resp.headers });
};

const transport = new StreamableHTTPClientTransport(new URL(replicaA), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
  fetch: routingFetch,
});
const errors = [];
transport.onerror = (err) => errors.push(String(err && err.message ? err.message : err));
const client = new Client({ name: "toolgate-ts-resume-test", version: "1.0.0" });
await client.connect(transport);

const out = {};
out.result = await client.callTool(
  {
    name: "payments.issue_refund",
    arguments: { order_id: "ord_12345678", amount_minor: 3100, currency: "EUR", reason: "customer_request" },
    _meta: { "toolgate/idempotency_key": "ts-resume-0000001" },
  },
  undefined,
  { timeout: 30000 },
);
out.seen = seen;
out.errors = errors;
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
