"""What a mounted server offers beyond tools, prompts and reads reaches toolgate's client:
subscriptions to its resources (made once upstream however many sessions follow, undone
with the last) and their updates, completion of its prompt and template arguments, and the
client's roots (during a call) with their changes.

The mounted server is `asking_server.py` (the Python SDK's `MCPServer`), whose
`subscriptions` tool says what toolgate asked of it."""

from __future__ import annotations

import subprocess
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import (
    ASKER,
    HttpServer,
    http_connection,
    python_http_server,
    stdio_connection,
    toolgate_bin,
)
from mcp import Client, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.subscriptions import ResourceUpdated

pytestmark = pytest.mark.anyio

# A guard against a hang, not a speed goal: the machine may be loaded.
GUARD = 60


class Updates:
    """The `notifications/resources/updated` one client received, in order."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self.arrived = anyio.Event()

    async def handle(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.uris.append(str(message.params.uri))
            self.arrived.set()

    async def wait_for(self, uri: str) -> None:
        with anyio.fail_after(GUARD):
            while uri not in self.uris:
                self.arrived = anyio.Event()
                await self.arrived.wait()


async def asked(client: Any) -> str:
    result = await client.call_tool("mcp__asker__subscriptions", {})
    return result.content[0].text


async def until_asked(client: Any, what: str) -> str:
    """Asks the server what toolgate asked of it until `what` shows (toolgate tells a server
    of an unsubscribe or a roots change in the background)."""
    with anyio.fail_after(GUARD):
        while what not in (text := await asked(client)):
            await anyio.sleep(0.2)  # a poll interval, not a deadline
    return text


async def legacy(call: Callable[..., Any], *args: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # resources/subscribe: deprecated in 2026, not gone
        return await call(*args)


async def test_a_resource_is_subscribed_once_upstream_and_its_updates_reach_each_subscriber(
    project: Path,
    mounted_env: dict[str, str],
    start_http_server: Callable[..., HttpServer],
) -> None:
    url = start_http_server(project).url
    a, b = Updates(), Updates()
    async with (
        http_connection(url, "legacy", message_handler=a.handle) as one,
        http_connection(url, "legacy", message_handler=b.handle) as two,
    ):
        assert one.server_capabilities.resources.subscribe is True
        await one.call_tool("mcp__asker__where", {})  # waits for the server to be ready
        await legacy(one.subscribe_resource, "notes://readme")
        await legacy(two.subscribe_resource, "notes://readme")
        await legacy(one.subscribe_resource, "notes://item/alpha")
        text = await asked(one)
        assert "subscribe notes://readme: 1" in text, text
        assert "subscribe notes://item/alpha: 1" in text, text
        assert "unsubscribe" not in text, text

        # An update of a URI nobody follows is not passed on; the followed one reaches both.
        await one.call_tool("mcp__asker__touch", {"uri": "notes://item/beta"})
        await one.call_tool("mcp__asker__touch", {"uri": "notes://readme"})
        await a.wait_for("notes://readme")
        await b.wait_for("notes://readme")
        assert a.uris == ["notes://readme"] and b.uris == ["notes://readme"], (a.uris, b.uris)
        # Only its subscriber hears of the template instance.
        await one.call_tool("mcp__asker__touch", {"uri": "notes://item/alpha"})
        await a.wait_for("notes://item/alpha")
        await two.call_tool("mcp__asker__touch", {"uri": "notes://readme"})
        await b.wait_for("notes://readme")
        assert "notes://item/alpha" not in b.uris, b.uris

        # The first to leave keeps the server subscribed; the last unsubscribes it.
        await legacy(one.unsubscribe_resource, "notes://readme")
        assert "unsubscribe notes://readme" not in await asked(one)
        await legacy(two.unsubscribe_resource, "notes://readme")
        text = await until_asked(one, "unsubscribe notes://readme: 1")
        assert "subscribe notes://readme: 1" in text, text
    # A session that ends drops what it still followed.
    async with http_connection(url, "legacy") as three:
        await until_asked(three, "unsubscribe notes://item/alpha: 1")


async def test_a_listen_stream_follows_the_uris_it_names_that_a_server_has(
    project: Path, tmp_path: Path, mounted_env: dict[str, str]
) -> None:
    async with stdio_connection(project, mounted_env, "auto", tmp_path / "stderr") as client:
        await client.call_tool("mcp__asker__where", {})
        # A URI no mounted server has is not honored: the client learns it is not followed.
        named = ["notes://readme", "nope://nothing/here"]
        async with client.listen(resource_subscriptions=named) as sub:
            assert list(sub.honored.resource_subscriptions or []) == ["notes://readme"]
            # The stream is acknowledged (its honored URIs) before toolgate's own subscribe to
            # the server is through: wait for it, then change the resources.
            await until_asked(client, "subscribe notes://readme: 1")
            await client.call_tool("mcp__asker__touch", {"uri": "notes://item/beta"})
            await client.call_tool("mcp__asker__touch", {"uri": "notes://readme"})
            with anyio.fail_after(GUARD):
                async for event in sub:
                    # The first event is the followed URI's: the other was not passed on.
                    assert isinstance(event, ResourceUpdated), event
                    assert str(event.uri) == "notes://readme", event
                    break
        await until_asked(client, "unsubscribe notes://readme: 1")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_completion_is_forwarded_with_its_context(
    mode: str, project: Path, tmp_path: Path, mounted_env: dict[str, str]
) -> None:
    async with stdio_connection(project, mounted_env, mode, tmp_path / "stderr") as client:
        await client.call_tool("mcp__asker__where", {})
        prompt = types.PromptReference(type="ref/prompt", name="mcp__asker__deploy_plan")
        got = await client.complete(prompt, {"name": "target", "value": "st"})
        assert got.completion.values == ["staging"], got
        template = types.ResourceTemplateReference(type="ref/resource", uri="notes://item/{name}")
        got = await client.complete(
            template, {"name": "name", "value": ""}, context_arguments={"kind": "draft"}
        )
        assert got.completion.values == ["alpha", "beta", "ctx:kind=draft"], got


async def test_a_server_asking_for_roots_during_a_call_gets_the_clients_within_the_project(
    project: Path, tmp_path: Path, mounted_env: dict[str, str]
) -> None:
    sub = project.resolve() / "sub"
    calls = 0

    async def roots(_ctx: Any) -> types.ListRootsResult:
        nonlocal calls
        calls += 1
        return types.ListRootsResult(
            roots=[
                types.Root(uri=sub.as_uri() + "/", name="sub"),
                types.Root(uri=tmp_path.resolve().as_uri() + "/", name="around"),
                types.Root(uri="file:///nonexistent-elsewhere/", name="elsewhere"),
            ]
        )

    # `serve --root PROJECT` sets the roots, so the client's are cut to the project: a root
    # inside it is kept, one around it is replaced by the project, one elsewhere dropped.
    async with stdio_connection(
        project, mounted_env, "legacy", tmp_path / "stderr", list_roots_callback=roots
    ) as client:
        result = await client.call_tool("mcp__asker__where", {})
        text = result.content[0].text
        assert text == f"sub={sub.as_uri()}/ project={project.resolve().as_uri()}/", text
        assert calls == 1
        # The client's roots changed: the mounted server hears of it.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # roots: deprecated in 2026, not gone
            await client.send_roots_list_changed()
        await until_asked(client, "roots changed: 1")


@pytest.fixture
def http_asker(tmp_path: Path, server_env: dict[str, str]) -> Iterator[str]:
    """`asking_server.py` over Streamable HTTP (it speaks 2026-07-28 when asked), its URL."""
    with python_http_server(ASKER, tmp_path / "asker-http.log", server_env) as url:
        yield url


async def test_a_resource_of_a_server_mounted_on_2026_07_28_is_followed_through_a_listen_stream(
    project: Path, tmp_path: Path, server_env: dict[str, str], http_asker: str
) -> None:
    config = Path(server_env["XDG_CONFIG_HOME"]) / "toolgate" / "config.toml"
    config.write_text(config.read_text() + f'\n[mcp_servers.remote]\nurl = "{http_asker}"\n')
    listed = subprocess.run(
        [toolgate_bin(), "--root", str(project), "mcp", "list"],
        env=server_env, capture_output=True, text=True, timeout=120,
    )
    assert " ready " in listed.stdout, listed.stdout + listed.stderr
    updates = Updates()
    async with stdio_connection(
        project, server_env, "legacy", tmp_path / "stderr", message_handler=updates.handle
    ) as client:
        await client.call_tool("mcp__remote__subscriptions", {})  # waits until it is ready
        await legacy(client.subscribe_resource, "notes://readme")
        await client.call_tool("mcp__remote__touch", {"uri": "notes://item/beta"})
        await client.call_tool("mcp__remote__touch", {"uri": "notes://readme"})
        await updates.wait_for("notes://readme")
        assert updates.uris == ["notes://readme"], updates.uris
        # A second URI: the stream is opened again naming both, and both keep coming.
        await legacy(client.subscribe_resource, "notes://item/alpha")
        await client.call_tool("mcp__remote__touch", {"uri": "notes://item/alpha"})
        await updates.wait_for("notes://item/alpha")
        await client.call_tool("mcp__remote__touch", {"uri": "notes://readme"})
        with anyio.fail_after(GUARD):
            while updates.uris.count("notes://readme") < 2:
                updates.arrived = anyio.Event()
                await updates.arrived.wait()
        assert "notes://item/beta" not in updates.uris, updates.uris


async def test_without_given_roots_a_server_gets_the_clients_roots_as_they_are(
    project: Path, tmp_path: Path, mounted_env: dict[str, str]
) -> None:
    outside = tmp_path.resolve()

    async def roots(_ctx: Any) -> types.ListRootsResult:
        return types.ListRootsResult(
            roots=[
                types.Root(uri=outside.as_uri() + "/", name="around"),
                types.Root(uri="file:///nonexistent-elsewhere/", name="elsewhere"),
            ]
        )

    # No `--root` and no `roots` in the config: toolgate's root is just where it started,
    # so the client's roots go to the server as the client gave them.
    params = StdioServerParameters(
        command=toolgate_bin(),
        args=["serve"],
        env={"XDG_CONFIG_HOME": mounted_env["XDG_CONFIG_HOME"], "HOME": mounted_env["HOME"]},
        cwd=str(project),
    )
    with open(tmp_path / "stderr", "a") as errlog:
        async with Client(
            stdio_client(params, errlog=errlog), mode="legacy", list_roots_callback=roots
        ) as client:
            result = await client.call_tool("mcp__asker__where", {})
            text = result.content[0].text
            assert text == f"around={outside.as_uri()}/ elsewhere=file:///nonexistent-elsewhere/", text
