// A real authorization server guarding a small MCP server, for the OAuth end-to-end tests
// (tests/interop/python/test_oauth.py, tests/interop/clients/test_clients.py).
//
// - The authorization server is `oidc-provider` (a certified OpenID provider), installed
//   by scripts/install-oauth-peers.sh: dynamic client registration, PKCE (required),
//   resource indicators (RFC 8707) with opaque access tokens for the MCP server's URL,
//   refresh tokens, revocation. Its login and consent are approved at once for the user
//   ACCOUNT (the "browser" only follows redirects).
// - The MCP server (Streamable HTTP, JSON responses, no sessions) answers 401 with an
//   RFC 9728 `WWW-Authenticate` challenge unless the bearer token is an access token the
//   provider issued for it with the `mcp:tools` scope; it serves its protected-resource
//   metadata and one tool, `whoami`.
// - /admin/* (on the MCP server) lets the test reject the access tokens issued so far
//   (a refresh must follow), revoke the grant (a new login must follow), read counts, and
//   choose the user the next login approves (`/admin/account/NAME`).
//
// - With JWT_AUDIENCE set, any other loopback `/mcp` URL is a resource too (toolgate's own
//   `serve --http`, whose port is not known in advance): its access tokens are JWTs signed
//   with the provider's keys, `aud` = JWT_AUDIENCE, for a resource server that validates
//   them against the JWKS (tests/interop/python/test_serve_oauth.py).
//
// Usage: node provider.mjs OIDC_PROVIDER_DIR [ACCOUNT]. ACCOUNT (default `ada`) is the user
// who logs in; `whoami` answers `hello ACCOUNT`. Prints one JSON line {issuer, mcp, admin}
// once both servers listen. The fixture is tests/interop/oauth/oauth_provider.py.

import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";

const providerDir = process.argv[2];
let account = process.argv[3] || "ada";
const { default: Provider, errors } = await import(
  pathToFileURL(path.join(providerDir, "lib", "index.js")).href
);

const listen = (server) =>
  new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server.address().port)));

const asServer = http.createServer();
const mcpServer = http.createServer();
const asPort = await listen(asServer);
const mcpPort = await listen(mcpServer);
const issuer = `http://127.0.0.1:${asPort}`;
const mcpUrl = `http://127.0.0.1:${mcpPort}/mcp`;
const prmUrl = `http://127.0.0.1:${mcpPort}/.well-known/oauth-protected-resource/mcp`;
const SCOPE = "mcp:tools";
const jwtAudience = process.env.JWT_AUDIENCE;
const loopbackMcp = /^http:\/\/127\.0\.0\.1:\d+\/mcp$/;

const stats = { registrations: 0, codeGrants: 0, refreshGrants: 0, rejected: 0 };
const seenTokens = new Set();
const deniedTokens = new Set();
const grants = new Set();

const provider = new Provider(issuer, {
  findAccount: async (ctx, id) => ({
    accountId: id,
    claims: async () => ({ sub: id, email: `${id}@example.com` }),
  }),
  scopes: ["openid", "offline_access", SCOPE],
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    revocation: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => mcpUrl,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource) => {
        if (resource === mcpUrl) {
          return { scope: SCOPE, audience: mcpUrl, accessTokenTTL: 3600, accessTokenFormat: "opaque" };
        }
        if (jwtAudience && loopbackMcp.test(resource)) {
          return { scope: SCOPE, audience: jwtAudience, accessTokenTTL: 3600, accessTokenFormat: "jwt" };
        }
        throw new errors.InvalidTarget(`unknown resource ${resource}`);
      },
    },
  },
  issueRefreshToken: async (ctx, client) => client.grantTypeAllowed("refresh_token"),
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  clientBasedCORS: () => true,
});
provider.on("registration_create.success", () => stats.registrations++);
provider.on("grant.success", (ctx) => {
  const type = ctx.oidc.params.grant_type;
  if (type === "authorization_code") stats.codeGrants++;
  if (type === "refresh_token") stats.refreshGrants++;
});

// Login and consent, approved at once: what a user clicking "Allow" does.
async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  let result;
  if (prompt.name === "login") {
    result = { login: { accountId: account } };
  } else {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const d = prompt.details;
    if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(" "));
    if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
    for (const [resource, scopes] of Object.entries(d.missingResourceScopes || {})) {
      grant.addResourceScope(resource, scopes.join(" "));
    }
    const grantId = await grant.save();
    grants.add(grantId);
    result = { consent: { grantId } };
  }
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
}

