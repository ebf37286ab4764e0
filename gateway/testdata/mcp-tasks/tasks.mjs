// The requester side of MCP Tasks against a running toolgate gateway: the
// v2 TypeScript SDK client (@modelcontextprotocol/client) discovers the
// server, and a task session of @modelcontextprotocol/ext-tasks calls tools
// through it. The 2026-07-28 task traffic goes through rawDispatch, a
// plain fetch to /mcp (the host's request path the package asks for).
// Driven by gateway/mcp_tasks_ts_test.go; step by step, the script reads
// commands from the environment and prints one JSON object.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createTaskSessionFromClient, resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";

const url = process.env.TOOLGATE_URL;
const key = process.env.TOOLGATE_KEY;
const protocolVersion = "2026-07-28";
const clientInfo = { name: "toolgate-tasks-ts", version: "1.0.0" };
const auth = { Authorization: `Bearer ${key}` };

// rawDispatch sends one framed request (the host owns the JSON-RPC
// envelope: version and id) and returns its response.
let nextId = 1000;
async function rawDispatch(framed, options) {
  const request = { jsonrpc: "2.0", id: nextId++, ...framed };
  const headers = {
    ...auth,
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    "Mcp-Protocol-Version": protocolVersion,
    "Mcp-Method": request.method,
  };
  if (request.method === "tools/call") headers["Mcp-Name"] = request.params.name;
  const res = await fetch(url, { method: "POST", headers, body: JSON.stringify(request), signal: options?.signal });
  const text = await res.text();
  if ((res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    for (const line of text.split("\n").reverse()) {
      if (line.startsWith("data: ") && line.includes('"id"')) return JSON.parse(line.slice(6));
    }
    throw new Error(`no response in the stream: ${text}`);
  }
  try { return JSON.parse(text); } catch { throw new Error(`${res.status} ${text} for ${JSON.stringify(request)}`); }
}

async function connect() {
  const client = new Client(clientInfo, {
    capabilities: { extensions: { "io.modelcontextprotocol/tasks": {} } },
    versionNegotiation: { mode: { pin: protocolVersion } },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: auth } }));
  return client;
}

function taskSession(client) {
  return createTaskSessionFromClient(client, {
    endpointId: "toolgate-test",
    rawDispatch,
    v2RequestFraming: { protocolVersion, clientInfo, clientCapabilities: {} },
  });
}

const out = { events: [] };
const args = JSON.parse(process.env.ARGS);
const client = await connect();
out.serverVersion = client.getServerVersion?.()?.version ?? null;
out.serverCapabilities = client.getServerCapabilities?.() ?? null;
out.era = client.getProtocolEra?.() ?? null;
const session = taskSession(client);
try {
  const exec = await session.callTool(process.env.TOOL, args);
  out.kind = exec.kind;
  out.taskId = exec.handle?.taskId ?? null;
  if (process.env.MODE === "cancel") {
    await exec.cancel();
    // What the task says now, read as any requester would (tasks/get).
    const res = await rawDispatch({
      method: "tasks/get",
      params: {
        taskId: out.taskId,
        _meta: {
          "io.modelcontextprotocol/protocolVersion": protocolVersion,
          "io.modelcontextprotocol/clientInfo": clientInfo,
          "io.modelcontextprotocol/clientCapabilities": { extensions: { "io.modelcontextprotocol/tasks": {} } },
        },
      },
    });
    out.afterCancel = res.result ?? res;
  }
  if (process.env.MODE === "approve" || process.env.MODE === "slow") {
    // Tell the test the task exists, then wait for it to act (approve, release).
    process.stderr.write(`TASK ${out.taskId}\n`);
  }
  for await (const ev of exec.updates()) {
    if (ev.type === "task") out.events.push({ status: ev.task.status, statusMessage: ev.task.statusMessage ?? null });
    if (ev.type === "outcome") {
      out.outcome = ev.outcome.status;
      if (ev.outcome.status === "completed") out.result = resultFromTaskOutcome(ev.outcome);
      if (ev.outcome.status === "failed") out.error = String(ev.outcome.error);
      break;
    }
  }
} catch (e) {
  out.thrown = String(e?.stack ?? e) + "\ncause: " + String(e?.cause?.stack ?? e?.cause);
} finally {
  await session.close().catch(() => {});
}
// The plain replay: the same call from the v2 client without tasks.
if (process.env.REPLAY === "1") {
  const plain = new Client(clientInfo, { capabilities: {}, versionNegotiation: { mode: { pin: protocolVersion } } });
  await plain.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: auth } }));
  out.replay = await plain.callTool({ name: process.env.TOOL, arguments: args });
  await plain.close();
}
await client.close().catch(() => {});
console.log(JSON.stringify(out));
