"""Per-tool argument fixtures for `test_tools.py::test_call_every_builtin`.

That test calls every tool the server lists in `tools/list`; a listed tool without an entry
here fails the test. When you add a built-in tool, add an entry: one or more `Case`s with
valid arguments (paths relative to the test project made by conftest.py's `project` fixture:
`small.txt`, `big.txt` (3000 lines "line N"), `sub/nested.txt`) and a `check` that asserts on
the model text and `structuredContent`. The generic checks (text content present,
`structuredContent.text` == the text, `structuredContent` valid against `outputSchema`,
truncation fields consistent) run for every case before `check`.

Cases of one tool run in order on a fresh project, so a mutating tool (write_file, edit_file)
can create a file in one case and read it back in the next. All tools run in one
session, in tools/list order except those in RUN_LAST, which come last in that order: a later
tool can use what an earlier one made (job_output and job_kill use the background jobs
run_shell's cases start).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conftest import BIG_LINES, NESTED_TEXT, SMALL_TEXT


@dataclass(frozen=True)
class Case:
    name: str
    args: dict[str, Any]
    # check(text, structured, project_root): assert on the result.
    check: Callable[[str, dict[str, Any], Path], None]


def _line(n: int, content: str) -> str:
    """A read_file output line (cat -n style: right-aligned number, tab, content)."""
    return f"{n:>6}\t{content}\n"


# --- read_file -------------------------------------------------------------------------------


def _read_small(text: str, sc: dict[str, Any], root: Path) -> None:
    lines = SMALL_TEXT.splitlines()
    assert text == "".join(_line(i + 1, l) for i, l in enumerate(lines)), text
    assert sc["path"] == "small.txt"
    assert sc["truncated"] is False
    assert "next_offset" not in sc, "an uncut result must not carry next_offset"
    assert "reason" not in sc, "an uncut result must not carry reason"
    assert sc["total"] == len(lines)


def _read_big(text: str, sc: dict[str, Any], root: Path) -> None:
    assert text.startswith(_line(1, "line 1")), text[:200]
    assert _line(2000, "line 2000") in text
    assert _line(2001, "line 2001") not in text, "page 1 must stop at line 2000"
    assert "2001" in text.splitlines()[-1], f"footer should say how to continue: {text[-300:]!r}"
    assert sc["path"] == "big.txt"
    assert sc["truncated"] is True
    assert sc["reason"] == "result_limit"
    assert sc["next_offset"] == 2001
    assert sc["total"] == BIG_LINES


def _read_big_page2(text: str, sc: dict[str, Any], root: Path) -> None:
    assert text.startswith(_line(2001, "line 2001")), text[:200]
    assert text.endswith(_line(BIG_LINES, f"line {BIG_LINES}")), text[-200:]
    assert _line(2000, "line 2000") not in text
    assert sc["truncated"] is False
    assert "next_offset" not in sc
    assert sc["total"] == BIG_LINES


def _read_window(text: str, sc: dict[str, Any], root: Path) -> None:
    # offset=10, limit=5 -> lines 10..14, cut with next_offset 15.
    for n in range(10, 15):
        assert _line(n, f"line {n}") in text, text
    assert _line(9, "line 9") not in text and _line(15, "line 15") not in text, text
    assert sc["truncated"] is True
    assert sc["next_offset"] == 15
    assert sc["reason"] == "result_limit"


def _read_nested(text: str, sc: dict[str, Any], root: Path) -> None:
    assert text == _line(1, NESTED_TEXT.rstrip("\n")), text
    assert sc["path"] == "sub/nested.txt"
    assert sc["truncated"] is False


# --- list_dir --------------------------------------------------------------------------------


def _list_root(text: str, sc: dict[str, Any], root: Path) -> None:
    lines = text.splitlines()
    names = [l.split()[0] for l in lines]
    assert names == ["big.txt", "small.txt", "sub/"], text
    assert f"({len(SMALL_TEXT)} bytes)" in lines[1], text
    assert sc["path"] == "."
    assert sc["truncated"] is False
    assert "next_offset" not in sc
    assert sc["total"] == 3


def _list_sub(text: str, sc: dict[str, Any], root: Path) -> None:
    assert text.splitlines()[0].split()[0] == "nested.txt", text
    assert sc["path"] == "sub"
    assert sc["truncated"] is False
    assert sc["total"] == 1


def _list_paged(text: str, sc: dict[str, Any], root: Path) -> None:
    # limit=1 -> only big.txt, cut, next_offset 2.
    assert text.splitlines()[0].split()[0] == "big.txt", text
    assert "small.txt" not in text
    assert sc["truncated"] is True
    assert sc["reason"] == "result_limit"
    assert sc["next_offset"] == 2
    assert sc["total"] == 3


# --- run_shell, job_output, job_kill -----------------------------------------------------------
# run_shell's cases start two background jobs (job-1 prints two lines, job-2 sleeps), which
# job_output and job_kill then use. They run last, in this order (RUN_LAST), because they
# leave files in the project's spill folder (.toolgate/spill) that list_dir would show.

JOB_TEXT = "line one\nline two\n"


def _shell_stdout(text: str) -> str:
    """The stdout section of a run_shell result."""
    assert "--- stdout ---\n" in text, text
    return text.split("--- stdout ---\n", 1)[1].split("--- stderr ---\n", 1)[0]


def _shell_echo(text: str, sc: dict[str, Any], root: Path) -> None:
    assert text.startswith("exit code 0 · "), text
    assert _shell_stdout(text) == "hello\n", text
    assert sc["status"] == "exited" and sc["exit_code"] == 0
    assert sc["stdout"] == {"bytes": 6, "lines": 1, "truncated": False, "shown": "whole"}, sc["stdout"]
    assert sc["stderr"]["bytes"] == 0
    assert sc["truncated"] is False
    assert sc["cwd"] == "."


def _shell_streams(text: str, sc: dict[str, Any], root: Path) -> None:
    assert _shell_stdout(text) == NESTED_TEXT, text
    assert text.endswith("--- stderr ---\nto-err\n"), text
    assert sc["stderr"]["bytes"] == len("to-err\n")


def _shell_cwd(text: str, sc: dict[str, Any], root: Path) -> None:
    assert _shell_stdout(text) == f"{root.resolve() / 'sub'}\n", text
    assert sc["cwd"] == "sub"


def _shell_cut(text: str, sc: dict[str, Any], root: Path) -> None:
    # 3000 lines (28,893 bytes) are over the 16,000-character excerpt: head and tail plus a
    # pointer to a file holding every byte.
    out = sc["stdout"]
    assert out["truncated"] is True and out["lines"] == BIG_LINES, out
    assert sc["truncated"] is True and sc["reason"] == "payload_limit"
    assert Path(out["path"]).read_bytes() == (root / "big.txt").read_bytes()
    assert "line 1" in text, text[:300]
    assert "saved to `" in text and "do not rerun the command" in text, text[-600:]


def _shell_job(text: str, sc: dict[str, Any], root: Path, n: int) -> None:
    # job-{n} within a session; sessionless HTTP numbers each request's jobs from 1.
    job = sc["job_id"]
    assert job in (f"job-{n}", "job-1"), sc
    assert sc["status"] == "running"
    assert isinstance(sc["pid"], int)
    assert text.startswith(f"started {job} (pid {sc['pid']})"), text
    assert f'job_output {{"job_id": "{job}"}}' in text, text


def _job_page(text: str, sc: dict[str, Any], root: Path) -> None:
    # The job may still be running: its output so far is a prefix of the whole.
    chunk = text.encode()[: sc["end_offset"] - sc["offset"]].decode()
    assert JOB_TEXT.startswith(chunk), text
    assert sc["job_id"] == "job-1" and sc["stream"] == "stdout" and sc["offset"] == 0
    if sc["eof"]:
        assert chunk == JOB_TEXT and sc["status"] == "exited" and sc["exit_code"] == 0, sc
        assert "end of stdout" in text, text
    else:
        assert sc["status"] == "running", sc


def _job_window(text: str, sc: dict[str, Any], root: Path) -> None:
    # offset 5, limit 3 -> "one", cut, next_offset 8 (the job is done by now or soon).
    if sc["total"] >= 8:
        assert text.startswith("one\n["), text
        assert sc["truncated"] is True and sc["next_offset"] == 8 and sc["end_offset"] == 8
        assert sc["reason"] == "payload_limit"
        assert sc["eof"] is False
        assert 'next page: job_output {"job_id": "job-1", "offset": 8}' in text, text


def _job_kill(text: str, sc: dict[str, Any], root: Path) -> None:
    assert sc["job_id"] == "job-2"
    assert sc["status"] == "killed" and sc["signal"] == "SIGTERM", sc
    assert text.startswith("job-2 killed by job_kill after"), text


def _job_kill_again(text: str, sc: dict[str, Any], root: Path) -> None:
    assert sc["status"] == "killed"
    assert "had already ended" in text, text


# Tools run after all others, in this order (the rest in tools/list order).
RUN_LAST = ["run_shell", "job_output", "job_kill"]

# Tools whose cases need state from an earlier call of the same session. Under the sessionless
# 2026-07-28 protocol over HTTP (the SDK's "auto" mode) every request is a session of its own,
# so a background job is stopped as soon as the request that started it ends: these are
# skipped there.
NEEDS_SESSION = {"job_output", "job_kill"}

# --- search_files ----------------------------------------------------------------------------


def _paths(text: str) -> list[str]:
    return [l for l in text.splitlines() if l and not l.startswith("[")]


def _find_all(text: str, sc: dict[str, Any], root: Path) -> None:
    assert _paths(text) == ["big.txt", "small.txt", "sub/nested.txt"], text
    assert sc["path"] == "."
    assert sc["truncated"] is False
    assert "cursor" not in sc, "an uncut result must not carry a cursor"
    assert sc["total"] == 3
    assert sc["returned"] == 3
    assert isinstance(sc["scanned_count"], int)


def _find_paged(text: str, sc: dict[str, Any], root: Path) -> None:
    assert _paths(text) == ["big.txt", "small.txt"], text
    assert "cursor" in text.splitlines()[-1], f"footer should say how to continue: {text!r}"
    assert sc["truncated"] is True
    assert sc["reason"] == "result_limit"
    assert sc["cursor"] == "small.txt:end"
    assert sc["total"] == 3


def _find_rest(text: str, sc: dict[str, Any], root: Path) -> None:
    assert _paths(text) == ["sub/nested.txt"], text
    assert sc["truncated"] is False
    assert "cursor" not in sc


def _find_in_sub(text: str, sc: dict[str, Any], root: Path) -> None:
    assert _paths(text) == ["sub/nested.txt"], text
    assert sc["path"] == "sub"


# --- grep ------------------------------------------------------------------------------------


def _grep_one(text: str, sc: dict[str, Any], root: Path) -> None:
    assert text == "big.txt\n2999:line 2999\n", text
    assert sc["truncated"] is False
    assert sc["total"] == 1
    assert sc["files_matched"] == 1
    assert sc["files_searched"] == 3
    assert "cursor" not in sc


def _grep_regex(text: str, sc: dict[str, Any], root: Path) -> None:
    assert text == "big.txt\n" + "".join(f"{n}:line {n}\n" for n in range(10, 20)), text
    assert sc["total"] == 10


def _grep_paged(text: str, sc: dict[str, Any], root: Path) -> None:
    assert text.startswith("big.txt\n1:line 1\n2:line 2\n3:line 3\n[truncated"), text
    assert sc["truncated"] is True
    assert sc["reason"] == "result_limit"
    assert sc["cursor"] == "big.txt:3"
    assert sc["returned"] == 3
    # The rest is counted past the full page: big.txt's 3,000 lines and
    # small.txt's "second line".
    assert sc["total"] == 3001
    assert sc["total_is_lower_bound"] is False


def _grep_next(text: str, sc: dict[str, Any], root: Path) -> None:
    assert text.startswith("big.txt\n4:line 4\n5:line 5\n6:line 6\n[truncated"), text
    assert sc["cursor"] == "big.txt:6"


def _grep_file_context(text: str, sc: dict[str, Any], root: Path) -> None:
    assert text == "small.txt\n1-hello from toolgate\n2:second line\n", text
    assert sc["path"] == "small.txt"


# --- write_file / edit_file ------------------------------------------------------------------
# Every tool shares one project, and edit_file runs first (tools/list is sorted by name): its
# cases undo their own edits, and write_file writes only under out/, so the other tools see
# the project as conftest.py made it.


def _write_new(text: str, sc: dict[str, Any], root: Path) -> None:
    assert text.startswith("Created `out/new.txt`"), text
    assert sc["created"] is True
    assert sc["bytes"] == 12
    assert (root / "out" / "new.txt").read_text() == "hello\nworld\n"


def _write_replace(text: str, sc: dict[str, Any], root: Path) -> None:
    assert text.startswith("Replaced `out/new.txt`"), text
    assert sc["created"] is False
    assert (root / "out" / "new.txt").read_text() == "replaced\n"


def _edit_one(text: str, sc: dict[str, Any], root: Path) -> None:
    assert text.startswith("Edited `small.txt`: 1 occurrence replaced at line 2."), text
    assert "\n-second line\n+2nd line\n" in text, text
    assert sc["replacements"] == 1
    assert sc["truncated"] is False
    assert (root / "small.txt").read_text() == "hello from toolgate\n2nd line\n"


def _edit_undo(text: str, sc: dict[str, Any], root: Path) -> None:
    assert "\n-2nd line\n+second line\n" in text, text
    assert (root / "small.txt").read_text() == SMALL_TEXT


def _edit_all(text: str, sc: dict[str, Any], root: Path) -> None:
    # "line 29", "line 290".."line 299", "line 2900".."line 2999": 111 lines; the diff is cut.
    assert sc["replacements"] == 111
    assert sc["truncated"] is True and sc["reason"] == "payload_limit", sc
    assert "[diff cut:" in text, text[-300:]
    content = (root / "big.txt").read_text()
    assert "LINE 2950\n" in content and "line 2950\n" not in content
    assert "line 3000\n" in content


def _edit_all_undo(text: str, sc: dict[str, Any], root: Path) -> None:
    assert sc["replacements"] == 111
    assert (root / "big.txt").read_text() == "".join(f"line {i}\n" for i in range(1, BIG_LINES + 1))


TOOL_CASES: dict[str, list[Case]] = {
    "run_shell": [
        Case("echo", {"command": "echo hello"}, _shell_echo),
        Case(
            "both streams",
            {"command": "echo to-err >&2; cat sub/nested.txt"},
            _shell_streams,
        ),
        Case("cwd", {"command": "pwd", "cwd": "sub"}, _shell_cwd),
        Case("long output cut with a pointer", {"command": "cat big.txt"}, _shell_cut),
        Case(
            "background job",
            {"command": "printf 'line one\\nline two\\n'", "background": True},
            lambda t, sc, r: _shell_job(t, sc, r, 1),
        ),
        Case(
            "background job to kill",
            {"command": "sleep 1000", "background": True, "timeout_ms": 60000},
            lambda t, sc, r: _shell_job(t, sc, r, 2),
        ),
    ],
    "job_output": [
        Case("first page", {"job_id": "job-1"}, _job_page),
        Case("offset and limit", {"job_id": "job-1", "offset": 5, "limit": 3}, _job_window),
    ],
    "job_kill": [
        Case("running job", {"job_id": "job-2"}, _job_kill),
        Case("already ended", {"job_id": "job-2"}, _job_kill_again),
    ],
    "read_file": [
        Case("small file", {"path": "small.txt"}, _read_small),
        Case("3000-line file, first page", {"path": "big.txt"}, _read_big),
        Case("3000-line file, next page", {"path": "big.txt", "offset": 2001}, _read_big_page2),
        Case("offset and limit", {"path": "big.txt", "offset": 10, "limit": 5}, _read_window),
        Case("file in a subfolder", {"path": "sub/nested.txt"}, _read_nested),
    ],
    "list_dir": [
        Case("root (no arguments)", {}, _list_root),
        Case("subfolder", {"path": "sub"}, _list_sub),
        Case("paged", {"path": ".", "limit": 1}, _list_paged),
    ],
    "search_files": [
        Case("plain word", {"query": "TXT"}, _find_all),
        Case("glob, cut by limit", {"query": "*.txt", "limit": 2}, _find_paged),
        Case("cursor", {"query": "*.txt", "limit": 2, "cursor": "small.txt:end"}, _find_rest),
        Case("in a subfolder", {"query": "nested", "path": "sub"}, _find_in_sub),
    ],
    "grep": [
        Case("literal line", {"pattern": "line 2999"}, _grep_one),
        Case("regex", {"pattern": "^line 1\\d$"}, _grep_regex),
        Case("cut by limit", {"pattern": "line", "limit": 3}, _grep_paged),
        Case("cursor", {"pattern": "line", "limit": 3, "cursor": "big.txt:3"}, _grep_next),
        Case(
            "one file with context",
            {"pattern": "SECOND", "path": "small.txt", "case_insensitive": True, "context": 1},
            _grep_file_context,
        ),
    ],
    "write_file": [
        Case("new file in a new folder", {"path": "out/new.txt", "content": "hello\nworld\n"}, _write_new),
        Case("replace", {"path": "out/new.txt", "content": "replaced\n"}, _write_replace),
    ],
    "edit_file": [
        Case(
            "unique match",
            {"path": "small.txt", "old_string": "second line", "new_string": "2nd line"},
            _edit_one,
        ),
        Case(
            "undo it",
            {"path": "small.txt", "old_string": "2nd line", "new_string": "second line"},
            _edit_undo,
        ),
        Case(
            "replace_all",
            {"path": "big.txt", "old_string": "line 29", "new_string": "LINE 29", "replace_all": True},
            _edit_all,
        ),
        Case(
            "undo replace_all",
            {"path": "big.txt", "old_string": "LINE 29", "new_string": "line 29", "replace_all": True},
            _edit_all_undo,
        ),
    ],
}
