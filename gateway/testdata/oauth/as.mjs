// A real OAuth 2.1 authorization server for gateway/oauth_real_test.go:
// oidc-provider (an OpenID-certified implementation) on 127.0.0.1:$PORT,
// issuing client-credentials access tokens as JWTs for the resource a
// client names (RFC 8707), with the tenant and tools claims toolgate reads.
// Its signing keys are the private JWK Set in $JWKS_FILE: the test restarts
// it with another set to rotate them. It prints "ready" once it listens.
import { readFileSync } from "node:fs";
import Provider from "oidc-provider";

const port = Number(process.env.PORT);
const issuer = `http://127.0.0.1:${port}`;
const jwks = JSON.parse(readFileSync(process.env.JWKS_FILE, "utf8"));

// Each client is one caller: its tenant, its tools and the scopes it may get.
const callers = {
  "agent-a": { tenant: "acme", tools: ["payments.*", "orders.get_order"], scope: "toolgate:call" },
  "agent-b": { tenant: "acme", tools: ["*"], scope: "toolgate:call" },
  oncall: { tenant: "acme", tools: ["*"], scope: "toolgate:call toolgate:operate" },
};

const provider = new Provider(issuer, {
  clients: Object.entries(callers).map(([id, c]) => ({
    client_id: id,
    client_secret: `secret-${id}`,
    grant_types: ["client_credentials"],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: "client_secret_basic",
    scope: c.scope,
    id_token_signed_response_alg: jwks.keys[0].alg,
  })),
  jwks,
  scopes: ["toolgate:call", "toolgate:operate"],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource) => ({
        scope: "toolgate:call toolgate:operate",
        audience: resource,
        accessTokenTTL: 300,
        accessTokenFormat: "jwt",
        jwt: { sign: { alg: jwks.keys[0].alg } },
      }),
    },
  },
  extraTokenClaims: (ctx, token) => {
    const c = callers[token.clientId];
    return c ? { tenant: c.tenant, toolgate_tools: c.tools } : {};
  },
});
provider.on("server_error", (ctx, err) => console.error("server_error", err));
provider.on("grant.error", (ctx, err) => console.error("grant.error", err.message, err.error_description ?? ""));
provider.listen(port, "127.0.0.1", () => console.log("ready"));
