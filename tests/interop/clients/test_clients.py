"""The last hop, checked with the real clients (Claude Code, Codex CLI and Gemini CLI from npm,
pinned in scripts/install-peers.sh): what reaches the model when toolgate is their MCP server.

Each test drives the client non-interactively against a scripted model over real HTTP and
asserts on the tool results the client sent back to the model. The login test also starts
a real OpenID provider (tests/interop/oauth). A missing client or provider fails the test;
nothing here skips.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
from conftest import CLIENTS, drive, mount_probe, toolgate, toolgate_server, warm_catalog
from drive import client_home, codex_home, login, run_claude
from fake_models import FakeModel, Step, calls
from oauth_provider import (
    JWT_AUDIENCE,
    SERVER,
    TOOL,
    Provider,
    browser,
    free_port,
    stored_tokens,
    write_claude_json,
)

# What each client puts in front of or after a result; not part of toolgate's text.
CLIENT_WRAP = re.compile(
    r"^Wall time: [0-9.]+ seconds\nOutput:\n?|\n*<system-reminder>.*?</system-reminder>\s*$"
    r"|^<untrusted_context>\n|\n</untrusted_context>$",
    re.S,
)
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


@pytest.mark.parametrize("catalog", ["cold", "warm"])
@pytest.mark.parametrize("client", CLIENTS)
def test_a_mounted_tool_is_callable_through_search_tool_and_run_tool_in_turn_1(
    client, catalog, project
):
    # 40 mounted tools: over the auto:15 threshold, so mounted tools are deferred.
    mount_probe(project, extra_tools=40, delay=1.0)
    # Warm: listed by an earlier session, the tools are in the first list. Cold: the first
    # list is answered at once (Codex 0.169 sends its first model request without waiting
    # for it) with search_tool and run_tool, which wait for the 1 s server.
    if catalog == "warm":
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


@pytest.mark.parametrize("client", CLIENTS)
def test_a_mounted_servers_resources_are_readable_through_read_resource(client, project):
    """A model in a client that never sends `resources/*` itself reads a mounted server's
    resources through toolgate's `list_resources` and `read_resource` tools; a large one
    arrives as an excerpt and a spill pointer, within what the client shows whole."""
    mount_probe(project, resources=True)
    warm_catalog(project)
    steps = [
        Step("list_resources", {}),
        Step("read_resource", {"uri": "probe://notes/readme"}),
        Step("read_resource", {"uri": "probe://notes/big"}),
    ]
    run = drive(client, project, steps)
    results = run.model.tool_results()
    assert len(results) == 3, f"calls made: {len(results)}; stderr: {run.stderr[-1500:]}"
    listing, readme, big = (CLIENT_WRAP.sub("", r["text"]) for r in results)
    assert "probe://notes/readme" in listing and "probe://notes/big" in listing, listing
    assert "the probe's readme: resources reach the model" in readme, readme
    assert_not_cut(big)
    assert "L000001 " in big, big[:300]
    assert "saved to" in big and len(big) < 20_000, big[-500:]


def test_codex_reads_a_mounted_servers_resource_with_its_own_resource_tool(project):
    """Codex's own `read_mcp_resource` tool sends `resources/read` to toolgate, which reads
    it from the mounted server that lists the URI."""
    mount_probe(project, resources=True)
    warm_catalog(project)
    steps = [Step("read_mcp_resource", {"server": "tg", "uri": "probe://notes/readme"})]
    run = drive("codex", project, steps)
    results = run.model.tool_results()
    assert len(results) == 1, f"calls made: {len(results)}; stderr: {run.stderr[-1500:]}"
    assert "the probe's readme: resources reach the model" in results[0]["text"], results[0]


def test_a_mounted_servers_prompt_is_a_slash_command_in_claude_code(project):
    """A mounted server's prompt, served by toolgate as `mcp__probe__release_notes`, is the
    slash command `/mcp__tg__mcp__probe__release_notes` in Claude Code; its text (filled in
    with the argument) is what reaches the model."""
    mount_probe(project, resources=True)
    warm_catalog(project)
    model = FakeModel([])
    try:
        run = run_claude(
            project,
            {"tg": toolgate_server(project)},
            model,
            prompt="/mcp__tg__mcp__probe__release_notes 1.2.3",
        )
    finally:
        model.close()
    assert model.requests, f"no model request; stderr: {run.stderr[-1500:]}"
    sent = json.dumps(model.requests[0]["body"]["messages"])
    assert "Write the release notes of version 1.2.3 (probe prompt)." in sent, sent[-1500:]


@pytest.mark.parametrize("client", CLIENTS)
def test_a_login_protected_server_in_claude_json_works_after_one_mcp_login(
    client, project, provider: Provider, tmp_path
):
    """A user's login with a real OpenID provider: the server is in the user's
    `~/.claude.json`, `toolgate mcp login` runs once, and the client's model then calls its
    tool through `toolgate serve` and reads the identity of that login; no token reaches the
    model, the client's files or its output."""
    home = client_home(client, project)
    home.mkdir(exist_ok=True)
    write_claude_json(home, provider, free_port())
    # The tokens go to the 0600 file store, where this test can read them to look for them.
    config_home = Path(toolgate_server(project)["env"]["XDG_CONFIG_HOME"])
    (config_home / "toolgate").mkdir(parents=True)
    (config_home / "toolgate" / "config.toml").write_text('[mcp]\noauth_credentials_store = "file"\n')
    user = {"HOME": str(home), "BROWSER": browser(tmp_path / "browser-cookies")}

    login = toolgate(project, "mcp", "login", SERVER, env=user)
    assert login.returncode == 0, login.stdout + login.stderr
    assert f"logged in to `{SERVER}`" in login.stdout, login.stdout
    # `mcp list` says so (and leaves the catalog warm, as any earlier session would: see
    # the search_tool/run_tool test for why Codex needs that).
    listing = toolgate(project, "mcp", "list", "--json", env=user)
    assert listing.returncode == 0, listing.stdout + listing.stderr
    entry = next(s for s in json.loads(listing.stdout)["servers"] if s["name"] == SERVER)
    assert entry["status"] == "ready" and entry["auth"].startswith("logged in"), entry
    tokens = stored_tokens(config_home)
    assert tokens, f"no tokens in the file store under {config_home}"

    run = drive(client, project, [Step("whoami", {})])
    results = run.model.tool_results()
    assert len(results) == 1, f"calls made: {len(results)}; stderr: {run.stderr[-2000:]}"
    # The request right after the call carries the tool's real answer: the provider's user
    # this login was issued to.
    first = next(r for r in run.model.main_requests() if run.model.tool_results(r))
    # mcp__tg__mcp__guarded__whoami; mcp_tg_mcp__guarded__whoami in Gemini CLI
    assert calls(first)[-1].endswith("_" + TOOL), calls(first)
    answer = run.model.tool_results(first)[0]
    assert answer["is_error"] is not True, answer
    assert CLIENT_WRAP.sub("", answer["text"]).strip() == provider.whoami(), answer
    # The provider saw exactly the one login: serve used its tokens, it did not log in again.
    stats = provider.admin_call("stats")
    assert stats["registrations"] == 1 and stats["codeGrants"] == 1, stats

    # No token anywhere the model, the client or the project sees: not in any request the
    # model received, not in the client's output, not in any file outside toolgate's store.
    sent = json.dumps(run.model.requests)
    outside = {
        p: p.read_text(errors="replace")
        for p in tmp_path.rglob("*")
        if p.is_file() and not p.is_relative_to(config_home / "toolgate" / "mcp-oauth")
    }
    for token in set(tokens + stored_tokens(config_home)):
        assert token not in sent, "a token reached the model"
        assert token not in run.stdout + run.stderr, "a token is in the client's output"
        leaked = [str(p) for p, text in outside.items() if token in text]
        assert not leaked, f"a token is in {leaked}"


