"""initialize, tools/list and tools/call of every built-in, through the official Python SDK,
over stdio and Streamable HTTP, with the initialize handshake and with the SDK's default
negotiation."""

from __future__ import annotations

import re
from typing import Any

import anyio
import jsonschema
import pytest
from mcp_types import CallToolResult, TextContent
from tool_fixtures import NEEDS_SESSION, RUN_LAST, TOOL_CASES

pytestmark = pytest.mark.anyio

TIMEOUT = 20
TRUNCATION_REASONS = {"timeout", "scan_limit", "result_limit", "payload_limit"}


def text_and_structured(name: str, result: CallToolResult) -> tuple[str, dict[str, Any]]:
    """Generic checks every successful tool result must pass; returns (text, structured)."""
    assert result.is_error is False, f"{name}: unexpected isError result: {result.content}"
    assert result.content, f"{name}: no content blocks"
    first = result.content[0]
    assert isinstance(first, TextContent), f"{name}: first content block is {first.type}, not text"
    sc = result.structured_content
    assert isinstance(sc, dict), f"{name}: structuredContent missing (got {sc!r})"
    assert sc.get("text") == first.text, (
        f"{name}: structuredContent.text differs from the text content "
        "(clients that show structuredContent would hide the model text)"
    )
    assert isinstance(sc.get("truncated"), bool), f"{name}: structuredContent.truncated: {sc}"
    assert isinstance(sc.get("elapsed_ms"), int), f"{name}: structuredContent.elapsed_ms: {sc}"
    if sc["truncated"]:
        assert sc.get("reason") in TRUNCATION_REASONS, f"{name}: cut without a valid reason: {sc}"
    else:
        for key in ("reason", "next_offset"):
            assert key not in sc, f"{name}: uncut result carries `{key}`: {sc}"
    assert None not in sc.values(), f"{name}: structuredContent has null fields: {sc}"
    return first.text, sc


async def test_initialize(connect) -> None:
    # Gather inside the connection, assert outside it (asserts inside the SDK's task groups
    # surface as nested ExceptionGroups).
    with anyio.fail_after(TIMEOUT):
        async with connect() as client:
            info = client.server_info
            caps = client.server_capabilities
            version = client.protocol_version
            instructions = client.instructions
    assert info is not None, "server did not identify itself"
    assert info.name == "toolgate"
    assert info.version
    assert caps.tools is not None, "no tools capability"
    assert caps.tools.list_changed is True, "tools.listChanged must be advertised"
    if connect.mode == "legacy":
        assert version.startswith("20"), version
        assert instructions, "instructions expected at initialize"


async def test_list_tools(connect) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect() as client:
            listed = await client.list_tools()
            again = await client.list_tools(cache_mode="refresh")
    assert listed.tools, "tools/list returned no tools"
    assert listed.next_cursor is None
    names = [t.name for t in listed.tools]
    assert len(names) == len(set(names)), f"duplicate tool names: {names}"
    assert {"read_file", "list_dir"} <= set(names), names
    assert [t.model_dump() for t in again.tools] == [t.model_dump() for t in listed.tools], (
        "two tools/list calls differ (breaks prompt caches)"
    )
    for tool in listed.tools:
        where = f"tool `{tool.name}`"
        assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", tool.name), where
        assert tool.description and tool.description.strip(), f"{where}: no description"
        assert tool.input_schema.get("type") == "object", f"{where}: inputSchema {tool.input_schema}"
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        out = tool.output_schema
        assert out is not None, f"{where}: no outputSchema"
        assert out.get("type") == "object", f"{where}: outputSchema type {out.get('type')}"
        jsonschema.Draft202012Validator.check_schema(out)
        for field in ("text", "truncated"):
            assert field in out.get("properties", {}), f"{where}: outputSchema lacks `{field}`"
            assert field in out.get("required", []), f"{where}: `{field}` not required"
        ann = tool.annotations
        assert ann is not None, f"{where}: no annotations"
        assert ann.title or tool.title, f"{where}: no title"
        for hint in ("read_only_hint", "idempotent_hint", "open_world_hint"):
            assert isinstance(getattr(ann, hint), bool), f"{where}: annotation {hint} not set"
        if ann.read_only_hint is False:
            assert isinstance(ann.destructive_hint, bool), f"{where}: destructiveHint not set"


async def test_same_tools_over_both_transports(
    project, tmp_path, server_env, start_http_server
) -> None:
    from conftest import http_connection, stdio_connection

    server = start_http_server(project)
    with anyio.fail_after(TIMEOUT):
        async with stdio_connection(project, server_env, "legacy", tmp_path / "e") as client:
            over_stdio = (await client.list_tools()).tools
        async with http_connection(server.url, "legacy") as client:
            over_http = (await client.list_tools()).tools
    assert [t.model_dump() for t in over_stdio] == [t.model_dump() for t in over_http]


async def test_call_every_builtin(connect) -> None:
    """Calls every tool that tools/list shows, with the fixtures from tool_fixtures.py."""
    failures: list[str] = []
    with anyio.fail_after(TIMEOUT * 2):
        async with connect() as client:
            listed = (await client.list_tools()).tools
            missing = [t.name for t in listed if t.name not in TOOL_CASES]
            schemas = {t.name: t.output_schema for t in listed}
            # RUN_LAST tools go last, in that order: their cases may use what an earlier tool
            # made (job_output reads the job a run_shell case started).
            def rank(t):
                return RUN_LAST.index(t.name) if t.name in RUN_LAST else -1

            sessionless = connect.transport == "http" and connect.mode == "auto"
            for tool in [] if missing else sorted(listed, key=rank):
                if sessionless and tool.name in NEEDS_SESSION:
                    continue
                for case in TOOL_CASES[tool.name]:
                    label = f"{tool.name} [{case.name}] {case.args}"
                    try:
                        result = await client.call_tool(tool.name, case.args)
                        text, sc = text_and_structured(tool.name, result)
                        jsonschema.validate(sc, schemas[tool.name])
                        case.check(text, sc, connect.root)
                    except AssertionError as e:
                        failures.append(f"{label}: {e}")
                    except jsonschema.ValidationError as e:
                        failures.append(f"{label}: structuredContent fails outputSchema: {e.message}")
                    except Exception as e:  # protocol errors, SDK-side schema validation
                        failures.append(f"{label}: {type(e).__name__}: {e}")
    assert not missing, (
        f"tools/list shows tool(s) {missing} with no argument fixture: add `Case`s for "
        "them to TOOL_CASES in tests/interop/python/tool_fixtures.py"
    )
    assert not failures, "\n".join(failures)
