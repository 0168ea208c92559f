"""Measures a client's profile: the largest MCP result it hands the model untouched, for
success and for error results, and whether it shows `structuredContent` instead of the text.

    .cache/peers/venv/bin/python tests/interop/clients/measure.py claude|codex|gemini [line_len]

It mounts `probe_server.py` (a tool that returns N characters of numbered lines) in the
real client, makes the scripted model call it with growing N, and checks what reaches the
model: "whole" = every character of the result arrived in order (as is, or JSON-escaped
inside the client's own message, which "escaped" then says), "cut" = not. Then it narrows the
boundary by bisection. Prints one JSON object.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from drive import run_claude, run_codex, run_gemini  # noqa: E402
from fake_models import FakeModel, Step  # noqa: E402

PROBE = str(Path(__file__).parent / "probe_server.py")


def body(chars: int, line: int, fill: str = "x") -> str:
    # The same text probe_server.py returns.
    out, total, i = [], 0, 1
    while total < chars:
        prefix = f"L{i:06d} "
        text = (prefix + fill * max(0, line - len(prefix) - 1))[: line - 1] + "\n"
        out.append(text)
        total += len(text)
        i += 1
    return "".join(out)[:chars]


def attempt(client: str, tool: str, chars: int, error: bool, line: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "project"
        work.mkdir()
        model = FakeModel([Step(tool, {"chars": chars, "error": error, "line": line})])
        servers = {"probe": {"command": sys.executable, "args": [PROBE]}}
        try:
            drive = {"claude": run_claude, "codex": run_codex, "gemini": run_gemini}[client]
            run = drive(work, servers, model)
        finally:
            model.close()
        results = model.tool_results()
        if not results:
            return {"chars": chars, "arrived": None, "stderr": run.stderr[-500:]}
        text = results[0]["text"]
        expected = body(chars, line)
        # Gemini CLI shows a failed call's result inside its own message, as JSON.
        escaped = expected not in text and json.dumps(expected)[1:-1] in text
        return {
            "chars": chars,
            "arrived": len(text),
            "whole": expected in text or escaped,
            "escaped": escaped,
            "json": '{"text":' in text,
            "head": text[:160],
        }


def boundary(client: str, tool: str, error: bool, line: int, lo: int, hi: int) -> tuple[int, dict]:
    """Largest size in [lo, hi) that arrives whole (lo must arrive whole), to 1 %."""
    last_cut = None
    while hi - lo > max(50, lo // 100):
        mid = (lo + hi) // 2
        r = attempt(client, tool, mid, error, line)
        print(json.dumps({"tool": tool, "error": error, **{k: r.get(k) for k in ("chars", "arrived", "whole")}}), file=sys.stderr)
        if r.get("whole"):
            lo = mid
        else:
            hi, last_cut = mid, r
    return lo, last_cut or {}


def main() -> None:
    client = sys.argv[1]
    line = int(sys.argv[2]) if len(sys.argv) > 2 else 80
    report: dict = {"client": client, "line_len": line}
    for key, tool, error in [("success", "emit", False), ("error", "emit", True)]:
        sizes = [1_000, 5_000, 10_000, 20_000, 40_000, 80_000, 160_000]
        lo, hi = 0, None
        for n in sizes:
            r = attempt(client, tool, n, error, line)
            print(json.dumps({"tool": tool, "error": error, **{k: r.get(k) for k in ("chars", "arrived", "whole")}}), file=sys.stderr)
            if r.get("whole"):
                lo = n
            else:
                hi = n
                break
        if hi is None:
            report[key] = {"max_untouched_chars": f">= {lo}"}
            continue
        best, cut = boundary(client, tool, error, line, lo, hi)
        report[key] = {"max_untouched_chars": best, "first_cut": {k: cut.get(k) for k in ("chars", "arrived", "head")}}
    report["error_escaped"] = bool(attempt(client, "emit", 1_000, True, line).get("escaped"))
    r = attempt(client, "emit_structured", 1_000, False, line)
    report["structured_shown_instead_of_text"] = bool(r.get("json"))
    report["structured_head"] = r.get("head")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
