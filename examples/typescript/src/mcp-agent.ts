// An agent loop whose tools come from toolgate's MCP server (/mcp) through the
// official MCP client, with Anthropic Messages as the model: tools/list becomes
// the model's tools, every tool_use becomes a tools/call that carries the
// intended action's idempotency key in _meta["toolgate/idempotency_key"], and
// the result goes back to the model as a tool_result.
//
//   ANTHROPIC_API_KEY=... TOOLGATE_URL=http://127.0.0.1:8080 node dist/mcp-agent.js
import type Anthropic from "@anthropic-ai/sdk";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { anthropicLoop } from "./anthropic-loop.js";
import { authHeaders, runAction, toolgateURL, type Outcome } from "./toolgate.js";

const conversation = process.env.CONVERSATION_ID ?? "conv-mcp-0001";

const mcp = new Client({ name: "toolgate-example-agent", version: "1.0.0" });
await mcp.connect(new StreamableHTTPClientTransport(new URL(`${toolgateURL}/mcp`), { requestInit: { headers: authHeaders() } }));

// MCP tool names may hold dots (payments.issue_refund); Anthropic's may not.
const mcpName = new Map<string, string>();
const tools: Anthropic.Tool[] = (await mcp.listTools()).tools.map((t) => {
  const name = t.name.replace(/[^A-Za-z0-9_-]/g, "_");
  mcpName.set(name, t.name);
  return { name, description: t.description, input_schema: t.inputSchema as Anthropic.Tool.InputSchema };
});

// callTool runs one tools/call and reports what toolgate said (its _meta).
async function callTool(use: Anthropic.ToolUseBlock, key: string): Promise<[Outcome, Anthropic.ToolResultBlockParam]> {
  const result = await mcp.callTool({
    name: mcpName.get(use.name) ?? use.name,
    arguments: use.input as Record<string, unknown>,
    _meta: { "toolgate/idempotency_key": key },
  });
  const meta = result._meta ?? {};
  const content = (result.content as { type: string; text?: string }[]).map((c) => c.text ?? "").join("");
  const outcome: Outcome = {
    status: Number(meta["toolgate/status"]),
    problem: typeof meta["toolgate/problem"] === "string" ? meta["toolgate/problem"] : undefined,
    replayed: meta["toolgate/replayed"] === true,
  };
  return [outcome, { type: "tool_result", tool_use_id: use.id, content, is_error: result.isError === true }];
}

await anthropicLoop(tools, conversation, (use, key) => runAction(key, () => callTool(use, key)));
await mcp.close();