# Gemini CLI 0.61.0 has no `mcp login` command: it logs in from its interactive `/mcp auth`.
@pytest.mark.parametrize("client", ["claude", "codex"])
def test_the_client_logs_in_to_toolgate_itself_and_its_model_calls_as_that_user(
    client, project, jwt_provider: Provider, http_toolgate, tmp_path
):
    """Team mode from the client's side: `toolgate serve --http` takes OAuth
    access tokens of a real OpenID provider (`[server.auth]`); the client logs in to it with
    its own `mcp login --no-browser`, headless (the authorization URL opened by an HTTP
    client, the redirect URL pasted back at its prompt), keeps the tokens itself, and its
    model's tool calls then reach toolgate as that user: the audit log names the provider's
    account."""
    audit = tmp_path / "audit.jsonl"
    url = http_toolgate(
        f'[server.auth]\nissuer = "{jwt_provider.issuer}"\naudience = "{JWT_AUDIENCE}"\n'
        'required_scopes = ["mcp:tools"]\n\n'
        f'[audit]\npath = "{audit}"\n'
    )
    servers = {"tg": {"type": "http", "url": url}}

    done = login(client, project, servers, "tg")
    assert done.code == 0, done.output
    success = "Authenticated with" if client == "claude" else "Successfully logged in"
    assert success in done.output, done.output
    assert f"resource={quote(url, safe='')}" in done.authorize_url, done.authorize_url
    stats = jwt_provider.admin_call("stats")
    assert stats["registrations"] == 1 and stats["codeGrants"] == 1, stats
    # The client keeps the tokens, in its own store.
    store = (
        client_home("claude", project) / ".claude" / ".credentials.json"
        if client == "claude"
        else codex_home(project) / ".credentials.json"
    )
    assert store.is_file() and store.stat().st_mode & 0o077 == 0, store

    run = drive(client, project, [Step("read_file", {"path": "big.txt", "limit": 3})], servers=servers)
    results = run.model.tool_results()
    assert len(results) == 1, f"calls made: {len(results)}; stderr: {run.stderr[-2000:]}"
    text = model_text(run)
    assert results[0]["is_error"] is not True and "line 3" in text, text
    # The call reached toolgate as the provider's user, with its token checked at the door.
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    calls_made = [l for l in lines if l["tool"] == "read_file"]
    assert len(calls_made) == 1, lines
    assert calls_made[0]["subject"] == jwt_provider.account, calls_made[0]
    assert calls_made[0]["issuer"] == jwt_provider.issuer, calls_made[0]
    # One login served the run: the client did not log in again.
    assert jwt_provider.admin_call("stats")["codeGrants"] == 1


