"""Started by hand in a terminal, `toolgate serve` says what it serves and how to connect."""

import os
import pty
import select
import subprocess
import time

from conftest import toolgate_bin


def test_serve_on_a_tty_prints_connection_help_on_stderr(project, server_env) -> None:
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [toolgate_bin(), "serve", "--root", str(project)],
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env,
    )
    os.close(follower)
    try:
        seen = b""
        deadline = time.monotonic() + 10
        while b"Codex" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stderr], [], [], 0.5)
            if ready:
                chunk = os.read(proc.stderr.fileno(), 4096)
                if not chunk:
                    break
                seen += chunk
        text = seen.decode()
        assert "claude mcp add toolgate -- toolgate serve" in text, text
        assert "[mcp_servers.toolgate]" in text, text
        assert "--http" in text, text
        assert str(project) in text, text
        # Ctrl-D (end of input on the terminal) stops it cleanly; stdout carried nothing.
        os.write(leader, b"\x04")
        assert proc.wait(10) == 0
        assert proc.stdout.read() == b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)
