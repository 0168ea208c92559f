"""A mounted server's resources through `toolgate serve`, as the Python SDK client sees them:
for a client that only calls tools (`list_resources`, `read_resource`, deferred when
disclosure is on), and over MCP's own `resources/read` and `prompts/get`, where a 5.6 MB
resource arrives as an excerpt and a pointer. A URI two mounted servers list is reported by
`toolgate mcp list` and `toolgate doctor`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import stdio_connection, toolgate_bin
from mcp import types

ASKER = Path(__file__).with_name("asking_server.py")


def mount(env: dict[str, str], *names: str, extra: str = "") -> None:
    """Appends one `asking_server.py` mount per name, and `extra`, to the user config."""
    config = Path(env["XDG_CONFIG_HOME"]) / "toolgate" / "config.toml"
    text = config.read_text() + extra
    for name in names:
        text += f'\n[mcp_servers.{name}]\ncommand = "{sys.executable}"\nargs = ["{ASKER}"]\n'
    config.write_text(text)


def toolgate(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [toolgate_bin(), "--root", str(project), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def asker_env(project: Path, server_env: dict[str, str]) -> dict[str, str]:
    """The asking server mounted, disclosure on; `mcp list` has started it once, so the
    catalog cache knows its tools and that it offers resources."""
    mount(server_env, "asker", extra='\n[disclosure]\nmode = "on"\n')
    listed = toolgate(project, server_env, "mcp", "list")
    assert listed.returncode == 0 and " ready " in listed.stdout, listed.stdout + listed.stderr
    return server_env


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


@pytest.mark.anyio
async def test_a_tools_only_client_finds_and_reads_resources_through_deferred_tools(
    project: Path, tmp_path: Path, asker_env: dict[str, str]
) -> None:
    async with stdio_connection(project, asker_env, "legacy", tmp_path / "serve.stderr") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        # Deferred: not in the array, named in search_tool's catalog from the first list on.
        assert "list_resources" not in tools and "read_resource" not in tools, sorted(tools)
        assert "list_resources" in (tools["search_tool"].description or "")
        assert "read_resource" in (tools["search_tool"].description or "")

        listed = text_of(
            await client.call_tool("run_tool", {"name": "list_resources", "input": {}})
        )
        assert "- notes://readme · readme · asker" in listed, listed
        assert "- notes://item/{name} · item · asker" in listed, listed

        read = await client.call_tool(
            "run_tool", {"name": "read_resource", "input": {"uri": "notes://item/alpha"}}
        )
        assert not read.is_error, read
        assert text_of(read).endswith("\nnote alpha\n"), text_of(read)

        # 5.6 MB: an excerpt and a pointer to the whole, which read_file can page.
        huge = await client.call_tool(
            "run_tool", {"name": "read_resource", "input": {"uri": "notes://huge"}}
        )
        shown = text_of(huge)
        print(f"read_resource notes://huge reached the client as {len(shown)} characters")
        assert not huge.is_error, shown
        assert len(shown) < 3_000, len(shown)
        assert shown.startswith("[resource notes://huge"), shown[:200]
        assert "line 0000000 of a huge note" in shown
        assert "saved to `" in shown, shown[-600:]
        path = shown.split("saved to `", 1)[1].split("`", 1)[0]
        page = text_of(
            await client.call_tool(
                "read_file", {"path": path, "offset": 200_001, "limit": 1}
            )
        )
        assert "line 0199999 of a huge note" in page, page

        unknown = await client.call_tool(
            "run_tool", {"name": "read_resource", "input": {"uri": "notes://nope"}}
        )
        assert unknown.is_error
        assert "call list_resources to see the URIs" in text_of(unknown), text_of(unknown)


@pytest.mark.anyio
async def test_a_huge_resource_read_over_mcp_arrives_as_an_excerpt_and_a_pointer(
    project: Path, tmp_path: Path, asker_env: dict[str, str]
) -> None:
    async with stdio_connection(project, asker_env, "legacy", tmp_path / "serve.stderr") as client:
        # A call waits for the server to be ready; its resources are listed by then.
        await client.call_tool("run_tool", {"name": "mcp__asker__where", "input": {}})
        read = await client.read_resource("notes://huge")
        text = read.contents[0].text
        print(f"resources/read notes://huge reached the client as {len(text)} characters")
        assert len(text) < 3_000, len(text)
        assert text.startswith("line 0000000 of a huge note\n"), text[:100]
        assert "[full output (5,600,000 characters, 200,000 lines) saved to `" in text, text[-600:]
        # Small resources arrive whole.
        read = await client.read_resource("notes://readme")
        assert read.contents[0].text == "read me first", read


def test_a_uri_two_servers_list_is_reported_by_mcp_list_and_doctor(
    project: Path, server_env: dict[str, str]
) -> None:
    mount(server_env, "asker", "copy")
    listed = toolgate(project, server_env, "mcp", "list")
    assert listed.returncode == 0, listed.stderr
    assert (
        "note: 2 resource URIs (`notes://readme`, `notes://huge`) are listed by `asker` and "
        "`copy`; reads go to `asker`, the first in config order"
    ) in listed.stdout, listed.stdout

    as_json = json.loads(toolgate(project, server_env, "mcp", "list", "--json").stdout)
    assert as_json["resource_collisions"] == [
        {"uri": "notes://readme", "read_from": "asker", "also_listed_by": ["copy"]},
        {"uri": "notes://huge", "read_from": "asker", "also_listed_by": ["copy"]},
    ], as_json["resource_collisions"]

    doctor = toolgate(project, server_env, "doctor")
    assert (
        "2 resource URIs (`notes://readme`, `notes://huge`) are listed by `asker` and `copy`; "
        "reads go to `asker`, the first in config order; if the servers are copies of one, "
        "disable one"
    ) in doctor.stdout, doctor.stdout


def test_toolgate_call_starts_the_servers_for_the_resource_tools(
    project: Path, server_env: dict[str, str]
) -> None:
    # No catalog cache yet: the one-shot command must start the server to know its resources.
    mount(server_env, "asker")
    listed = toolgate(project, server_env, "call", "list_resources", "{}")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "- notes://readme · readme · asker" in listed.stdout, listed.stdout
    read = toolgate(project, server_env, "call", "read_resource", '{"uri": "notes://readme"}')
    assert read.returncode == 0, read.stdout + read.stderr
    assert read.stdout.rstrip().endswith("read me first"), read.stdout
