"""A Claude Code `Elicitation` hook for the real-client tests: it stands in for the user who
would answer an MCP server's form in the dialog, which `claude -p` does not have.

Usage: elicit_hook.py RECORD ACTION [FIELD=VALUE ...]. Appends the hook input Claude Code
sends on stdin (the server's request as Claude Code's user layer sees it) to RECORD as one
JSON line, then answers ACTION (`accept`, `decline` or `cancel`) with the FIELD=VALUE pairs
as the form's content."""

import json
import sys

record, action, *fields = sys.argv[1:]
request = json.load(sys.stdin)
with open(record, "a") as out:
    out.write(json.dumps(request) + "\n")
answer = {"hookEventName": "Elicitation", "action": action}
if action == "accept":
    answer["content"] = dict(field.split("=", 1) for field in fields)
print(json.dumps({"hookSpecificOutput": answer}))
