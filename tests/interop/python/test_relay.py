"""A mounted server's requests to the client reach toolgate's own client.

`asking_server.py` (the Python SDK's `MCPServer`) is mounted from the user config; its tools
ask for a form (elicitation, with a default the answer leaves out) and for a completion
(sampling). The SDK client in front of `toolgate serve` offers both, over stdio and HTTP, and
must see each request exactly as the server made it; its answers must reach the server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import HttpServer, http_connection, stdio_connection
from mcp import types
from mcp.shared.exceptions import MCPError

INSTRUCTIONS = "Call confirm before any deploy; summarize needs a model."


class User:
    """The client side: records what it was asked and answers as a user and a model would."""

    def __init__(self) -> None:
        self.forms: list[types.ElicitRequestParams] = []
        self.samples: list[types.CreateMessageRequestParams] = []

    async def elicit(self, _ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.forms.append(params)
        # The user ticks "go" and leaves the prefilled target as it is.
        return types.ElicitResult(action="accept", content={"go": True})

    async def sample(
        self, _ctx: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.samples.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="three words summary"),
            model="scripted",
        )


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("transport", "mode"),
    [("stdio", "legacy"), ("http", "legacy"), ("stdio", "auto"), ("http", "auto")],
    # "auto" speaks 2026-07-28: it takes no requests mid-call, so toolgate answers the call
    # `input_required` with the server's request and resumes it when the client sends the
    # answer back (SEP-2322).
    ids=["stdio", "http", "stdio-2026-07-28", "http-2026-07-28"],
)
async def test_elicitation_and_sampling_reach_the_client_of_the_call(
    transport: str,
    mode: str,
    project: Path,
    tmp_path: Path,
    mounted_env: dict[str, str],
    start_http_server: Callable[..., HttpServer],
) -> None:
    user = User()
    options = {"elicitation_callback": user.elicit, "sampling_callback": user.sample}
    if transport == "stdio":
        connection = stdio_connection(
            project, mounted_env, mode, tmp_path / "stdio-server.stderr", **options
        )
    else:
        connection = http_connection(start_http_server(project).url, mode, **options)
    async with connection as client:
        result = await client.call_tool("mcp__asker__confirm", {})
        text = result.content[0].text
        assert not result.is_error, text
        # The default the user left alone was filled in (SEP-1034), the answer came through.
        assert "accepted: target=staging go=True" in text, text
        assert len(user.forms) == 1
        form = user.forms[0]
        assert form.message == "Deploy the build?"
        assert form.requested_schema["properties"]["target"]["default"] == "staging"

        result = await client.call_tool("mcp__asker__summarize", {"text": "a very long text"})
        text = result.content[0].text
        assert not result.is_error, text
        assert "model said: three words summary" in text, text
        assert len(user.samples) == 1
        message = user.samples[0].messages[0]
        assert message.content.text == "a very long text"

        # The server's instructions (known from the warm catalog) follow toolgate's own,
        # under its name.
        instructions = client.instructions or ""
        assert "### asker (tools `mcp__asker__*`)" in instructions, instructions
        assert INSTRUCTIONS in instructions, instructions
        assert instructions.startswith("toolgate gives bounded, safe file tools"), instructions

        # Roots come from toolgate: the project folder, whatever the client offers.
        result = await client.call_tool("mcp__asker__where", {})
        text = result.content[0].text
        assert text == f"{project.name}={project.resolve().as_uri()}/", text


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"], ids=["2025-11-25", "2026-07-28"])
async def test_a_client_that_cannot_be_asked_declines_the_form_and_sampling_says_why(
    mode: str, project: Path, tmp_path: Path, mounted_env: dict[str, str]
) -> None:
    """A client that offers neither forms nor sampling: the server's form is declined (it
    goes on without the answer); its sampling, which it cannot do without, fails the call —
    with the reason in the result for a 2025 client, and with the protocol's "missing
    required client capability" error (-32021) for a 2026-07-28 client, which names its
    capabilities in each request (SEP-2575)."""
    async with stdio_connection(project, mounted_env, mode, tmp_path / "stdio-server.stderr") as client:
        result = await client.call_tool("mcp__asker__confirm", {})
        assert result.content[0].text == "decline", result.content[0].text
        if mode == "legacy":
            result = await client.call_tool("mcp__asker__summarize", {"text": "x"})
            text = result.content[0].text
            assert result.is_error, text
            assert "sampling/createMessage" in text and "does not offer" in text, text
        else:
            with pytest.raises(MCPError) as refused:
                await client.call_tool("mcp__asker__summarize", {"text": "x"})
            assert refused.value.code == -32021, refused.value
            assert "sampling" in str(refused.value.data), refused.value


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_mounted_servers_prompts_are_served_under_its_name(
    mode: str, project: Path, tmp_path: Path, mounted_env: dict[str, str]
) -> None:
    async with stdio_connection(
        project, mounted_env, mode, tmp_path / "stdio-server.stderr"
    ) as client:
        # A call waits for the server to be ready; its prompts are listed by then.
        await client.call_tool("mcp__asker__where", {})
        names = [p.name for p in (await client.list_prompts()).prompts]
        assert "mcp__asker__deploy_plan" in names, names
        got = await client.get_prompt("mcp__asker__deploy_plan", {"target": "staging"})
        text = got.messages[0].content.text
        assert text == "Write a deploy plan for staging.", text


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_mounted_servers_resources_and_templates_are_readable_through_toolgate(
    mode: str, project: Path, tmp_path: Path, mounted_env: dict[str, str]
) -> None:
    async with stdio_connection(
        project, mounted_env, mode, tmp_path / "stdio-server.stderr"
    ) as client:
        # A call waits for the server to be ready; its resources are listed by then.
        await client.call_tool("mcp__asker__where", {})
        uris = [str(r.uri) for r in (await client.list_resources()).resources]
        assert "notes://readme" in uris, uris
        templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        assert "notes://item/{name}" in templates, templates
        read = await client.read_resource("notes://readme")
        assert read.contents[0].text == "read me first", read
        read = await client.read_resource("notes://item/alpha")
        assert read.contents[0].text == "note alpha", read


@pytest.mark.anyio
async def test_a_change_of_a_mounted_servers_prompts_reaches_the_client(
    project: Path, tmp_path: Path, mounted_env: dict[str, str]
) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.PromptListChangedNotification):
            changed.set()

    async with stdio_connection(
        project, mounted_env, "legacy", tmp_path / "stdio-server.stderr", message_handler=on_message
    ) as client:
        await client.call_tool("mcp__asker__where", {})
        names = [p.name for p in (await client.list_prompts()).prompts]
        assert "mcp__asker__checklist" not in names, names
        changed = anyio.Event()  # only a change from now on counts
        result = await client.call_tool("mcp__asker__add_checklist", {})
        assert result.content[0].text == "added", result
        with anyio.fail_after(60):  # a guard against a hang, not a speed goal
            await changed.wait()
        names = [p.name for p in (await client.list_prompts()).prompts]
        assert "mcp__asker__checklist" in names, names
