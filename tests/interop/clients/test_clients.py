"""The last hop, checked with the real clients (Claude Code and Codex CLI from npm, pinned in
scripts/install-peers.sh): what reaches the model when toolgate is their MCP server.

Each test drives the client non-interactively against a scripted model over real HTTP and
asserts on the tool results the client sent back to the model. A missing client fails the
test; nothing here skips.
"""

from __future__ import annotations

import re

import pytest
from conftest import CLIENTS, drive, mount_probe, warm_catalog
from fake_models import Step

# What each client puts in front of or after a result; not part of toolgate's text.
CLIENT_WRAP = re.compile(r"^Wall time: [0-9.]+ seconds\nOutput:\n?|\n*<system-reminder>.*?</system-reminder>\s*$", re.S)
# Cut markers of the clients themselves.
CLIENT_CUTS = ["tokens truncated", "characters truncated", "<persisted-output>", "Output too large"]


def model_text(run, index: int = -1) -> str:
    results = run.model.tool_results()
    assert results, f"the model got no tool result; stderr: {run.stderr[-2000:]}"
    return CLIENT_WRAP.sub("", results[index]["text"])


def assert_not_cut(text: str) -> None:
    for marker in CLIENT_CUTS:
        assert marker not in text, f"the client cut the result ({marker!r}): {text[:300]}…{text[-300:]}"


@pytest.mark.parametrize("client", CLIENTS)
def test_a_3000_line_read_file_page_arrives_whole_with_a_true_footer(client, project):
    run = drive(client, project, [Step("read_file", {"path": "big.txt"})])
    text = model_text(run)
    assert_not_cut(text)
    assert not text.lstrip().startswith("{"), f"JSON instead of text: {text[:200]}"
    footer = re.search(r"showing lines 1-(\d+) of 3000; continue with offset=(\d+)\]", text)
    assert footer, f"no footer: {text[-300:]}"
    last, next_offset = int(footer.group(1)), int(footer.group(2))
    assert next_offset == last + 1
    # Every line the footer claims is there, in order, and nothing beyond it.
    lines = [l for l in text.splitlines() if re.match(r"^\s+\d+\t", l)]
    assert [l.split("\t", 1)[1] for l in lines] == [f"line {i}" for i in range(1, last + 1)]
    # The next page starts exactly there.
    run2 = drive(client, project, [Step("read_file", {"path": "big.txt", "offset": next_offset})])
    assert re.search(rf"^\s+{next_offset}\tline {next_offset}$", model_text(run2), re.M)


@pytest.mark.parametrize("client", CLIENTS)
def test_success_results_arrive_as_text_not_json(client, project):
    (project / "small.txt").write_text("alpha\n\tindented beta\n")
    run = drive(client, project, [Step("read_file", {"path": "small.txt"})])
    text = model_text(run)
    assert "     1\talpha\n" in text and "     2\t\tindented beta" in text, text
    assert '{"text"' not in text and "\\n" not in text


@pytest.mark.parametrize("client", CLIENTS)
def test_a_failing_test_log_keeps_every_failure(client, project):
    failures = [f"parser::case_{i}" for i in (7, 911, 1603, 1999)]
    script = project / "fake_test.sh"
    lines = [f"test module_{i}::works ... ok" for i in range(2000)]
    lines += [f"test {name} ... FAILED" for name in failures]
    lines += ["", "failures:", ""]
    for name in failures:
        lines += [f"---- {name} stdout ----", f"thread '{name}' panicked at src/parser.rs:{len(name)}:5:", "assertion `left == right` failed", ""]
    lines += ["failures:"] + [f"    {name}" for name in failures]
    lines += ["", f"test result: FAILED. 2000 passed; {len(failures)} failed; 0 ignored", "error: test failed, to rerun pass `--lib`"]
    (project / "log.txt").write_text("\n".join(lines) + "\n")
    script.write_text("cat log.txt\nexit 101\n")
    run = drive(client, project, [Step("run_shell", {"command": "bash fake_test.sh"})])
    text = model_text(run)
    assert_not_cut(text)
    for name in failures:
        assert name in text, f"{name} lost: {text[-1500:]}"
    assert "test result: FAILED. 2000 passed; 4 failed" in text


@pytest.mark.parametrize("client", CLIENTS)
def test_no_schema_warnings_from_the_client(client, project):
    run = drive(client, project, [Step("run_shell", {"command": "echo hi"})])
    assert "hi" in model_text(run)
    for stream in (run.stdout, run.stderr):
        assert "unknown format" not in stream, stream[-2000:]
    # And none of what toolgate listed declares a format a client rejects.
    sent = str([r["body"].get("tools") for r in run.model.requests])
    for bad in ('"uint64"', '"int64"', '"uint"', "'uint64'", "'uint'", "'int64'"):
        assert bad not in sent


@pytest.mark.parametrize("client", CLIENTS)
def test_a_mounted_tool_is_callable_through_search_tool_and_run_tool_in_turn_1(client, project):
    # 40 mounted tools: over the auto:15 threshold, so mounted tools are deferred.
    mount_probe(project, extra_tools=40, delay=1.0)
    # A warm catalog, as from an earlier session: Codex 0.169 does not wait for a cold
    # server's first list before its first model request (the cold start is a known gap).
    warm_catalog(project)
    steps = [
        Step("search_tool", {"query": "emit text of a given size"}),
        Step("run_tool", {"name": "mcp__probe__emit", "input": {"chars": 300}}),
    ]
    run = drive(client, project, steps)
    results = run.model.tool_results()
    assert len(results) == 2, f"calls made: {len(results)}; stderr: {run.stderr[-1500:]}"
    assert "mcp__probe__emit" in results[0]["text"]
    assert "L000001 " in results[1]["text"], results[1]["text"][:500]
    # search_tool and run_tool were offered in the very first model request (Claude Code
    # names its MCP tools in a deferred-tools reminder, Codex in its tool array).
    first = str(run.model.requests[0]["body"])
    assert "search_tool" in first and "run_tool" in first
