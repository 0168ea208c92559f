#!/usr/bin/env node
// Dumps the `tools/list` of real MCP servers from npm into one JSON fixture for the
// disclosure retrieval benchmark (crates/core/benches/disclosure.rs).
//
//   bash bench/disclosure/install.sh        # installs the servers into .cache/peers/bench-npm
//   node bench/disclosure/dump_tools.mjs > crates/core/benches/fixtures/mcp_servers.json
//
// Every server here lists its tools without real credentials (dummy tokens where a server
// insists on one at start). Plain JSON-RPC over stdio, no SDK, so the dump shows exactly
// what a client receives. Servers that fail are reported on stderr and left out.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const peers = join(root, ".cache", "peers");
const dummy = "dummy-token-for-listing-tools";

// name → [package, npm folder, extra args, env]
const SERVERS = [
  ["everything", "@modelcontextprotocol/server-everything", "npm", ["stdio"], {}],
  ["filesystem", "@modelcontextprotocol/server-filesystem", "npm", ["/tmp"], {}],
  ["memory", "@modelcontextprotocol/server-memory", "bench-npm", [], {}],
  ["github", "@modelcontextprotocol/server-github", "bench-npm", [], { GITHUB_PERSONAL_ACCESS_TOKEN: dummy }],
  ["gitlab", "@modelcontextprotocol/server-gitlab", "bench-npm", [], { GITLAB_PERSONAL_ACCESS_TOKEN: dummy }],
  ["slack", "@modelcontextprotocol/server-slack", "bench-npm", [], { SLACK_BOT_TOKEN: dummy, SLACK_TEAM_ID: "T0000" }],
  ["google-maps", "@modelcontextprotocol/server-google-maps", "bench-npm", [], { GOOGLE_MAPS_API_KEY: dummy }],
  ["brave-search", "@modelcontextprotocol/server-brave-search", "bench-npm", [], { BRAVE_API_KEY: dummy }],
  ["sequential-thinking", "@modelcontextprotocol/server-sequential-thinking", "bench-npm", [], {}],
  ["postgres", "@modelcontextprotocol/server-postgres", "bench-npm", ["postgresql://127.0.0.1:1/none"], {}],
  ["playwright", "@playwright/mcp", "bench-npm", [], {}],
  ["notion", "@notionhq/notion-mcp-server", "bench-npm", [], { NOTION_TOKEN: dummy }],
  ["context7", "@upstash/context7-mcp", "bench-npm", [], {}],
  ["tavily", "tavily-mcp", "bench-npm", [], { TAVILY_API_KEY: dummy }],
  ["firecrawl", "firecrawl-mcp", "bench-npm", [], { FIRECRAWL_API_KEY: dummy }],
  ["exa", "exa-mcp-server", "bench-npm", [], { EXA_API_KEY: dummy }],
];

function entry(pkg, folder) {
  const dir = join(peers, folder, "node_modules", pkg);
  const meta = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const bin = typeof meta.bin === "string" ? meta.bin : Object.values(meta.bin)[0];
  return { script: join(dir, bin), version: meta.version };
}

function list(name, script, args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], {
      env: { ...process.env, ...env },
      stdio: ["pipe", "pipe", "ignore"],
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${name}: timed out`));
    }, 30_000);
    let buf = "";
    let id = 0;
    const pending = new Map();
    const send = (method, params) => {
      const msg = { jsonrpc: "2.0", method, params };
      if (!method.startsWith("notifications/")) {
        msg.id = ++id;
      }
      child.stdin.write(JSON.stringify(msg) + "\n");
      return msg.id === undefined
        ? Promise.resolve()
        : new Promise((ok, bad) => pending.set(msg.id, { ok, bad }));
    };
    child.stdout.on("data", (chunk) => {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line) continue;
        let msg;
        try {
          msg = JSON.parse(line);
        } catch {
          continue;
        }
        const p = pending.get(msg.id);
        if (!p) continue;
        pending.delete(msg.id);
        msg.error ? p.bad(new Error(`${name}: ${JSON.stringify(msg.error)}`)) : p.ok(msg.result);
      }
    });
    child.on("exit", (code) => reject(new Error(`${name}: exited with ${code}`)));
    (async () => {
      await send("initialize", {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "toolgate-bench-dump", version: "0" },
      });
      await send("notifications/initialized", {});
      const tools = [];
      let cursor;
      do {
        const page = await send("tools/list", cursor ? { cursor } : {});
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      return tools;
    })().then(
      (tools) => {
        clearTimeout(timer);
        child.removeAllListeners("exit");
        child.kill("SIGKILL");
        resolve(tools);
      },
      (e) => {
        clearTimeout(timer);
        child.kill("SIGKILL");
        reject(e);
      },
    );
  });
}

const out = [];
for (const [name, pkg, folder, args, env] of SERVERS) {
  try {
    const { script, version } = entry(pkg, folder);
    const tools = await list(name, script, args, env);
    const slim = tools.map((t) => ({
      name: t.name,
      description: t.description ?? "",
      inputSchema: t.inputSchema ?? { type: "object" },
    }));
    out.push({ server: name, package: pkg, version, tools: slim });
    process.stderr.write(`${name}: ${tools.length} tools\n`);
  } catch (e) {
    process.stderr.write(`skipped ${name}: ${e.message}\n`);
  }
}
process.stdout.write(JSON.stringify({ servers: out }, null, 1) + "\n");
