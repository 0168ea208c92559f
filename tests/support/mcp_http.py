"""A minimal Streamable HTTP MCP client for the scripts that load `toolgate serve --http`
(bench/schedule.py, bench/mcp_http_load.py, tests/fault/fault_injection.py): raw JSON-RPC
over httpx, so a script controls exactly how many requests and sessions it makes."""
import json

HDRS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-06-18"}


def init_params(name):
    return {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": name, "version": "0"}}


def parse(resp):
    """The JSON-RPC response in `resp`, whether sent as JSON or as a server-sent event."""
    if "text/event-stream" in resp.headers.get("content-type", ""):
        for line in resp.text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                msg = json.loads(line[5:])
                if "id" in msg:
                    return msg
        raise RuntimeError("no message in the SSE response")
    return resp.json()


class Session:
    """One MCP session over a shared httpx.AsyncClient."""

    def __init__(self, client, url, name="script"):
        self.c, self.url, self.h, self.n, self.name = client, url, dict(HDRS), 0, name

    async def open(self):
        r = await self.c.post(self.url, headers=self.h, json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init_params(self.name)})
        r.raise_for_status()
        sid = r.headers.get("mcp-session-id")
        if sid:
            self.h["Mcp-Session-Id"] = sid
        await self.c.post(self.url, headers=self.h,
                          json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    async def call_message(self, name, args):
        """The whole JSON-RPC reply to a tools/call (a result or an error)."""
        self.n += 1
        r = await self.c.post(self.url, headers=self.h, json={
            "jsonrpc": "2.0", "id": self.n, "method": "tools/call",
            "params": {"name": name, "arguments": args}})
        return parse(r)

    async def call(self, name, args):
        """The result of a tools/call."""
        return (await self.call_message(name, args))["result"]

    async def close(self):
        """Ends the session as a well-behaved client does (HTTP DELETE)."""
        if "Mcp-Session-Id" in self.h:
            await self.c.delete(self.url, headers=self.h)
