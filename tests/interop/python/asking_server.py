"""A stdio MCP server (the Python SDK's own `MCPServer`) whose tools ask the client: `confirm`
shows a form with a default (elicitation), `summarize` asks for a completion (sampling),
`where` lists the client's roots; prompt `deploy_plan` takes an argument; resources `notes://readme`
and `notes://huge` (5.6 MB of text) and template `notes://item/{name}`, subscribable (`subscriptions`
tells how often each was subscribed and unsubscribed, `touch` reports a URI updated) and
completable (the context the client gave comes back as `ctx:NAME=VALUE` values); `roots_changes`
counts the `notifications/roots/list_changed` it got. Mounted behind `toolgate serve`, its
requests must reach toolgate's client. `--http PORT` serves it over Streamable HTTP (both
revisions) instead of stdio."""

from __future__ import annotations

import warnings

from collections import Counter

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


# What toolgate asked of this server: `subscribe URI`, `unsubscribe URI`, `roots changed`.
asked: Counter[str] = Counter()


async def on_subscribe(_ctx: object, params: types.SubscribeRequestParams) -> types.EmptyResult:
    asked[f"subscribe {params.uri}"] += 1
    return types.EmptyResult()


async def on_unsubscribe(_ctx: object, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    asked[f"unsubscribe {params.uri}"] += 1
    return types.EmptyResult()


async def on_roots_changed(_ctx: object, _params: types.NotificationParams) -> None:
    asked["roots changed"] += 1


app._lowlevel_server.add_request_handler(
    "resources/subscribe", types.SubscribeRequestParams, on_subscribe
)
app._lowlevel_server.add_request_handler(
    "resources/unsubscribe", types.UnsubscribeRequestParams, on_unsubscribe
)
app._lowlevel_server.add_notification_handler(
    "notifications/roots/list_changed", types.NotificationParams, on_roots_changed
)


@app.tool()
async def subscriptions() -> str:
    """How often each URI was subscribed and unsubscribed, and the roots changes heard."""
    return "; ".join(f"{key}: {count}" for key, count in sorted(asked.items())) or "none"


@app.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Reports `uri` updated to the client: to its `subscriptions/listen` streams
    (2026-07-28) and as a 2025 notification on its session."""
    await ctx.notify_resource_updated(uri)
    try:
        await ctx.session.send_resource_updated(uri)
    except Exception:  # a 2026-07-28 request has no session stream to send it on
        pass
    return "touched"


@app.completion()
async def complete(
    ref: types.PromptReference | types.ResourceTemplateReference,
    argument: types.CompletionArgument,
    context: types.CompletionContext | None,
) -> types.Completion:
    if isinstance(ref, types.PromptReference):
        options = ["staging", "production"] if ref.name == "deploy_plan" else []
    else:
        options = ["alpha", "beta"] if ref.uri == "notes://item/{name}" else []
    values = [v for v in options if v.startswith(argument.value)]
    given = (context.arguments or {}) if context else {}
    values += [f"ctx:{k}={v}" for k, v in sorted(given.items())]
    return types.Completion(values=values, total=len(values), has_more=False)


if __name__ == "__main__":
    import sys

    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        app.run("streamable-http", port=int(sys.argv[2]))
    else:
        app.run()
