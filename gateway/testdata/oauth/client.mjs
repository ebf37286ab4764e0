// The v2 TypeScript MCP client with its OAuth client-credentials provider,
// against a running toolgate gateway that holds no static key for it:
// the first request gets 401 with the resource_metadata challenge, the SDK
// discovers the authorization server, gets a token for the gateway's
// resource (RFC 8707) and retries. Then it lists, calls and replays, and
// prints one JSON object for gateway/oauth_real_test.go.
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const url = process.env.TOOLGATE_URL;
const provider = new ClientCredentialsProvider({
  clientId: process.env.CLIENT_ID,
  clientSecret: process.env.CLIENT_SECRET,
  expectedIssuer: process.env.ISSUER,
  scope: "toolgate:call",
});
const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
const client = new Client({ name: "toolgate-oauth-test", version: "1.0.0" });
await client.connect(transport);

const out = { protocolVersion: transport.protocolVersion ?? null };
out.tools = (await client.listTools()).tools.map((t) => t.name);
const refund = { order_id: "ord_12345678", amount_minor: 1500, currency: "EUR", reason: "customer_request" };
const key = process.env.IDEMPOTENCY_KEY;
const call = () => client.callTool({ name: "payments.issue_refund", arguments: refund, _meta: { "toolgate/idempotency_key": key } });
out.first = await call();
out.again = await call();
// What the token said (never the token itself): its header's kid, and the claims.
const token = provider.tokens()?.access_token ?? "";
const part = (i) => JSON.parse(Buffer.from(token.split(".")[i] ?? "", "base64url").toString() || "{}");
const claims = part(1);
out.kid = part(0).kid ?? null;
out.claims = { aud: claims.aud, sub: claims.sub, client_id: claims.client_id, tenant: claims.tenant, scope: claims.scope, toolgate_tools: claims.toolgate_tools };
await client.close();
console.log(JSON.stringify(out));
