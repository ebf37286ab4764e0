// What the three agent loops share: where toolgate is, the idempotency key of
// an intended action, and what to do with each kind of answer toolgate gives.
// The rule of thumb: the model reads every answer it can act on (a result, a
// refusal, every field error of a 422); the loop itself waits and sends the
// same call again, with the same key, when toolgate says the action is still
// running (409 action_in_progress), was not started (502) or has an unknown
// outcome (504 outcome_unknown) -- never with a new key, which would be a
// second action.

export const toolgateURL = (process.env.TOOLGATE_URL ?? "http://127.0.0.1:8080").replace(/\/+$/, "");
const toolgateKey = process.env.TOOLGATE_KEY ?? "";
// How long to wait for the gateway to reconcile an unknown action.
const unknownWaitMs = Number(process.env.TOOLGATE_UNKNOWN_WAIT_MS ?? 30_000);
const pollMs = Number(process.env.TOOLGATE_POLL_MS ?? 500);
const maxSends = 5;

export function authHeaders(): Record<string, string> {
  return toolgateKey ? { Authorization: `Bearer ${toolgateKey}` } : {};
}

// actionKey names one intended action: this conversation, this step of it,
// this call of the step. Keep the conversation id with the conversation: a loop
// that resumes after a crash sends the same keys again, and toolgate replays
// what already ran instead of running it twice. The provider's call id
// (call_..., toolu_...) is no key: a model that re-generates a step makes new ones.
export function actionKey(conversation: string, step: number, call: number): string {
  return `${conversation}-step${step}-call${call}`;
}

// Outcome is what toolgate said about one call, whichever door it came through.
export interface Outcome {
  status: number; // the one-shot status: the downstream's (201, 404, ...) or the problem's (422, 409, 504, ...)
  problem?: string; // the problem code, when the gateway refused or lost the call
  retryAfterMs?: number;
  replayed: boolean;
}

type Move = "model" | "retry" | "reconcile";

function moveFor(o: Outcome): Move {
  switch (o.problem) {
    case "action_in_progress": // 409: the first call of this action still runs: its result comes to the same key
    case "downstream_unreachable": // 502: nothing was done; the same key may try again
      return "retry";
    case "outcome_unknown": // 504: the effect may have happened
    case "action_unknown": // 409: a later call while the action is still unknown
      return "reconcile";
    default:
      // The downstream's answer (2xx, or 4xx such as ORDER_NOT_FOUND), 422
      // invalid_arguments (every field error in errors[]; the key is not
      // consumed, the model fixes the fields), 409 idempotency_key_reused (a
      // key made twice for two actions: a bug in the application), 403
      // action_denied, ...: the model reads it and decides.
      return "model";
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// runAction sends one tool call with its key until toolgate's answer is one for
// the model, and returns that answer. send makes one request and reports what
// toolgate said.
export async function runAction<T>(key: string, send: () => Promise<[Outcome, T]>): Promise<T> {
  for (let n = 1; ; n++) {
    const [outcome, answer] = await send();
    const code = outcome.problem ? ` ${outcome.problem}` : "";
    console.log(`  ${key}: ${outcome.status}${code}${outcome.replayed ? " (replayed)" : ""}`);
    const move = moveFor(outcome);
    if (move === "model" || n === maxSends) {
      return answer;
    }
    if (move === "retry") {
      await sleep(outcome.retryAfterMs ?? 1000);
    } else if (!(await settled(key))) {
      // Still unknown: the answer says so, and the model tells the user the
      // refund is being checked. Nobody may send it under a new key.
      return answer;
    }
  }
}

// settled waits until the gateway has reconciled the unknown action against
// the downstream (its lookup found the effect, or proved there was none).
async function settled(key: string): Promise<boolean> {
  const deadline = Date.now() + unknownWaitMs;
  while (Date.now() < deadline) {
    const res = await fetch(`${toolgateURL}/v1/actions/${encodeURIComponent(key)}`, { headers: authHeaders() });
    if (res.ok) {
      const action = (await res.json()) as { state: string };
      console.log(`  ${key}: action is ${action.state}`);
      if (action.state !== "unknown" && action.state !== "running") {
        return true;
      }
    }
    await sleep(pollMs);
  }
  return false;
}

// getJSON reads a toolgate endpoint such as /v1/export?format=openai.
export async function getJSON<T>(path: string): Promise<T> {
  const res = await fetch(toolgateURL + path, { headers: authHeaders() });
  if (!res.ok) {
    throw new Error(`toolgate GET ${path}: ${res.status} ${await res.text()}`);
  }
  return (await res.json()) as T;
}

// postCall sends one tool call in a provider's shape to toolgate's door for it
// (/v1/calls/openai, /v1/calls/anthropic). Everything the model should see is
// HTTP 200 in the provider's shape, failures included; the headers tell the
// program what happened. Any other status is for the integrator: bad
// credentials, a malformed call, or the gateway unwell (a 503 carries
// Retry-After and is tried again).
export async function postCall<T>(path: string, call: unknown, key: string): Promise<[Outcome, T]> {
  for (let n = 1; ; n++) {
    const res = await fetch(toolgateURL + path, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Idempotency-Key": key, ...authHeaders() },
      body: JSON.stringify(call),
    });
    const body = await res.text();
    const retryAfter = res.headers.get("Retry-After");
    if (res.status === 503 && retryAfter && n < maxSends) {
      await sleep(Number(retryAfter) * 1000);
      continue;
    }
    if (res.status !== 200) {
      throw new Error(`toolgate POST ${path}: ${res.status} ${body}`);
    }
    const outcome: Outcome = {
      status: Number(res.headers.get("Toolgate-Call-Status")),
      problem: res.headers.get("Toolgate-Problem-Code") ?? undefined,
      retryAfterMs: retryAfter ? Number(retryAfter) * 1000 : undefined,
      replayed: res.headers.get("Idempotent-Replayed") === "true",
    };
    return [outcome, JSON.parse(body) as T];
  }
}
