#!/usr/bin/env python3
"""Gateway parity: what a client gets from `@modelcontextprotocol/server-everything`
directly and through `toolgate serve` mounting it (stdio, `prefix = "never"`, disclosure
off so every tool is listed), with the Python SDK as the client, offering elicitation,
sampling and roots. Each row is measured, not assumed: lists are counted, and the
elicitation, sampling and roots requests are triggered through the server's own tools and
counted where they arrive (the client's callbacks). Both client modes: `legacy` (the
`initialize` handshake, 2025-11-25) and `auto` (2026-07-28 where the server speaks it).

    .cache/peers/venv/bin/python bench/gateway_parity.py [--bin target/debug/toolgate]

Needs .cache/peers (bash scripts/install-peers.sh).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, types
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / ".cache/peers/npm/node_modules"
NODE = str(PEERS / "node/bin/node")
EVERYTHING = str(PEERS / "@modelcontextprotocol/server-everything/dist/index.js")


class User:
    """Counts what the server asked the client, and answers."""

    def __init__(self, root: Path) -> None:
        self.asked = {"elicitation": 0, "sampling": 0, "roots": 0}
        self.root = root

    async def elicit(self, _ctx: Any, params: Any) -> types.ElicitResult:
        self.asked["elicitation"] += 1
        return types.ElicitResult(action="decline")

    async def sample(self, _ctx: Any, params: Any) -> types.CreateMessageResult:
        self.asked["sampling"] += 1
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="sampled"),
            model="scripted",
        )

    async def roots(self, _ctx: Any) -> types.ListRootsResult:
        self.asked["roots"] += 1
        return types.ListRootsResult(roots=[types.Root(uri=self.root.as_uri(), name="project")])


async def measure(params: StdioServerParameters, mode: str, root: Path) -> dict[str, Any]:
    user = User(root)
    options = {
        "elicitation_callback": user.elicit,
        "sampling_callback": user.sample,
        "list_roots_callback": user.roots,
    }
    row: dict[str, Any] = {}
    with open(os.devnull, "w") as errlog, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(stdio_client(params, errlog=errlog), mode=mode, **options) as client:
            with anyio.fail_after(60):
                # Through toolgate the server starts in the background (its tools come from
                # the warm catalog at once): a call waits for it to be ready.
                await client.call_tool("echo", {"message": "ready?"})
            tools = [t.name for t in (await client.list_tools()).tools]
            row["tools"] = len([t for t in tools if t not in TOOLGATE_TOOLS])
            row["prompts"] = len((await client.list_prompts()).prompts)
            row["resources"] = len((await client.list_resources()).resources)
            row["templates"] = len((await client.list_resource_templates()).resource_templates)
            row["instructions"] = client.instructions or ""
            for tool, args in [
                ("trigger-elicitation-request", {}),
                ("trigger-sampling-request", {"prompt": "hi", "maxTokens": 10}),
                ("get-roots-list", {}),
            ]:
                if tool in tools:
                    await client.call_tool(tool, args)
    row.update({f"{k} asked": v for k, v in user.asked.items()})
    return row


# toolgate's own tools, left out of the count so both columns count the server's.
TOOLGATE_TOOLS = {
    "read_file", "list_dir", "search_files", "grep", "write_file", "edit_file", "run_shell",
    "job_output", "job_kill", "skill", "search_tool", "run_tool", "list_resources",
    "read_resource",
}


def show(key: str, value: Any, server_said: str) -> str:
    if key != "instructions":
        return str(value)
    if value == server_said:
        return f"{len(value)} chars"
    # toolgate's own come first, the server's follow under its name (cut past 2,000 chars).
    head = server_said.strip()[:300]
    return f"{len(value)} chars, the server's included: {head in value}"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=str(ROOT / "target/debug/toolgate"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        project = tmp_path / "project"
        project.mkdir()
        config = tmp_path / "xdg" / "toolgate"
        config.mkdir(parents=True)
        (config / "config.toml").write_text(
            f'[mcp_servers.everything]\ncommand = "{NODE}"\nargs = ["{EVERYTHING}", "stdio"]\n'
            'prefix = "never"\n'
        )
        env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "PATH": os.environ["PATH"]}
        direct = StdioServerParameters(command=NODE, args=[EVERYTHING, "stdio"], env=env, cwd=str(project))
        through = StdioServerParameters(
            command=args.bin,
            args=["serve", "--root", str(project), "--disclosure", "off"],
            env=env,
            cwd=str(project),
        )
        # As after any earlier session: the catalog cache knows the server (its tools,
        # prompts and instructions are there at the first `initialize`).
        subprocess.run(
            [args.bin, "--root", str(project), "mcp", "list"],
            env=env, cwd=project, capture_output=True, timeout=120, check=True,
        )
        rows = {}
        for mode in ["legacy", "auto"]:
            rows[("direct", mode)] = await measure(direct, mode, project)
            rows[("toolgate", mode)] = await measure(through, mode, project)
    keys = list(rows[("direct", "legacy")].keys())
    print("| what the client gets | direct, 2025-11-25 | through serve, 2025-11-25 | direct, auto | through serve, auto |")
    print("|---|---|---|---|---|")
    for key in keys:
        cells = [
            show(key, rows[(w, m)][key], rows[("direct", m)]["instructions"])
            for m in ["legacy", "auto"]
            for w in ["direct", "toolgate"]
        ]
        print(f"| {key} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    anyio.run(main)
