"""A minimal stdio MCP server for measuring what a client does with results of a given size.

Tool `emit {chars, error?, structured?, line?}` returns `chars` characters of numbered lines
(`line` characters each, default 80) as text; `error: true` sets `isError`;
`structured: true` also sends the same text as `structuredContent.text` (with an output
schema). Each line starts with its number, so a reader can tell exactly which lines arrived.

Env: PROBE_TOOLS=N adds N more tools (`probe_extra_NNNN`, for catalog sizes); PROBE_DELAY=S
sleeps S seconds before answering `initialize` (a slow starter); PROBE_LOG=FILE appends each
client's `clientInfo`; PROBE_RESOURCES=1 offers resources: `probe://notes/readme` (a short text
naming itself) and `probe://notes/big` (200,000 characters of numbered lines), and the prompt
`release_notes {version}`; PROBE_ASK=1 adds the tool `ask_release_name`, which asks its client
the form `RELEASE_FORM` (`elicitation/create` while the call runs, as a 2025 server does, so it
then speaks no newer revision than 2025-11-25) and returns what came back: `release name: NAME`
for an accepted form, `no release name: ACTION` otherwise. PROBE_ASK_LOG=FILE appends each
answer the server got as a JSON line. Tool `echo_args {note?, wait_for_previous?}` returns the
arguments it got, as JSON: it declares Gemini CLI's `wait_for_previous`, so a client's value
of it is its to get.
"""

import json
import os
import sys
import time

SCHEMA_IN = {
    "type": "object",
    "properties": {
        "chars": {"type": "integer"},
        "error": {"type": "boolean"},
        "structured": {"type": "boolean"},
        "line": {"type": "integer"},
        "fill": {"type": "string"},
    },
    "required": ["chars"],
}


def body(chars: int, line: int, fill: str = "x") -> str:
    out = []
    total = 0
    i = 1
    while total < chars:
        prefix = f"L{i:06d} "
        text = (prefix + fill * max(0, line - len(prefix) - 1))[: line - 1] + "\n"
        out.append(text)
        total += len(text)
        i += 1
    return "".join(out)[:chars]


def answer(msg_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


RESOURCES = os.environ.get("PROBE_RESOURCES") == "1"
ASK = os.environ.get("PROBE_ASK") == "1"

RELEASE_FORM = {
    "mode": "form",
    "message": "Which release name should the probe use?",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Release name", "description": "A name for the release"},
        },
        "required": ["name"],
    },
}
ASK_TOOL = {
    "name": "ask_release_name",
    "description": "Ask the user for a release name and report it.",
    "inputSchema": {"type": "object", "properties": {}},
}
# Forms sent and not yet answered: the id of our `elicitation/create` -> the id of the call.
asking: dict[str, object] = {}


def send(message):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def answered(msg):
    """The client's answer to one of our forms: the call that asked it ends with it."""
    call_id = asking.pop(str(msg["id"]), None)
    if call_id is None:
        return
    result = msg.get("result") or {}
    if os.environ.get("PROBE_ASK_LOG"):
        with open(os.environ["PROBE_ASK_LOG"], "a") as log:
            log.write(json.dumps(msg.get("result", msg.get("error"))) + "\n")
    if "error" in msg:
        text = f"no release name: error {msg['error'].get('message')}"
    elif result.get("action") == "accept":
        text = f"release name: {(result.get('content') or {}).get('name')}"
    else:
        text = f"no release name: {result.get('action')}"
    answer(call_id, {"content": [{"type": "text", "text": text}], "isError": False})

