"""The last-hop table: what reaches the model through each real client, per case.

    .cache/peers/venv/bin/python tests/interop/clients/report.py

Cases: read_file of a 3,000-line file, grep with 2,000 matches, `cat` of a 2 MB file
through run_shell, a failing `cargo test`-style log through run_shell, and the tool surface
(bytes of toolgate's tools in the first model request) with 3,500 mounted tools. For each:
characters reaching the model, whether the client cut it (its own marker or a file
preview), and whether toolgate's footer/pointer is true (every line it claims to show is
there; a spill pointer names a file holding the whole output). Prints Markdown.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from conftest import mount_probe, toolgate_server  # noqa: E402
from drive import run_claude, run_codex  # noqa: E402
from fake_models import FakeModel, Step  # noqa: E402
from test_clients import CLIENT_CUTS, CLIENT_WRAP  # noqa: E402


def run(client: str, project: Path, steps: list[Step]):
    model = FakeModel(steps)
    try:
        (run_claude if client == "claude" else run_codex)(project, {"tg": toolgate_server(project)}, model)
    finally:
        model.close()
    return model


def numbered_lines_true(text: str, expect) -> bool:
    lines = [l for l in text.splitlines() if re.match(r"^\s+\d+\t", l)]
    return bool(lines) and all(expect(int(l.split("\t")[0]), l.split("\t", 1)[1]) for l in lines)


def spill_true(text: str, project: Path, original: str | None) -> bool:
    m = re.search(r"saved to `([^`]+)`", text)
    if not m:
        return original is None or original in text
    path = Path(m.group(1))
    path = path if path.is_absolute() else project / path
    return path.is_file() and (original is None or path.read_text(errors="replace") == original)


def case(client: str, name: str, project: Path, steps: list[Step], check) -> dict:
    model = run(client, project, steps)
    results = model.tool_results()
    text = CLIENT_WRAP.sub("", results[-1]["text"]) if results else ""
    cut = any(m in text for m in CLIENT_CUTS)
    return {"case": name, "client": client, "chars": len(text), "cut": cut, "true": (not cut) and check(text)}


def main() -> None:
    rows = []
    surface = {}
    for client in ["claude", "codex"]:
        with tempfile.TemporaryDirectory() as tmp:
            project = Path(tmp) / "project"
            project.mkdir()
            (project / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 3001)))
            rows.append(case(client, "read_file, 3,000 lines", project, [Step("read_file", {"path": "big.txt"})],
                             lambda t: numbered_lines_true(t, lambda n, s: s == f"line {n}")
                             and bool(re.search(r"continue with offset=\d+\]", t))))
            (project / "src").mkdir()
            (project / "src" / "matches.rs").write_text("".join(f"fn needle_{i}() {{}} // needle\n" for i in range(2000)))
            rows.append(case(client, "grep, 2,000 matches", project, [Step("grep", {"pattern": "needle"})],
                             lambda t: ("cursor" in t or "truncated" in t) and "needle_0()" in t))
            blob = "".join(f"row {i}: id={160980 + i} name=user_{i} email=user_{i}@example.com\n" for i in range(30000))
            (project / "blob.txt").write_text(blob)
            rows.append(case(client, "cat of 2 MB (run_shell)", project, [Step("run_shell", {"command": "cat blob.txt"})],
                             lambda t: spill_true(t, project, None) and "row 0:" in t))
            failures = [f"parser::case_{i}" for i in (7, 911, 1603, 1999)]
            lines = [f"test module_{i}::works ... ok" for i in range(2000)] + [f"test {n} ... FAILED" for n in failures]
            lines += ["", "failures:"] + [f"    {n}" for n in failures]
            lines += ["", "test result: FAILED. 2000 passed; 4 failed; 0 ignored"]
            (project / "log.txt").write_text("\n".join(lines) + "\n")
            rows.append(case(client, "failing cargo test log", project, [Step("run_shell", {"command": "cat log.txt; exit 101"})],
                             lambda t: all(n in t for n in failures)))
        with tempfile.TemporaryDirectory() as tmp:
            project = Path(tmp) / "project"
            project.mkdir()
            mount_probe(project, extra_tools=3498)
            model = run(client, project, [Step("search_tool", {"query": "emit"})])
            first = model.requests[0]["body"]
            tools = first.get("tools") or []
            ours = [t for t in tools if "tg" in json.dumps(t.get("name", "")) or t.get("name") == "mcp__tg"]
            mentioned = sum(len(m) for m in re.findall(r"mcp__tg__[A-Za-z0-9_-]+", json.dumps(first.get("messages"))))
            surface[client] = {
                "toolgate_tools_bytes": len(json.dumps(ours)),
                "whole_request_tools_bytes": len(json.dumps(tools)),
                "toolgate_names_in_messages_chars": mentioned,
            }
    print("| case | client | chars reaching the model | cut by the client | footer/pointer true |")
    print("|---|---|---:|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['client']} | {r['chars']:,} | {'yes' if r['cut'] else 'no'} | {'yes' if r['true'] else 'no'} |")
    print()
    print("Tool surface with 3,500 mounted tools (first model request):")
    for client, s in surface.items():
        print(f"- {client}: toolgate's tools {s['toolgate_tools_bytes']:,} bytes of {s['whole_request_tools_bytes']:,} bytes of tool definitions; toolgate tool names in the messages: {s['toolgate_names_in_messages_chars']:,} characters")


if __name__ == "__main__":
    main()
