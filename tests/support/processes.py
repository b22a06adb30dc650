"""ALTM as a child process on a loopback port (``altm serve``, the MCP server), for end-to-end tests."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def altm_process(args: list[str], port: int, env: dict[str, str] | None = None, *, script: str | None = None
                 ) -> Iterator[subprocess.Popen[bytes]]:
    """``python -m altm ARGS`` (or ``python -c SCRIPT ARGS``: a script that patches something, then runs the CLI),
    once it accepts connections on ``port``; terminated (then killed) on exit."""
    command = ["-c", script] if script is not None else ["-m", "altm"]
    proc = subprocess.Popen([sys.executable, *command, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (proc.stdout.read() if proc.stdout else b"").decode()
            assert time.monotonic() < deadline, f"{args[0]} did not accept connections on port {port} in 60 s"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.3)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