for raw in sys.stdin:
    msg = json.loads(raw)
    method = msg.get("method")
    if "id" not in msg:
        continue
    if method is None:  # a response: the client answering one of our forms
        answered(msg)
        continue
    if method == "initialize":
        # A slow starter (PROBE_DELAY seconds), like a Python server importing its world.
        time.sleep(float(os.environ.get("PROBE_DELAY", "0")))
        if os.environ.get("PROBE_LOG"):
            with open(os.environ["PROBE_LOG"], "a") as log:
                log.write(json.dumps(msg["params"].get("clientInfo")) + "\n")
        version = msg["params"].get("protocolVersion", "2025-06-18")
        if ASK:
            # Asking mid-call is what a 2025 server does; a 2026-07-28 one answers
            # `input_required` instead, so the asking probe is no newer than 2025-11-25.
            version = min(version, "2025-11-25")
        answer(msg["id"], {
            "protocolVersion": version,
            "capabilities": {"tools": {}, **({"resources": {}, "prompts": {}} if RESOURCES else {})},
            "serverInfo": {"name": "probe", "version": "1"},
        })
    elif method == "tools/list":
        extra = [
            {"name": f"probe_extra_{i:04d}", "description": f"Extra probe tool number {i} for catalog size tests.",
             "inputSchema": {"type": "object", "properties": {"n": {"type": "integer", "format": "uint64"}}}}
            for i in range(int(os.environ.get("PROBE_TOOLS", "0")))
        ]
        answer(msg["id"], {"tools": extra + [
            *([ASK_TOOL] if ASK else []),
            {"name": "emit", "description": "Emit text of a given size.", "inputSchema": SCHEMA_IN},
            {"name": "echo_args", "description": "Return the arguments this call got, as JSON.",
             "inputSchema": {"type": "object", "properties": {
                 "note": {"type": "string"}, "wait_for_previous": {"type": "boolean"}}}},
            {"name": "emit_structured", "description": "Emit text of a given size, also as structuredContent.",
             "inputSchema": SCHEMA_IN,
             "outputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
        ]})
    elif method == "resources/list" and RESOURCES:
        answer(msg["id"], {"resources": [
            {"uri": "probe://notes/readme", "name": "readme", "mimeType": "text/plain"},
            {"uri": "probe://notes/big", "name": "big", "mimeType": "text/plain"},
        ]})
    elif method == "prompts/list" and RESOURCES:
        answer(msg["id"], {"prompts": [{
            "name": "release_notes",
            "description": "Release notes for a version.",
            "arguments": [{"name": "version", "description": "The version", "required": True}],
        }]})
    elif method == "prompts/get" and RESOURCES:
        version = (msg["params"].get("arguments") or {}).get("version", "?")
        text = f"Write the release notes of version {version} (probe prompt)."
        answer(msg["id"], {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]})
    elif method == "resources/templates/list" and RESOURCES:
        answer(msg["id"], {"resourceTemplates": []})
    elif method == "resources/read" and RESOURCES:
        uri = msg["params"]["uri"]
        text = "the probe's readme: resources reach the model" if uri.endswith("readme") else body(200_000, 80)
        answer(msg["id"], {"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]})
    elif method == "tools/call" and ASK and msg["params"]["name"] == ASK_TOOL["name"]:
        # Answered when the form's answer arrives (see `answered`), as a 2025 server asks
        # mid-call.
        form_id = f"form-{msg['id']}"
        asking[form_id] = msg["id"]
        send({"id": form_id, "method": "elicitation/create", "params": RELEASE_FORM})
    elif method == "tools/call" and msg["params"]["name"] == "echo_args":
        args = msg["params"].get("arguments") or {}
        answer(msg["id"], {"content": [{"type": "text", "text": json.dumps(args, sort_keys=True)}], "isError": False})
    elif method == "tools/call":
        args = msg["params"].get("arguments") or {}
        text = body(int(args.get("chars", 100)), int(args.get("line", 80)), str(args.get("fill") or "x")[:1])
        result = {"content": [{"type": "text", "text": text}], "isError": bool(args.get("error"))}
        if msg["params"]["name"] == "emit_structured":
            result["structuredContent"] = {"text": text}
        answer(msg["id"], result)
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}) + "\n")
        sys.stdout.flush()
