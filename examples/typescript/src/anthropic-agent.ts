// An agent loop on Anthropic Messages whose tools run through toolgate: the
// model sees toolgate's export, every tool_use block goes to
// POST /v1/calls/anthropic with an Idempotency-Key naming the intended action,
// and the tool_result block toolgate answers (is_error on failures) goes back
// to the model as it is.
//
//   ANTHROPIC_API_KEY=... TOOLGATE_URL=http://127.0.0.1:8080 node dist/anthropic-agent.js
import type Anthropic from "@anthropic-ai/sdk";
import { anthropicLoop } from "./anthropic-loop.js";
import { getJSON, postCall, runAction } from "./toolgate.js";

const conversation = process.env.CONVERSATION_ID ?? "conv-anthropic-0001";
const { tools } = await getJSON<{ tools: Anthropic.Tool[] }>("/v1/export?format=anthropic");

await anthropicLoop(tools, conversation, (use, key) =>
  runAction(key, () => postCall<Anthropic.ToolResultBlockParam>("/v1/calls/anthropic", use, key)),
);
