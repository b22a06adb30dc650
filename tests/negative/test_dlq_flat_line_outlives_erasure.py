"""A flat transcript line dead-lettered by ``altm ingest`` stays readable after its session (or its whole user) is
erased: ``altm log tail dlq`` prints the erased text.

Finding (red team, erased content in what ALTM prints): a dead letter is sealed "under the key of what it keeps"
(README, crypto-shredding): ``owner_of`` (altm/bus/sealing/_sealer.py:131-134) looks for the owner in the dead
letter's ``original``, but ``_scope_parts`` (altm/bus/sealing/_sealer.py:59-67) only reads a nested ``"scope"``
object. A flat transcript line — the documented input format of ``altm ingest`` (README "a flat transcript line",
the shipped sample) — carries ``tenant_id``/``workspace_id``/``user_id``/``agent_id``/``session_id`` at top level,
so its dead letter gets ``Owner("", "", "~derived")`` (key ``None``: ``dead_letter_record(settings, None, …)``,
altm/app/ingest.py:138-140): a key of no user, that no erasure retires or destroys. The same turn written as a
turn event (``"scope": {…}``) is sealed under its session's key and is shredded by the erasure, as promised.

Reproduction: ``altm ingest`` a file of the session ``s1`` of ``acme/platform/dana/coder`` whose second line is a
flat line with a bad timestamp (``"content": "my card is 4111 1111 1111 1111"``), and the same as a turn event;
``altm erase --session s1`` (exit 0, "erased (session)"); ``altm log tail dlq``: the event's dead letter reads
``{"shredded": "erased: its data key is destroyed"}``, the flat line's prints its whole original, card number
included. ``altm erase --user`` leaves it too.

Expected: after the erasure of a session (or agent, or user) no dead letter of that session's input can be read:
the flat line's dead letter is sealed under the session's key like the event's (``_scope_parts`` reads the flat
fields too) and ``altm log tail dlq`` shows it as shredded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from typer.testing import CliRunner

from altm.interfaces.cli import app as cli

runner = CliRunner()
ENV = {"ALTM_EMBEDDER": "none"}
SCOPE = {"tenant_id": "acme", "workspace_id": "platform", "user_id": "dana", "agent_id": "coder"}
FLAT_SECRET = "flat line: my card is 4111 1111 1111 1111"
EVENT_SECRET = "event line: my card is 5500 0000 0000 0004"


def _lines() -> list[dict[str, Any]]:
    flat = {**SCOPE, "session_id": "s1", "role": "user", "timestamp": "2026-11-02T09:00:00Z"}
    return [
        {**flat, "turn_id": "s1-t1", "content": "We are moving the billing service to FastAPI."},
        {**flat, "turn_id": "s1-t2", "content": FLAT_SECRET, "timestamp": "yesterday-ish"},  # dead-lettered
        {"event_type": "turn", "event_id": "evt_s1_t3", "scope": SCOPE, "session_id": "s1", "turn_id": "s1-t3",
         "role": "user", "content": EVENT_SECRET, "timestamp": "yesterday-ish"},  # dead-lettered
    ]


def test_erasing_a_session_shreds_the_dead_letters_of_its_flat_lines(tmp_path: Path) -> None:
    src, data = tmp_path / "s1.jsonl", tmp_path / "data"
    src.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in _lines()))
    ingested = runner.invoke(cli, ["ingest", "--data-dir", str(data), str(src)], env=ENV)
    assert ingested.exit_code == 0 and "2 dead-lettered at input" in ingested.output, ingested.output
    before = runner.invoke(cli, ["log", "tail", "dlq", "--data-dir", str(data)], env=ENV).output
    assert FLAT_SECRET in before and EVENT_SECRET in before  # each bad line kept, with its original

    erased = runner.invoke(cli, ["erase", "--data-dir", str(data), "--scope", "/".join(SCOPE.values()),
                                 "--session", "s1"], env=ENV)
    assert erased.exit_code == 0 and "erased (session)" in erased.output, erased.output
    dead = [orjson.loads(line)["value"] for line in
            runner.invoke(cli, ["log", "tail", "dlq", "--data-dir", str(data)], env=ENV).output.split("\n") if line]
    assert len(dead) == 2
    assert EVENT_SECRET not in str(dead)  # the turn event's dead letter: shredded with the session
    readable = [d["original"] for d in dead if "original" in d]
    assert readable == [], f"erased session s1, yet its dead letter still reads: {readable}"
