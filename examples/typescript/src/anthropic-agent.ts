// An agent loop on Anthropic Messages whose tools run through toolgate: the
// model sees toolgate's export, every tool_use block goes to
// POST /v1/calls/anthropic with an Idempotency-Key naming the intended action,
// and the tool_result block toolgate answers (is_error on failures) goes back
// to the model as it is.
//
//   ANTHROPIC_API_KEY=... TOOLGATE_URL=http://127.0.0.1:8080 node dist/anthropic-agent.js
import Anthropic from "@anthropic-ai/sdk";
import { actionKey, getJSON, postCall, runAction } from "./toolgate.js";

const anthropic = new Anthropic(); // ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
const model = process.env.ANTHROPIC_MODEL ?? "claude-sonnet-4-5";
const conversation = process.env.CONVERSATION_ID ?? "conv-anthropic-0001";

const { tools } = await getJSON<{ tools: Anthropic.Tool[] }>("/v1/export?format=anthropic");
const messages: Anthropic.MessageParam[] = [
  { role: "user", content: "Order ord_8Xk2Lm9Q was charged twice. Please refund the duplicate 19.99 EUR." },
];

for (let step = 0; step < 8; step++) {
  const reply = await anthropic.messages.create({
    model,
    max_tokens: 1024,
    system: "You are a customer-service agent. Use the tools; amounts are in minor units.",
    messages,
    tools,
  });
  messages.push({ role: "assistant", content: reply.content });
  const uses = reply.content.filter((b): b is Anthropic.ToolUseBlock => b.type === "tool_use");
  if (uses.length === 0) {
    const text = reply.content.map((b) => (b.type === "text" ? b.text : "")).join("");
    console.log(`assistant: ${text}`);
    break;
  }
  const results: Anthropic.ToolResultBlockParam[] = [];
  for (const [i, use] of uses.entries()) {
    const key = actionKey(conversation, step, i);
    console.log(`step ${step}: ${use.name} ${JSON.stringify(use.input)}`);
    results.push(await runAction(key, () => postCall<Anthropic.ToolResultBlockParam>("/v1/calls/anthropic", use, key)));
  }
  messages.push({ role: "user", content: results });
}
