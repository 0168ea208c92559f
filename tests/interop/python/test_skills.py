"""Skills through the official Python SDK: user-invocable skills as prompts (prompts/list,
prompts/get), `notifications/prompts/list_changed` when a skill is added (legacy
handshake) or a `PromptsListChanged` event (2026-07-28 `subscriptions/listen`), and the
`skill` tool, over stdio and Streamable HTTP."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.subscriptions import PromptsListChanged

from conftest import http_connection, stdio_connection, toolgate_bin

pytestmark = pytest.mark.anyio

TIMEOUT = 20
# How long a file change may take to reach the client: generous, this is no speed test
# (bench/skills_watch.sh measures the latency).
WATCH_WAIT = 10


def write_skill(root: Path, folder: str, front: str, body: str) -> None:
    d = root / ".claude" / "skills" / folder
    d.mkdir(parents=True, exist_ok=True)
    (d / "SKILL.md").write_text(f"---\n{front}---\n{body}")


def standard_skills(root: Path) -> None:
    write_skill(
        root,
        "deploy",
        'name: deploy\ndescription: Deploys the app.\nargument-hint: "[env]"\n',
        "Deploy to $ARGUMENTS, then check the health page.\n",
    )
    (root / ".claude" / "skills" / "deploy" / "notes.md").write_text("notes\n")
    write_skill(
        root,
        "release",
        "name: release\ndescription: Cuts a release.\ndisable-model-invocation: true\n",
        "Tag it.\n",
    )
    write_skill(
        root,
        "style",
        "name: style\ndescription: House style.\nuser-invocable: false\n",
        "Be brief.\n",
    )


@pytest.fixture
def skill_files(project: Path) -> Path:
    """The standard skills, written before `connect` starts a server (listed after it)."""
    standard_skills(project)
    return project


async def test_prompts_are_the_user_invocable_skills(skill_files, connect) -> None:
    assert connect.root == skill_files
    with anyio.fail_after(TIMEOUT):
        async with connect() as client:
            caps = client.server_capabilities
            prompts = (await client.list_prompts()).prompts
            got = await client.get_prompt("deploy", {"arguments": "staging"})
            tools = (await client.list_tools()).tools
            loaded = await client.call_tool("skill", {"name": "style"})
            refused = await client.call_tool("skill", {"name": "release"})
    assert caps.prompts is not None, "no prompts capability"
    assert caps.prompts.list_changed is True
    names = [p.name for p in prompts]
    # `release` is the user's only (hidden from the model); `style` is the model's only.
    assert names == ["deploy", "release"], names
    deploy = next(p for p in prompts if p.name == "deploy")
    assert deploy.description == "Deploys the app."
    assert [(a.name, a.description, a.required) for a in deploy.arguments] == [
        ("arguments", "[env]", False)
    ]
    text = got.messages[0].content.text
    assert got.messages[0].role == "user"
    assert "Deploy to staging, then check the health page." in text, text
    assert "- .claude/skills/deploy/notes.md" in text, text
    skill = next(t for t in tools if t.name == "skill")
    assert "- deploy: Deploys the app." in skill.description
    assert "- style: House style." in skill.description
    assert "release" not in skill.description
    assert loaded.is_error is False
    assert "Be brief." in loaded.structured_content["text"]
    assert refused.is_error is True
    assert "may only be started by the user" in refused.content[0].text


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_prompts_list_changed_reaches_a_listen_subscription(
    transport, project, tmp_path, server_env, start_http_server
) -> None:
    standard_skills(project)
    if transport == "stdio":
        opened = stdio_connection(project, server_env, "auto", tmp_path / "stderr")
    else:
        opened = http_connection(start_http_server(project).url, "auto")
    events = []
    with anyio.fail_after(TIMEOUT):
        async with opened as client:
            async with client.listen(prompts_list_changed=True) as sub:
                honored = sub.honored.prompts_list_changed
                write_skill(project, "review", "name: review\ndescription: Reviews.\n", "Read.\n")
                with anyio.fail_after(WATCH_WAIT):
                    async for event in sub:
                        events.append(event)
                        if isinstance(event, PromptsListChanged):
                            break
            names = [p.name for p in (await client.list_prompts()).prompts]
    assert honored is True
    assert any(isinstance(e, PromptsListChanged) for e in events), events
    assert names == ["deploy", "release", "review"], names


async def test_prompts_list_changed_notification_with_the_initialize_handshake(
    project, tmp_path, server_env
) -> None:
    standard_skills(project)
    seen: list[str] = []
    changed = anyio.Event()

    async def on_message(message) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if method:
            seen.append(method)
        if method == "notifications/prompts/list_changed":
            changed.set()

    params = StdioServerParameters(
        command=toolgate_bin(),
        args=["serve", "--root", str(project)],
        env={"XDG_CONFIG_HOME": server_env["XDG_CONFIG_HOME"], "HOME": server_env["HOME"]},
    )
    with anyio.fail_after(TIMEOUT):
        with open(tmp_path / "stderr", "a") as errlog:
            async with Client(
                stdio_client(params, errlog=errlog), mode="legacy", message_handler=on_message
            ) as client:
                before = [p.name for p in (await client.list_prompts()).prompts]
                (project / ".claude" / "skills" / "release" / "SKILL.md").unlink()
                with anyio.fail_after(WATCH_WAIT):
                    await changed.wait()
                after = [p.name for p in (await client.list_prompts()).prompts]
    assert before == ["deploy", "release"]
    # A deleted skill leaves no ghost prompt.
    assert after == ["deploy"], (after, seen)
