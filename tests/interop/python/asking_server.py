"""A stdio MCP server (the Python SDK's own `MCPServer`) whose tools ask the client: `confirm`
shows a form with a default (elicitation), `summarize` asks for a completion (sampling),
`where` lists the client's roots; prompt `deploy_plan` takes an argument; resources `notes://readme`
and `notes://huge` (5.6 MB of text) and template `notes://item/{name}`. Mounted behind `toolgate serve`, its requests must reach
toolgate's client (roots are answered by toolgate: the project's folders)."""

from __future__ import annotations

import warnings

from mcp import types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import Prompt
from pydantic import BaseModel, Field

INSTRUCTIONS = "Call confirm before any deploy; summarize needs a model."

app = MCPServer("asker", instructions=INSTRUCTIONS)


class Deploy(BaseModel):
    target: str = Field(default="staging", description="Where to deploy")
    go: bool = Field(description="Deploy now?")


@app.tool()
async def confirm(ctx: Context) -> str:
    """Asks the user whether to deploy, and where."""
    answer = await ctx.elicit("Deploy the build?", Deploy)
    if answer.action == "accept":
        return f"accepted: target={answer.data.target} go={answer.data.go}"
    return answer.action


@app.tool()
async def summarize(text: str, ctx: Context) -> str:
    """Asks the client's model to summarize `text`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sampling is deprecated by SEP-2577, not gone
        reply = await ctx.session.create_message(
            [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))],
            max_tokens=50,
        )
    content = reply.content
    return f"model said: {content.text if isinstance(content, types.TextContent) else content}"


@app.tool(name="where")
async def where(ctx: Context) -> str:
    """Lists the roots the client gives this server."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # roots are deprecated by SEP-2577, not gone
        result = await ctx.session.list_roots()
    return " ".join(f"{root.name}={root.uri}" for root in result.roots)


@app.prompt()
def deploy_plan(target: str) -> str:
    """A plan for deploying to a target."""
    return f"Write a deploy plan for {target}."


@app.tool()
async def add_checklist(ctx: Context) -> str:
    """Adds the prompt `checklist` and tells the client its prompts changed."""

    def checklist() -> str:
        """A release checklist."""
        return "Check the changelog."

    app.add_prompt(Prompt.from_function(checklist))
    await ctx.session.send_prompt_list_changed()
    return "added"


@app.resource("notes://readme")
def readme() -> str:
    """The readme note."""
    return "read me first"


HUGE_LINES = 200_000


@app.resource("notes://huge")
def huge() -> str:
    """A 5.6 MB note."""
    return "".join(f"line {i:07} of a huge note\n" for i in range(HUGE_LINES))


@app.resource("notes://item/{name}")
def item(name: str) -> str:
    """A note by name."""
    return f"note {name}"


if __name__ == "__main__":
    app.run()
