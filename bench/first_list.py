"""How long a client waits for `toolgate serve`'s first `tools/list` with a server mounted
that never answers (a cold catalog: nothing is known of it).

    python3 bench/first_list.py [--bin target/release/toolgate] [--runs 20] [--baseline OLD_BIN]

Each run starts `serve` over stdio in a fresh project whose user config mounts `sleep 600`,
sends `initialize`, then times `tools/list` from request to response. Prints the median and
the worst run per binary.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def first_list_ms(binary: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config = root / "xdg-config" / "toolgate"
        config.mkdir(parents=True)
        (config / "config.toml").write_text(
            '[mcp_servers.hangs]\ncommand = "sleep"\nargs = ["600"]\nstartup_timeout_sec = 600\n'
        )
        env = {
            **os.environ,
            "XDG_CONFIG_HOME": str(root / "xdg-config"),
            "XDG_CACHE_HOME": str(root / "xdg-cache"),
            "HOME": str(root),
        }
        proc = subprocess.Popen(
            [binary, "serve", "--root", str(root), "--log-level", "error"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert proc.stdin and proc.stdout

        def send(message: dict) -> None:
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()

        def reply(wanted: int) -> dict:
            while True:
                message = json.loads(proc.stdout.readline())
                if message.get("id") == wanted:
                    return message

        try:
            send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"}}})
            reply(0)
            send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            started = time.perf_counter()
            send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            reply(1)
            return (time.perf_counter() - started) * 1000
        finally:
            proc.stdin.close()
            proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default="target/release/toolgate")
    parser.add_argument("--baseline", help="another toolgate binary to measure the same way")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    for binary in filter(None, [args.baseline, args.bin]):
        times = [first_list_ms(binary) for _ in range(args.runs)]
        print(
            f"{binary}: first tools/list median {statistics.median(times):.1f} ms, "
            f"worst {max(times):.1f} ms ({args.runs} runs)"
        )


if __name__ == "__main__":
    main()
