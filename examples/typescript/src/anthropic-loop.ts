// The Anthropic Messages loop that anthropic-agent.ts and mcp-agent.ts share:
// the model gets the tools, each tool_use block it answers is run by runTool
// under the key of its intended action, and the tool_result blocks go back to
// the model, until it answers in text.
import Anthropic from "@anthropic-ai/sdk";
import { actionKey } from "./toolgate.js";

export async function anthropicLoop(
  tools: Anthropic.Tool[],
  conversation: string,
  runTool: (use: Anthropic.ToolUseBlock, key: string) => Promise<Anthropic.ToolResultBlockParam>,
): Promise<void> {
  const anthropic = new Anthropic(); // ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
  const model = process.env.ANTHROPIC_MODEL ?? "claude-sonnet-4-5";
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
      return;
    }
    const results: Anthropic.ToolResultBlockParam[] = [];
    for (const [i, use] of uses.entries()) {
      console.log(`step ${step}: ${use.name} ${JSON.stringify(use.input)}`);
      results.push(await runTool(use, actionKey(conversation, step, i)));
    }
    messages.push({ role: "user", content: results });
  }
}
