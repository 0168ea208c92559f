"""`subscriptions/listen` (protocol 2026-07-28): how new clients receive `list_changed`."""

import pytest

from conftest import http_connection, stdio_connection

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_listen_acknowledges_tools_list_changed(
    transport, project, tmp_path, server_env, start_http_server
) -> None:
    if transport == "stdio":
        opened = stdio_connection(project, server_env, "auto", tmp_path / "stderr")
    else:
        opened = http_connection(start_http_server(project).url, "auto")
    async with opened as client:
        async with client.listen(tools_list_changed=True, prompts_list_changed=True) as sub:
            honored = sub.honored
            assert getattr(honored, "tools_list_changed", None) is True, honored
            # Skills are served as prompts, so prompt list changes are followed too.
            assert getattr(honored, "prompts_list_changed", None) is True, honored
        # The session keeps working after the stream closes.
        tools = await client.list_tools()
        assert {t.name for t in tools.tools} >= {"read_file", "list_dir"}
