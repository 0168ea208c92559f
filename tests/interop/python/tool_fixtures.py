"""Per-tool argument fixtures for `test_tools.py::test_call_every_builtin`.

That test calls every tool the server lists in `tools/list`; a listed tool without an entry
here fails the test. When you add a built-in tool, add an entry: one or more `Case`s with
valid arguments (paths relative to the test project made by conftest.py's `project` fixture:
`small.txt`, `big.txt` (3000 lines "line N"), `sub/nested.txt`) and a `check` that asserts on
the model text and `structuredContent`. The generic checks (text content present,
`structuredContent.text` == the text, `structuredContent` valid against `outputSchema`,
truncation fields consistent) run for every case before `check`.

Cases of one tool run in order on a fresh project, so a mutating tool (write_file, edit_file)
can create a file in one case and read it back in the next.
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


TOOL_CASES: dict[str, list[Case]] = {
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
}
