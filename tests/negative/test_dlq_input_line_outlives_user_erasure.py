"""A bad input line of ``altm ingest`` whose dead letter keeps only part of it (a message over 256 KiB: a pasted
document or log), or that is not UTF-8 (a cp1252 "é"), is sealed under no user's key: after ``altm erase --user``
``altm log tail dlq`` still prints the erased user's text.

Finding: ``publish_file`` dead-letters a bad line with no record key (``dead_letter_record(settings, None, …)``,
altm/app/ingest.py:137-140), although for a line refused by ``checked`` (too large) it has just parsed the event
and knows its scope and session. The sealer then looks for the owner in the dead letter's ``original``
(``owner_of``, altm/bus/sealing/_sealer.py:140-143), which it can only do when ``original`` is a whole JSON
document. It is not when the line was over ``MAX_DEAD_LETTER_ORIGINAL`` (the first 256 KiB are kept,
``DeadLetter.of``, altm/core/events.py:204-214: cut JSON), nor when the line held bytes that are not UTF-8
(``original_text`` keeps them as ``\\xe9`` escapes, which are not JSON). Both fall back to
``Owner(key or "", "", "~derived")`` — home ``""``, a key of nobody, which no erasure retires or shreds. The same
line with a 70 KB message (kept whole) is shredded with the user: the promise "dead letters under the key of
what they keep" (README, "Crypto-shredding of the log") holds only for small lines.

Reproduction: ``altm ingest`` a file of ``acme/platform/dana/coder``: a good turn, then a turn whose content is
330 KB ("PASTED-SECRET my card is 4111 …" repeated, over ``ALTM_MAX_CONTENT_BYTES``), then a turn whose content
has a cp1252 byte (``caf\\xe9 LATIN-SECRET``); ``altm erase --user`` → "erased (user)"; ``altm log tail dlq``
prints both dead letters with their originals (256 KiB of the paste, the whole cp1252 line).

Expected: after the erasure of a user, none of that user's input lines can be read from the DLQ: a dead letter
of a line that names the user is sealed under that user's (session's) key — ingest passes the owner it parsed
(or the scope it can read from the line leniently) — and ``altm log tail dlq`` shows it as shredded.
"""

from __future__ import annotations

from pathlib import Path

import orjson
from typer.testing import CliRunner

from altm.interfaces.cli import app

runner = CliRunner()
ENV = {"ALTM_EMBEDDER": "none"}
SCOPE = {"tenant_id": "acme", "workspace_id": "platform", "user_id": "dana", "agent_id": "coder"}


def _line(turn_id: str, content: str) -> bytes:
    return orjson.dumps({**SCOPE, "session_id": "s1", "turn_id": turn_id, "role": "user", "content": content,
                         "timestamp": "2026-11-02T09:00:00Z"}) + b"\n"


def _dlq_after_erasing_the_user(tmp_path: Path, bad: bytes) -> str:
    src, data = tmp_path / "s1.jsonl", tmp_path / "data"
    src.write_bytes(_line("t1", "We are moving the billing service to FastAPI.") + bad)
    ingested = runner.invoke(app, ["ingest", "--data-dir", str(data), str(src)], env=ENV)
    assert ingested.exit_code == 0, ingested.output
    assert "1 published, 1 dead-lettered at input" in " ".join(ingested.output.split()), ingested.output
    erased = runner.invoke(app, ["erase", "--data-dir", str(data), "--scope", "/".join(SCOPE.values()), "--user"],
                           env=ENV)
    assert erased.exit_code == 0 and "erased (user)" in erased.output, erased.output
    tail = runner.invoke(app, ["log", "tail", "dlq", "--data-dir", str(data), "-n", "100"], env=ENV)
    assert tail.exit_code == 0, tail.output
    return tail.output


def test_the_dead_letter_of_a_pasted_document_is_shredded_with_its_user(tmp_path: Path) -> None:
    paste = "PASTED-SECRET my card is 4111 1111 1111 1111. " * 7_000  # 322 KB: over 64 KiB, kept in part
    tail = _dlq_after_erasing_the_user(tmp_path, _line("t2", paste))
    assert "PASTED-SECRET" not in tail, "erased user dana, yet the dead letter of her pasted message still reads"


def test_the_dead_letter_of_a_line_that_is_not_utf8_is_shredded_with_its_user(tmp_path: Path) -> None:
    cp1252 = _line("t2", "PLACEHOLDER").replace(b"PLACEHOLDER", "caf\u00e9 LATIN-SECRET 4111".encode("cp1252"))
    tail = _dlq_after_erasing_the_user(tmp_path, cp1252)
    assert "LATIN-SECRET" not in tail, "erased user dana, yet the dead letter of her cp1252 line still reads"
