// An agent loop on OpenAI Chat Completions whose tools run through toolgate:
// the model sees toolgate's export, every tool call goes to
// POST /v1/calls/openai with an Idempotency-Key naming the intended action, and
// the tool message toolgate answers goes back into the conversation as it is.
//
//   OPENAI_API_KEY=... TOOLGATE_URL=http://127.0.0.1:8080 node dist/openai-agent.js
import OpenAI from "openai";
import type {
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatCompletionToolMessageParam,
} from "openai/resources/chat/completions";
import { actionKey, getJSON, postCall, runAction } from "./toolgate.js";

const openai = new OpenAI(); // OPENAI_API_KEY, OPENAI_BASE_URL
const model = process.env.OPENAI_MODEL ?? "gpt-4.1";
const conversation = process.env.CONVERSATION_ID ?? "conv-openai-0001";

const { tools } = await getJSON<{ tools: ChatCompletionTool[] }>("/v1/export?format=openai");
const messages: ChatCompletionMessageParam[] = [
  { role: "system", content: "You are a customer-service agent. Use the tools; amounts are in minor units." },
  { role: "user", content: "Order ord_8Xk2Lm9Q was charged twice. Please refund the duplicate 19.99 EUR." },
];

for (let step = 0; step < 8; step++) {
  const completion = await openai.chat.completions.create({ model, messages, tools });
  const message = completion.choices[0].message;
  messages.push(message);
  if (!message.tool_calls?.length) {
    console.log(`assistant: ${message.content}`);
    break;
  }
  for (const [i, call] of message.tool_calls.entries()) {
    const key = actionKey(conversation, step, i);
    if (call.type === "function") {
      console.log(`step ${step}: ${call.function.name} ${call.function.arguments}`);
    }
    messages.push(await runAction(key, () => postCall<ChatCompletionToolMessageParam>("/v1/calls/openai", call, key)));
  }
}
