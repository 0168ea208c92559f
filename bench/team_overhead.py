#!/usr/bin/env python3
"""What team mode costs per call: `read_file` round trips over Streamable HTTP to
three `toolgate serve --http` at once, calls alternating so a busy machine's noise falls on
all alike, median of N calls each:

- `plain`:  no token, `[server] metrics = false`, no audit log;
- `token`:  static bearer token, audit log on, metrics on (scraped once per 100 calls);
- `oauth`:  `[server.auth]` with a JWT checked against an in-script issuer's JWKS (RS256),
            audit log on, metrics on (scraped once per 100 calls);
- `traced`: `token` plus `[telemetry]` exporting every span over OTLP/HTTP to an in-script
            receiver (batches every 100 ms), each call carrying a `traceparent` header.

    .cache/peers/venv/bin/python bench/team_overhead.py target/release/toolgate [CALLS]

Given several binaries (`before after [CALLS]`), every setup runs under each and the calls
alternate over all of them, so two builds are compared in one run on the same load.
"""
import asyncio, json, os, re, statistics, subprocess, sys, tempfile, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from mcp_http import HDRS, init_params, parse  # noqa: E402

AUDIENCE = "https://toolgate.bench/mcp"


def issuer():
    """A loopback authorization server: metadata and a JWKS with one RSA key."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update(kid="bench", alg="RS256", use="sig")
    state = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            base = state["url"]
            docs = {
                "/.well-known/oauth-authorization-server": {
                    "issuer": base, "jwks_uri": f"{base}/jwks",
                    "authorization_endpoint": f"{base}/auth", "token_endpoint": f"{base}/token"},
                "/jwks": {"keys": [jwk]},
            }
            doc = docs.get(self.path)
            self.send_response(200 if doc else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps(doc or {}).encode())

        def log_message(self, *_):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    now = int(time.time())
    token = jwt.encode({"iss": state["url"], "aud": AUDIENCE, "sub": "ada", "iat": now,
                        "exp": now + 3600, "scope": "mcp:tools"}, key, algorithm="RS256",
                       headers={"kid": "bench"})
    return state["url"], token


def otlp_sink():
    """A loopback OTLP/HTTP endpoint that takes every export; returns its URL and a counter
    of bytes received."""
    received = {"bytes": 0, "posts": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            received["bytes"] += len(self.rfile.read(int(self.headers["Content-Length"])))
            received["posts"] += 1
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", received


def start(tg, home, project, config, token=None):
    os.makedirs(os.path.join(home, "toolgate"), exist_ok=True)
    with open(os.path.join(home, "toolgate", "config.toml"), "w") as f:
        f.write(config)
    env = dict(os.environ, XDG_CONFIG_HOME=home, HOME=home, OTEL_BSP_SCHEDULE_DELAY="100")
    env.pop("TOOLGATE_TOKEN", None)
    if token:
        env["TOOLGATE_TOKEN"] = token
    p = subprocess.Popen([tg, "serve", "--root", project, "--http", "127.0.0.1:0",
                          "--log-level", "warn"], stderr=subprocess.PIPE, env=env)
    for line in p.stderr:
        m = re.search(rb"at (http://\S+/mcp)", line)
        if m:
            return p, m.group(1).decode()
    raise SystemExit(f"serve did not start: {config}")


async def open_session(c, url, bearer):
    h = dict(HDRS)
    if bearer:
        h["Authorization"] = f"Bearer {bearer}"
    r = await c.post(url, headers=h, json={"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                            "params": init_params("bench")})
    r.raise_for_status()
    if sid := r.headers.get("mcp-session-id"):
        h["Mcp-Session-Id"] = sid
    await c.post(url, headers=h, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return h


async def main():
    bins = [os.path.abspath(a) for a in sys.argv[1:] if not a.isdigit()]
    counts = [int(a) for a in sys.argv[1:] if a.isdigit()]
    calls = counts[0] if counts else 1000
    iss, jwt_token = issuer()
    sink, received = otlp_sink()
    with tempfile.TemporaryDirectory() as d:
        project = os.path.join(d, "project")
        os.makedirs(project)
        with open(os.path.join(project, "hundred.txt"), "w") as f:
            f.writelines(f"line {i}\n" for i in range(100))
        audit = lambda name: f'[audit]\npath = "{d}/{name}-audit.jsonl"\n'
        setups = {
            "plain": ("[server]\nmetrics = false\n", None, None),
            "token": ("[server]\nmetrics = true\n" + audit("token"), "bench-token", "bench-token"),
            "oauth": (f'[server]\nmetrics = true\n[server.auth]\nissuer = "{iss}"\n'
                      f'audience = "{AUDIENCE}"\n' + audit("oauth"), None, jwt_token),
            "traced": ("[server]\nmetrics = true\n" + audit("traced")
                       + f'[telemetry]\notlp_endpoint = "{sink}"\n', "bench-token", "bench-token"),
        }
        servers, lat = {}, {}
        runs = [(b, n) for b in range(len(bins)) for n in setups]
        for b, name in runs:
            servers[b, name] = start(bins[b], os.path.join(d, f"{b}-{name}"), project,
                                     setups[name][0].replace(f"{d}/{name}-", f"{d}/{b}-{name}-"),
                                     setups[name][1])
            lat[b, name] = []
        try:
            async with httpx.AsyncClient(timeout=60) as c:
                heads = {r: await open_session(c, servers[r][1], setups[r[1]][2]) for r in runs}
                for (b, n), h in heads.items():
                    if n == "traced":
                        h["traceparent"] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
                args = {"name": "read_file", "arguments": {"path": "hundred.txt"}}
                for i in range(calls + 50):
                    for r in runs:
                        t = time.perf_counter()
                        resp = await c.post(servers[r][1], headers=heads[r], json={
                            "jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": args})
                        msg = parse(resp)
                        took = (time.perf_counter() - t) * 1000
                        assert not msg["result"].get("isError"), (r, msg)
                        if i >= 50:  # warm-up
                            lat[r].append(took)
                        if r[1] != "plain" and i % 100 == 0:
                            m = await c.get(servers[r][1].removesuffix("/mcp") + "/metrics",
                                            headers={"Authorization": heads[r]["Authorization"]})
                            assert m.status_code == 200, (r, m.status_code)
        finally:
            for p, _ in servers.values():
                p.terminate()
                p.wait(timeout=10)
        for b in range(len(bins)):
            lines = sum(1 for _ in open(f"{d}/{b}-oauth-audit.jsonl"))
            assert lines >= calls, lines
        assert received["posts"] > 0, "no span reached the OTLP sink"
    for b, tg in enumerate(bins):
        print(tg)
        base = statistics.median(lat[b, "plain"])
        for n in setups:
            v = lat[b, n]
            med = statistics.median(v)
            print(f"  {n:6s} median {med:.3f} ms  p99 {sorted(v)[int(len(v) * 0.99) - 1]:.3f} ms  "
                  f"(+{med - base:.3f} ms vs plain)")
    print(f"calls {calls} each, load {os.getloadavg()[0]:.2f}; "
          f"OTLP: {received['posts']} exports, {received['bytes']} bytes")


if __name__ == "__main__":
    asyncio.run(main())
