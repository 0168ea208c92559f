"""Replicas of `serve --http` share spill files through S3 (`[budget] spill_store`): a large
`run_shell` output spilled on one replica is read with `read_file` through another, against a
real S3-compatible server (moto's, installed by scripts/install-peers.sh).

Each replica serves its own copy of the project (two machines with one checkout each), so
each has its own spill folder at the same relative path the pointer names.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from conftest import http_connection

BUCKET = "team-toolgate"
PREFIX = "spill"
LINES = 100_000
# How long an upload from replica 1 may take to show up through replica 2: a guard for a
# loaded machine, not a measurement.
PATIENCE = 120.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def text_of(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


@pytest.fixture
def s3(tmp_path: Path) -> Iterator[dict[str, str]]:
    """moto's S3 server on a free port with an empty bucket; the AWS_* variables for it."""
    try:
        import boto3
        import moto.server  # noqa: F401
    except ImportError as e:
        pytest.fail(f"moto's S3 server is not installed ({e}): run scripts/install-peers.sh")
    port = free_port()
    log = open(tmp_path / "moto.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    env = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ALLOW_HTTP": "true",
    }
    try:
        deadline = time.monotonic() + PATIENCE
        while True:
            assert proc.poll() is None, (tmp_path / "moto.log").read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, f"moto's server did not start in {PATIENCE} s"
                time.sleep(0.1)  # a poll interval, not a deadline
        client = boto3.client(
            "s3",
            endpoint_url=env["AWS_ENDPOINT_URL"],
            region_name=env["AWS_REGION"],
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        client.create_bucket(Bucket=BUCKET)
        env["client"] = client  # type: ignore[assignment]
        yield env
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def share_spills(server_env: dict[str, str], aws: dict[str, str]) -> None:
    """Every server started from now on has the shared store in its user config and the
    AWS_* variables in its environment."""
    config = Path(server_env["XDG_CONFIG_HOME"]) / "toolgate" / "config.toml"
    config.write_text(
        config.read_text() + f'\n[budget]\nspill_store = "s3://{BUCKET}/{PREFIX}"\n'
    )
    server_env.update({k: v for k, v in aws.items() if k.startswith("AWS_")})


@pytest.mark.anyio
async def test_a_spill_written_on_one_replica_is_read_through_another(
    project: Path, tmp_path: Path, server_env: dict[str, str], start_http_server, s3
) -> None:
    share_spills(server_env, s3)
    copy = tmp_path / "replica-2" / "project"
    shutil.copytree(project, copy)
    one = start_http_server(project)
    two = start_http_server(copy)
    for replica in (one, two):
        assert "cannot be reached" not in replica.stderr(), replica.stderr()

    async with http_connection(one.url, "legacy") as client:
        ran = await client.call_tool("run_shell", {"command": f"seq 1 {LINES}"})
        assert not ran.is_error, ran
        text = text_of(ran)
    assert "saved to `" in text, text[-600:]
    pointer = text.split("saved to `", 1)[1].split("`", 1)[0]
    assert not Path(pointer).is_absolute(), pointer
    name = Path(pointer).name
    assert (project / pointer).is_file(), "written on replica 1"
    assert not (copy / pointer).exists(), "not on replica 2 before it is read there"

    # Replica 2 fetches it from the bucket on first read (the upload runs in the
    # background, so a read right after the call may have to come again).
    deadline = time.monotonic() + PATIENCE
    async with http_connection(two.url, "legacy") as client:
        while True:
            read = await client.call_tool(
                "read_file", {"path": pointer, "offset": LINES - 2, "limit": 3}
            )
            if not read.is_error or time.monotonic() > deadline:
                break
            assert "read it again in a few seconds" in text_of(read), text_of(read)
            await anyio.sleep(0.5)
        assert not read.is_error, text_of(read)
        page = text_of(read)
        assert f"{LINES - 1}" in page and f"{LINES}" in page, page
        # A second read is served from replica 2's own copy.
        first = await client.call_tool("read_file", {"path": pointer, "limit": 2})
        assert not first.is_error and "1" in text_of(first), text_of(first)
    assert (copy / pointer).read_bytes() == (project / pointer).read_bytes()
    listed = s3["client"].list_objects_v2(Bucket=BUCKET, Prefix=f"{PREFIX}/")  # type: ignore[attr-defined]
    keys = [o["Key"] for o in listed.get("Contents", [])]
    assert f"{PREFIX}/{name}" in keys, keys


@pytest.mark.anyio
async def test_an_unreachable_store_is_one_warning_and_spills_stay_local(
    project: Path, server_env: dict[str, str], start_http_server
) -> None:
    closed = free_port()
    share_spills(
        server_env,
        {
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{closed}",
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_ALLOW_HTTP": "true",
        },
    )
    server = start_http_server(project)
    stderr = server.stderr()
    assert f"s3://{BUCKET}/{PREFIX} at http://127.0.0.1:{closed} cannot be reached" in stderr, (
        stderr
    )
    assert "AWS_ENDPOINT_URL" in stderr, stderr
    async with http_connection(server.url, "legacy") as client:
        ran = await client.call_tool("run_shell", {"command": f"seq 1 {LINES}"})
        assert not ran.is_error, ran
        pointer = text_of(ran).split("saved to `", 1)[1].split("`", 1)[0]
        read = await client.call_tool("read_file", {"path": pointer, "limit": 1})
        assert not read.is_error and "1" in text_of(read), text_of(read)