HOOK = Path(__file__).parent / "elicit_hook.py"
# What probe_server.py's `ask_release_name` asks (its RELEASE_FORM).
RELEASE_MESSAGE = "Which release name should the probe use?"
RELEASE_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "title": "Release name", "description": "A name for the release"}},
    "required": ["name"],
}


def elicitation_hook(record: Path, action: str, **content: str) -> dict:
    """Claude Code settings with an `Elicitation` hook (elicit_hook.py) that records each form
    it is shown in `record` and answers it `action` with `content`: the user `claude -p` lacks."""
    fields = [f"{k}={v}" for k, v in content.items()]
    command = shlex.join([sys.executable, str(HOOK), str(record), action, *fields])
    return {"hooks": {"Elicitation": [{"hooks": [{"type": "command", "command": command}]}]}}


@pytest.mark.parametrize("action", ["accept", "decline", "no-hook"])
def test_a_mounted_servers_elicitation_reaches_claude_codes_user_and_its_answer_the_server(
    action, project, tmp_path
):
    """A mounted server's elicitation, sent while its tool runs, goes through
    toolgate to Claude Code, whose user layer (the `Elicitation` hook, standing in for the
    dialog `claude -p` lacks) sees the server's message and schema; the user's answer goes
    back through toolgate to the server, and the tool's result built from it reaches the
    model. With no hook, `claude -p` answers `cancel` itself. A form toolgate did not relay
    would reach no hook, and the server would get toolgate's own `decline`."""
    answers, shown = tmp_path / "probe-answers.jsonl", tmp_path / "hook-saw.jsonl"
    mount_probe(project, ask_log=answers)
    warm_catalog(project)
    name = f"orchid-{uuid.uuid4().hex[:8]}"  # nobody but the hook's user knows it
    settings = None if action == "no-hook" else elicitation_hook(shown, action, name=name)
    run = drive("claude", project, [Step("ask_release_name", {})], settings=settings)

    if settings is not None:
        # The form reached Claude Code's user layer as the server sent it, once.
        assert shown.exists(), f"Claude Code showed no form; stderr: {run.stderr[-2000:]}"
        forms = [json.loads(line) for line in shown.read_text().splitlines()]
        assert len(forms) == 1, forms
        form = forms[0]
        assert form["hook_event_name"] == "Elicitation", form
        assert form["mcp_server_name"] == "tg", form
        assert form["message"] == RELEASE_MESSAGE, form
        assert form["requested_schema"] == RELEASE_SCHEMA, form
        assert form["mode"] == "form", form

    # The answer reached the server as the user (or Claude Code, for want of one) gave it...
    got = [json.loads(line) for line in answers.read_text().splitlines()] if answers.exists() else []
    expected, said = {
        "accept": ({"action": "accept", "content": {"name": name}}, f"release name: {name}"),
        "decline": ({"action": "decline"}, "no release name: decline"),
        "no-hook": ({"action": "cancel"}, "no release name: cancel"),
    }[action]
    assert got == [expected], f"the server got {got}; stderr: {run.stderr[-2000:]}"
    # ...and what the server made of it reached the model as the tool's result.
    results = run.model.tool_results()
    assert len(results) == 1, f"calls made: {len(results)}; stderr: {run.stderr[-1500:]}"
    made = calls(run.model.main_requests()[-1])
    assert made[-1].endswith("__mcp__probe__ask_release_name"), made  # mcp__tg__mcp__probe__…
    assert results[0]["is_error"] is not True, results[0]
    assert CLIENT_WRAP.sub("", results[0]["text"]).strip() == said, results[0]


