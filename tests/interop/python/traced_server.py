"""An MCP server (the Python SDK's `MCPServer`) whose one tool, `trace_seen`, answers with the
W3C trace context its request carried: `_meta.traceparent` and, over HTTP, the `traceparent`
header. Mounted behind `toolgate serve` with telemetry on, both must name toolgate's client
span. `--http PORT` serves it over Streamable HTTP instead of stdio; `--slow-if FILE` makes
it take ten minutes to start when FILE exists."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

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
    # `--slow-if FILE`: when FILE exists, take ten minutes to start (a server still
    # starting, for the catalog cache's tests; the launch config is the same either way).
    if len(sys.argv) == 3 and sys.argv[1] == "--slow-if":
        if Path(sys.argv[2]).exists():
            time.sleep(600)
        app.run()
    elif len(sys.argv) == 3 and sys.argv[1] == "--http":
        app.run("streamable-http", port=int(sys.argv[2]))
    else:
        app.run()
