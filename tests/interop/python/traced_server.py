"""An MCP server (the Python SDK's `MCPServer`) whose one tool, `trace_seen`, answers with the
W3C trace context its request carried: `_meta.traceparent` and, over HTTP, the `traceparent`
header. Mounted behind `toolgate serve` with telemetry on, both must name toolgate's client
span. `--http PORT` serves it over Streamable HTTP instead of stdio."""

from __future__ import annotations

import json
import sys

from mcp.server.mcpserver import Context, MCPServer

app = MCPServer("traced")


@app.tool()
async def trace_seen(ctx: Context) -> str:
    """The trace context this request carried."""
    params = ctx.request_context.params or {}
    meta = params.get("_meta") or {}
    headers = ctx.headers or {}
    return json.dumps({"meta": meta.get("traceparent"), "header": headers.get("traceparent")})


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        app.run("streamable-http", port=int(sys.argv[2]))
    else:
        app.run()