# The scripted model follows a spill pointer literally: it calls exactly the tool the pointer
# names, with exactly its arguments.
POINTER = re.compile(r"read it with (\S+) (\{.*?\}) — do not rerun")


def follow_pointer(text: str) -> Step:
    found = POINTER.search(text)
    assert found, f"no spill pointer in: {text[-600:]}"
    return Step(found.group(1), json.loads(found.group(2)), exact=True)


def test_gemini_sends_wait_for_previous_with_every_call_and_toolgates_tools_take_it(project):
    """Gemini CLI adds `wait_for_previous` to every tool's schema and its model sets it: the
    gemini profile drops it for built-in tools (which refuse unknown fields), and a mounted
    tool that declares it gets it."""
    mount_probe(project)
    warm_catalog(project)
    (project / "small.txt").write_text("alpha\n")
    steps = [
        Step("read_file", {"path": "small.txt"}),
        Step("run_shell", {"command": "echo hi"}),
        Step("mcp__probe__echo_args", {"note": "n"}),
    ]
    run = drive("gemini", project, steps)
    results = run.model.tool_results()
    assert len(results) == 3, f"calls made: {len(results)}; stderr: {run.stderr[-2000:]}"
    last = run.model.main_requests()[-1]
    made = [
        p["functionCall"]
        for c in last["body"]["contents"]
        for p in c.get("parts") or []
        if "functionCall" in p
    ]
    assert [m["name"] for m in made] == ["mcp_tg_read_file", "mcp_tg_run_shell", "mcp_tg_mcp__probe__echo_args"]
    assert all("wait_for_previous" in m["args"] for m in made), made
    for r in results:
        assert r["is_error"] is not True and "unknown field" not in r["text"], r
    assert "     1\talpha" in results[0]["text"]
    assert "hi" in results[1]["text"]
    echoed = json.loads(CLIENT_WRAP.sub("", results[2]["text"]).strip())
    assert echoed == {"note": "n", "wait_for_previous": True}, echoed


@pytest.mark.parametrize("keyed", [True, False])
def test_gemini_following_a_spill_pointer_literally_reaches_toolgates_read_file(keyed, project):
    """A spill pointer names `read_file` as Gemini CLI lists toolgate's (`mcp_<server>_…`),
    never the bare `read_file`, which is Gemini's own tool. With toolgate's key written into
    `[clients.gemini] tool_names`, the model that calls exactly what the pointer says reads
    the spilled output through toolgate."""
    if keyed:
        folder = Path(toolgate_server(project)["env"]["XDG_CONFIG_HOME"]) / "toolgate"
        folder.mkdir(parents=True)
        (folder / "config.toml").write_text('[clients.gemini]\ntool_names = "mcp_tg_{tool}"\n')
    steps = [
        Step("run_shell", {"command": "seq 1 100000"}),
        Step("", {}, follow=follow_pointer),
    ]
    run = drive("gemini", project, steps)
    results = run.model.tool_results()
    assert len(results) == 2, f"calls made: {len(results)}; out: {run.stdout[-2000:]}; stderr: {run.stderr[-2000:]}"
    spilled = CLIENT_WRAP.sub("", results[0]["text"])
    assert_not_cut(spilled)
    name = POINTER.search(spilled).group(1)
    made = calls(run.model.main_requests()[-1])
    assert made[-1] == name and name != "read_file", made
    if keyed:
        assert name == "mcp_tg_read_file", spilled[-600:]
        page = CLIENT_WRAP.sub("", results[1]["text"])
        assert results[1]["is_error"] is not True, page[:600]
        assert re.search(r"^\s+1\t1$", page, re.M) and "of 100000" in page, page[:600]
    else:
        # Without the key the pointer gives the form the model sees in its tool list; taken
        # literally it is no tool of Gemini CLI's, so the call fails there instead of reading
        # with Gemini's own `read_file`.
        assert name == "mcp_<server>_read_file", spilled[-600:]
        # Gemini CLI's answer suggests the nearest names, toolgate's first.
        refused = results[1]["text"]
        assert results[1]["is_error"] is True and "not found" in refused, refused
        assert 'Did you mean one of: "mcp_tg_read_file"' in refused, refused
