"""Scripted model endpoints over real HTTP, for driving real agent CLIs (Claude Code, Codex,
Gemini CLI).

`FakeModel` serves three wire formats on one port:

- Anthropic Messages (`POST /v1/messages`, streamed or not), what Claude Code speaks with
  `ANTHROPIC_BASE_URL` set;
- OpenAI Responses (`POST /v1/responses`, streamed), what Codex speaks with a custom
  `model_provider` whose `wire_api = "responses"`;
- Gemini API (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse` or
  `:generateContent`), what Gemini CLI speaks with `GOOGLE_GEMINI_BASE_URL` set.

The model follows a script: a list of tool calls. On each request from the main agent (one
whose tool list holds the script's tools) it counts the tool results already in the
conversation and makes the next call, or ends the turn with a short text when the script is
done. Side requests (titles, summaries, requests without our tools) get a short text.
Every request body is recorded, so a test can read exactly what the client sent back as each
tool result, and the tool array it sent.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Step:
    """One tool call: the tool whose name ends with `tool` after the client's MCP prefix
    (`mcp__tg__read_file` in Claude Code, `mcp_tg_read_file` in Gemini CLI for `read_file`),
    else the client's own tool of that name, with `input`. `exact`: only the tool named
    exactly `tool`, as a model that follows a name it read literally calls it (a step made by
    `follow` calls it even when the client lists no such tool)."""

    tool: str
    input: dict[str, Any]
    exact: bool = False
    # A model that reads the previous result (Gemini API): the call it makes is
    # `follow(that result's text)`, a Step (`tool` and `input` unused).
    follow: Callable[[str], "Step"] | None = None

    def matches(self, name: str) -> bool:
        """Whether `name`, as the client lists it, is an MCP tool this step calls."""
        if self.exact:
            return name == self.tool
        # Gemini CLI's `mcp_<server>_<tool>`; Claude Code's and Codex's `…__<tool>`.
        return name.endswith("__" + self.tool) or (
            name.startswith("mcp_") and name.endswith("_" + self.tool)
        )


@dataclass
class FakeModel:
    steps: list[Step]
    requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_HEAD(self) -> None:  # connectivity probes
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                model.paths.append("GET " + self.path)
                body = b"{}"
                self.send_response(200 if self.path.rstrip("/").endswith("models") else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else self._read_chunked()
                path = self.path.split("?")[0]
                model.paths.append("POST " + path)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                if path.endswith("/count_tokens"):
                    self._json({"input_tokens": 100})
                elif path.endswith("/messages"):
                    with model._lock:
                        model.requests.append({"api": "anthropic", "body": body})
                    model._anthropic(self, body)
                elif path.endswith("/responses"):
                    with model._lock:
                        model.requests.append({"api": "responses", "body": body})
                    model._responses(self, body)
                elif path.endswith(":countTokens"):
                    self._json({"totalTokens": 100})
                elif path.endswith((":streamGenerateContent", ":generateContent")):
                    with model._lock:
                        model.requests.append({"api": "gemini", "body": body})
                    model._gemini(self, body, stream=path.endswith(":streamGenerateContent"))
                else:
                    self._json({"error": {"type": "not_found", "message": path}}, 404)

            def _read_chunked(self) -> bytes:
                if "chunked" not in (self.headers.get("Transfer-Encoding") or ""):
                    return b""
                out = b""
                while True:
                    size = int(self.rfile.readline().strip() or b"0", 16)
                    if size == 0:
                        self.rfile.readline()
                        return out
                    out += self.rfile.read(size)
                    self.rfile.readline()

            def _json(self, value: Any, status: int = 200) -> None:
                data = json.dumps(value).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def sse(self, events: list[tuple[str, dict[str, Any]]]) -> None:
                data = b"".join(
                    f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()
                    for name, payload in events
                )
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- which call comes next -------------------------------------------------------

    def _pick(
        self, names: list[str], done: int, mentioned: str, last_result: str | None = None
    ) -> tuple[str, dict[str, Any]] | None:
        """The next scripted call as (client's tool name, input), or None when the script
        is done or this request is not from the main agent. `done` counts the scripted calls
        already answered; `mentioned` is the request's text, where a client that defers its
        MCP tools (Claude Code's ToolSearch) names them; `last_result` the text of the last tool
        result in the conversation, for a step that follows it."""
        if done >= len(self.steps):
            return None
        step = self.steps[done]
        if step.follow is not None:
            if last_result is None:
                return None
            step = step.follow(last_result)
            if step.exact:
                # What it read, whether the client lists such a tool or not.
                return step.tool, step.input
        # An MCP tool first: Gemini CLI has its own `read_file`, and toolgate's is meant.
        for name in names:
            if step.matches(name):
                return name, step.input
        for name in names:
            if name == step.tool:
                return name, step.input
        if "ToolSearch" in names:
            deferred = re.search(r"(mcp__[A-Za-z0-9_-]+?__" + re.escape(step.tool) + r")(?![A-Za-z0-9_-])", mentioned)
            if deferred:
                return "ToolSearch", {"query": "select:" + deferred.group(1), "max_results": 5}
        return None

    # --- Anthropic Messages ----------------------------------------------------------

    def _anthropic(self, h: Any, body: dict[str, Any]) -> None:
        names = [t.get("name", "") for t in body.get("tools") or []]
        done = sum(
            1
            for m in body.get("messages") or []
            if m.get("role") == "assistant" and isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") != "ToolSearch"
        )
        call = self._pick(names, done, json.dumps(body.get("messages")) if "ToolSearch" in names else "")
        n = len(self.requests)
        if call is None:
            text = "done" if names else "ok"
            block = {"type": "text", "text": text}
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": text}
            stop = "end_turn"
        else:
            name, args = call
            block = {"type": "tool_use", "id": f"toolu_{n:04d}", "name": name, "input": args}
            start = {"type": "tool_use", "id": block["id"], "name": name, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(args)}
            stop = "tool_use"
        usage = {"input_tokens": 10, "output_tokens": 5}
        message = {
            "id": f"msg_{n:04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            h._json(message)
            return
        h.sse(
            [
                ("message_start", {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}}),
                ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}}),
                ("message_stop", {"type": "message_stop"}),
            ]
        )

    # --- OpenAI Responses ------------------------------------------------------------

    def _responses(self, h: Any, body: dict[str, Any]) -> None:
        names = []
        namespaced: dict[str, tuple[str, str]] = {}
        for t in body.get("tools") or []:
            names.append(t.get("name") or (t.get("function") or {}).get("name") or "")
            # Namespaced tool groups list their members inside.
            for inner in t.get("tools") or []:
                full = f"{t.get('name', '')}__{inner.get('name', '')}"
                names.append(full)
                namespaced[full] = (t.get("name", ""), inner.get("name", ""))
        items = body.get("input") or []
        results = sum(
            1 for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"
        )
        call = self._pick(names, results, "")
        n = len(self.requests)
        rid = f"resp_{n:04d}"
        if call is None:
            text = "done" if names else "ok"
            item = {
                "type": "message",
                "id": f"msg_{n:04d}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
            events = [
                ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0, "content_index": 0, "delta": text}),
            ]
        else:
            name, args = call
            item = {
                "type": "function_call",
                "id": f"fc_{n:04d}",
                "call_id": f"call_{n:04d}",
                "name": name,
                "arguments": json.dumps(args),
                "status": "completed",
            }
            if name in namespaced:
                # A tool inside a `namespace` tool group is called by its own name plus
                # the group's.
                item["namespace"], item["name"] = namespaced[name]
            events = []
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        h.sse(
            [("response.created", {"type": "response.created", "response": {"id": rid}})]
            + [("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item})]
            + events
            + [
                ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
                ("response.completed", {"type": "response.completed", "response": {"id": rid, "status": "completed", "output": [item], "usage": usage}}),
            ]
        )

    # --- Gemini API ------------------------------------------------------------------

    def _gemini(self, h: Any, body: dict[str, Any], stream: bool) -> None:
        declared = {
            d.get("name", ""): d.get("parametersJsonSchema") or d.get("parameters") or {}
            for t in body.get("tools") or []
            for d in t.get("functionDeclarations") or []
        }
        names = list(declared)
        done = sum(
            1
            for c in body.get("contents") or []
            if c.get("role") == "model"
            for p in c.get("parts") or []
            if "functionCall" in p
        )
        results = self.tool_results({"api": "gemini", "body": body})
        call = self._pick(names, done, "", results[-1]["text"] if results else None)
        n = len(self.requests)
        if call is None:
            part: dict[str, Any] = {"text": "done" if names else "ok"}
        else:
            name, args = call
            # As Gemini CLI's prompt tells Gemini 3 models: set `wait_for_previous` (which the
            # CLI adds to every tool's schema) on every call.
            if "wait_for_previous" in (declared.get(name, {}).get("properties") or {}):
                args = {**args, "wait_for_previous": done > 0}
            part = {"functionCall": {"id": f"call_{n:04d}", "name": name, "args": args}}
        chunk = {
            "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": "fake",
            "responseId": f"resp_{n:04d}",
        }
        if not stream:
            h._json(chunk)
            return
        data = f"data: {json.dumps(chunk)}\r\n\r\n".encode()
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    # --- what the client sent back ---------------------------------------------------

    def main_requests(self) -> list[dict[str, Any]]:
        """Requests that carried the scripted tools (the main agent's turns)."""
        out = []
        for r in self.requests:
            body = r["body"]
            names = [t.get("name") or (t.get("function") or {}).get("name") or "" for t in body.get("tools") or []]
            for t in body.get("tools") or []:
                names += [f"{t.get('name', '')}__{i.get('name', '')}" for i in t.get("tools") or []]
                names += [d.get("name", "") for d in t.get("functionDeclarations") or []]
            if self.steps and ("ToolSearch" in names or any(n == self.steps[0].tool or self.steps[0].matches(n) for n in names)):
                out.append(r)
        return out

    def tool_results(self, request: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Each tool result as the client sent it to the model, from `request` (default: the
        last main request): {"text": what the model reads, "is_error": bool|None, "raw": the
        block as sent}."""
        main = self.main_requests()
        if request is None and not main:
            return []
        last = request if request is not None else main[-1]
        out = []
        if last["api"] == "anthropic":
            names = {
                b.get("id"): b.get("name")
                for m in last["body"].get("messages") or []
                if isinstance(m.get("content"), list)
                for b in m["content"]
                if isinstance(b, dict) and b.get("type") == "tool_use"
            }
            for m in last["body"].get("messages") or []:
                if not isinstance(m.get("content"), list):
                    continue
                for b in m["content"]:
                    if isinstance(b, dict) and b.get("type") == "tool_result" and names.get(b.get("tool_use_id")) != "ToolSearch":
                        out.append({"text": block_text(b.get("content")), "is_error": b.get("is_error"), "raw": b})
        elif last["api"] == "gemini":
            for c in last["body"].get("contents") or []:
                for p in c.get("parts") or []:
                    response = (p.get("functionResponse") or {}).get("response")
                    if response is None:
                        continue
                    # Gemini CLI sends a result as {"output": …} and a failure as {"error": …}.
                    failed = "error" in response
                    text = response.get("error") if failed else response.get("output")
                    out.append({"text": block_text(text), "is_error": failed, "raw": p})
        else:
            for i in last["body"].get("input") or []:
                if isinstance(i, dict) and i.get("type") == "function_call_output":
                    out.append({"text": block_text(i.get("output")), "is_error": None, "raw": i})
        return out


def calls(request: dict[str, Any]) -> list[str]:
    """The tool calls in a request's conversation so far, by the full name the model used
    (a Responses `namespace` joined to the name with `__`, as in the tool array)."""
    body = request["body"]
    if request["api"] == "gemini":
        return [
            p["functionCall"].get("name", "")
            for c in body.get("contents") or []
            for p in c.get("parts") or []
            if "functionCall" in p
        ]
    if request["api"] == "anthropic":
        return [
            b.get("name", "")
            for m in body.get("messages") or []
            if isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
    return [
        "__".join(filter(None, (i.get("namespace"), i.get("name"))))
        for i in body.get("input") or []
        if isinstance(i, dict) and i.get("type") == "function_call"
    ]


def block_text(content: Any) -> str:
    """The text a model reads from a tool result's content (a string or content blocks)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for c in content:
            if isinstance(c, dict):
                if c.get("type") in ("text", "input_text", "output_text"):
                    parts.append(c.get("text", ""))
                else:
                    parts.append(json.dumps(c))
            else:
                parts.append(str(c))
        return "".join(parts)
    if isinstance(content, dict):
        return content.get("content") if isinstance(content.get("content"), str) else json.dumps(content)
    return str(content)
