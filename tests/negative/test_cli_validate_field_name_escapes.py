"""``altm validate`` prints the name of an unknown field of a bad line raw: a line's JSON key can carry terminal
escape sequences to the operator's terminal (clipboard write, erased or forged output lines).

Finding (red team, what the CLI prints): a validation error's location is built from the input's own keys,
joined as they are (``describe_validation_error``, altm/core/codec.py:30-32: ``".".join(str(p) for p in
err["loc"])``); ``validate`` echoes the message unfiltered (altm/interfaces/cli/ingest.py:97-101,
``typer.echo(f"line {lineno}: {exc}")``). A key is any JSON string, so ``"\\u001b]52;c;…\\u0007"`` or
``"\\u001b[1A\\u001b[2Kline 1: ok"`` in a turn event (top level, or inside ``scope``, both ``extra="forbid"``)
reaches the terminal as ESC sequences. The same text is the dead letter's ``error`` of ``altm ingest``. Other parts
of these messages are safe (``unknown field(s) {unknown}`` of a flat line is a list ``repr``, which escapes).

Reproduction: ``altm validate FILE`` over a JSONL file whose turn event has the key ``"\\u001b]52;c;cm0gLXJmIH4K
\\u0007"`` inside ``scope``: it prints ``line 1: invalid turn event: turn.scope.␛]52;c;cm0gLXJmIH4K␇: Extra
inputs are not permitted`` with real ESC/BEL bytes; a terminal puts ``rm -rf ~`` on the operator's clipboard. A
key ``"\\u001b[1A\\u001b[2Kline 1: ok"`` erases the previous report line and prints a forged "ok".

Expected: every line ``validate`` prints is free of control characters (other than its newline) and of bidi
controls: a field name from the input is shown escaped (``repr`` or ``\\x1b``-style), so the report still names it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
from typer.testing import CliRunner

from altm.interfaces.cli import app as cli

CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
SCOPE = {"tenant_id": "acme", "workspace_id": "platform", "user_id": "dana", "agent_id": "coder"}


def _event(turn_id: str, **extra: Any) -> dict[str, Any]:
    return {"event_type": "turn", "event_id": f"evt_{turn_id}", "scope": dict(SCOPE), "session_id": "s1",
            "turn_id": turn_id, "role": "user", "content": "hello", "timestamp": "2026-11-02T09:00:00Z", **extra}


def test_validate_prints_no_terminal_escapes_from_a_field_name(tmp_path: Path) -> None:
    clipboard = _event("t1")
    clipboard["scope"]["\x1b]52;c;cm0gLXJmIH4K\x07"] = "x"  # OSC 52: "rm -rf ~" to the clipboard
    forged = _event("t2", **{"\x1b[1A\x1b[2Kline 1: ok \u202ex": 1})  # erase the line above, print a forged one
    src = tmp_path / "bad.jsonl"
    src.write_bytes(orjson.dumps(clipboard) + b"\n" + orjson.dumps(forged) + b"\n")
    result = CliRunner().invoke(cli, ["validate", str(src)], color=True)  # as on a terminal
    assert result.exit_code == 1, result.output  # both lines are bad, and said so
    reported = [line for line in result.output.split("\n") if line]
    assert len(reported) == 2 and all("Extra inputs are not permitted" in line for line in reported), reported
    found = sorted({f"U+{ord(c):04X}" for c in CONTROL.findall(result.output)})
    assert found == [], f"written to the terminal as they are: {reported}"