const callback = provider.callback();
asServer.on("request", (req, res) => {
  if (req.url.startsWith("/interaction/")) {
    interaction(req, res).catch((e) => {
      res.statusCode = 500;
      res.end(String(e));
    });
  } else {
    callback(req, res);
  }
});

function json(res, status, body, headers = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

function challenge(res, error) {
  stats.rejected++;
  const parts = [`resource_metadata="${prmUrl}"`, `scope="${SCOPE}"`];
  if (error) parts.push(`error="${error}"`);
  json(res, 401, { error: error || "unauthorized" }, { "www-authenticate": `Bearer ${parts.join(", ")}` });
}

// The access token's owner when it is valid for this server, else null.
async function authorized(req) {
  const header = req.headers.authorization || "";
  const m = /^Bearer (.+)$/i.exec(header);
  if (!m) return null;
  const value = m[1];
  if (deniedTokens.has(value)) return null;
  const token = await provider.AccessToken.find(value);
  if (!token || token.isExpired) return null;
  const audience = [].concat(token.aud || []);
  if (!audience.includes(mcpUrl)) return null;
  if (!String(token.scope || "").split(" ").includes(SCOPE)) return null;
  if (!(await provider.Grant.find(token.grantId))) return null;
  seenTokens.add(value);
  return token.accountId;
}

function body(req) {
  return new Promise((resolve) => {
    let data = "";
    req.on("data", (c) => (data += c));
    req.on("end", () => resolve(data));
  });
}

async function mcp(req, res) {
  if (req.method === "GET" && req.url === "/.well-known/oauth-protected-resource/mcp") {
    return json(res, 200, {
      resource: mcpUrl,
      authorization_servers: [issuer],
      scopes_supported: [SCOPE],
      bearer_methods_supported: ["header"],
    });
  }
  if (req.url.startsWith("/admin/")) {
    if (req.url === "/admin/stats") return json(res, 200, stats);
    // Who the next login approves (several users of one toolgate, one after the other).
    const as = /^\/admin\/account\/([A-Za-z0-9_-]+)$/.exec(req.url);
    if (as) {
      account = as[1];
      return json(res, 200, { account });
    }
    if (req.url === "/admin/reject-access-tokens") {
      for (const t of seenTokens) deniedTokens.add(t);
      return json(res, 200, { denied: deniedTokens.size });
    }
    if (req.url === "/admin/revoke-grants") {
      for (const id of grants) {
        const grant = await provider.Grant.find(id);
        if (grant) await grant.destroy();
      }
      for (const t of seenTokens) deniedTokens.add(t);
      return json(res, 200, { revoked: grants.size });
    }
    return json(res, 404, {});
  }
  if (req.url !== "/mcp") return json(res, 404, {});
  if (req.method !== "POST") return json(res, 405, {});
  const who = await authorized(req);
  const text = await body(req);
  if (!who) return challenge(res, req.headers.authorization ? "invalid_token" : null);
  const message = JSON.parse(text);
  if (message.id === undefined) {
    res.writeHead(202);
    return res.end();
  }
  const reply = (result) => json(res, 200, { jsonrpc: "2.0", id: message.id, result });
  switch (message.method) {
    case "initialize":
      return reply({
        protocolVersion: message.params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "oauth-test-server", version: "1.0.0" },
      });
    case "tools/list":
      return reply({
        tools: [
          {
            name: "whoami",
            description: "Says who the access token belongs to.",
            inputSchema: { type: "object", properties: {} },
          },
        ],
      });
    case "tools/call":
      return reply({ content: [{ type: "text", text: `hello ${who}` }] });
    case "ping":
      return reply({});
    default:
      return json(res, 200, {
        jsonrpc: "2.0",
        id: message.id,
        error: { code: -32601, message: `method not found: ${message.method}` },
      });
  }
}

mcpServer.on("request", (req, res) => {
  mcp(req, res).catch((e) => json(res, 500, { error: String(e) }));
});

console.log(JSON.stringify({ issuer, mcp: mcpUrl, admin: `http://127.0.0.1:${mcpPort}/admin` }));
process.on("SIGTERM", () => process.exit(0));
process.on("SIGINT", () => process.exit(0));
