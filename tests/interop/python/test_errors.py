"""Error paths: a failing call is an `isError` tool result the model can read, never a
JSON-RPC protocol error (the SDK raises MCPError for those)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from conftest import OUTSIDE_SECRET
from mcp.shared.exceptions import MCPError
from mcp_types import TextContent

pytestmark = pytest.mark.anyio

TIMEOUT = 20


async def call_expecting_tool_error(connect, name: str, args: Any) -> str:
    protocol_error: MCPError | None = None
    with anyio.fail_after(TIMEOUT):
        async with connect() as client:
            try:
                result = await client.call_tool(name, args)
            except MCPError as e:
                protocol_error = e
    if protocol_error is not None:
        pytest.fail(
            f"tools/call {name} {args!r} got a protocol error (code {protocol_error.code}: "
            f"{protocol_error}) instead of an isError tool result"
        )
    assert result.is_error is True, f"{name} {args!r}: expected isError, got {result}"
    assert result.content and isinstance(result.content[0], TextContent), result
    text = result.content[0].text
    assert text.strip(), "error result has no text for the model"
    return text


async def test_unknown_tool(connect) -> None:
    text = await call_expecting_tool_error(connect, "no_such_tool", {})
    assert "no_such_tool" in text, text
    assert "read_file" in text, f"the error should name the available tools: {text}"


@pytest.mark.parametrize(
    "name,args,field",
    [
        ("read_file", {"path": 5}, "path"),
        ("read_file", {"path": "small.txt", "offset": "ten"}, "offset"),
        ("list_dir", {"limit": "many"}, "limit"),
    ],
    ids=["read_file-path-int", "read_file-offset-str", "list_dir-limit-str"],
)
async def test_wrong_argument_type(connect, name: str, args: dict, field: str) -> None:
    text = await call_expecting_tool_error(connect, name, args)
    assert field in text, f"the error should name the bad field `{field}`: {text}"


async def test_missing_required_argument(connect) -> None:
    text = await call_expecting_tool_error(connect, "read_file", {})
    assert "path" in text, text


@pytest.mark.parametrize(
    "name,args",
    [
        ("read_file", {"path": "../outside.txt"}),
        ("read_file", {"path": "sub/../../outside.txt"}),
        ("list_dir", {"path": ".."}),
    ],
    ids=["read_file-dotdot", "read_file-sub-dotdot", "list_dir-parent"],
)
async def test_path_outside_root(connect, name: str, args: dict) -> None:
    # outside.txt exists beside the root, so a "not found" would hide a confinement bug.
    assert (connect.root.parent / "outside.txt").exists()
    text = await call_expecting_tool_error(connect, name, args)
    assert OUTSIDE_SECRET not in text
    assert "outside" in text.lower() or "root" in text.lower(), (
        f"the error should say the path is outside the root: {text}"
    )


async def test_absolute_path_outside_root(connect) -> None:
    target = str(connect.root.parent / "outside.txt")
    text = await call_expecting_tool_error(connect, "read_file", {"path": target})
    assert OUTSIDE_SECRET not in text
    assert "outside" in text.lower() or "root" in text.lower(), text


async def test_missing_file(connect) -> None:
    text = await call_expecting_tool_error(connect, "read_file", {"path": "missing.txt"})
    assert "missing.txt" in text, text


async def test_read_file_on_a_folder(connect) -> None:
    text = await call_expecting_tool_error(connect, "read_file", {"path": "sub"})
    assert "sub" in text, text


async def test_list_dir_on_a_file(connect) -> None:
    text = await call_expecting_tool_error(connect, "list_dir", {"path": "small.txt"})
    assert "small.txt" in text, text


async def test_connection_survives_errors(connect) -> None:
    """After error results the same session still serves good calls."""
    with anyio.fail_after(TIMEOUT):
        async with connect() as client:
            bad = await client.call_tool("read_file", {"path": "../outside.txt"})
            unknown = await client.call_tool("no_such_tool", {})
            good = await client.call_tool("read_file", {"path": "small.txt"})
    assert bad.is_error and unknown.is_error
    assert good.is_error is False
    assert good.structured_content and good.structured_content["truncated"] is False
