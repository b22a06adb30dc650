"""Finding (red team 19, operability): ``altm keys create`` over an ``api_keys.json`` that does not parse (the
README tells operators to revoke a key by deleting its entry from that file by hand; a trailing comma is the usual
slip) silently replaces the file with the new key alone: every other key is gone, and the command exits 0. The
same unparseable file leaves the key the operator meant to revoke working in a running server, without a word.

Root cause: ``KeyStore._fresh`` (altm/interfaces/access/_keys.py:47-60) swallows ``JSONDecodeError``/
``ValueError`` and returns the keys it had (``[]`` in a fresh process, the old list in a running server), and
``KeyStore.create`` (:67-75) appends to that and rewrites the whole file (not atomically: ``write_bytes``).

Expected: ``keys create`` refuses a key file it cannot read (exit != 0, one line, the file untouched) or keeps
every key in it; a server given a key file it cannot read does not keep accepting a key that is no longer in it.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from altm.interfaces.access._keys import KeyStore
from altm.interfaces.cli import app

runner = CliRunner()


def _create(data_dir: Path, name: str) -> str:
    result = runner.invoke(app, ["keys", "create", "--name", name, "--scope-prefix", "acme",
                                 "--data-dir", str(data_dir)])
    assert result.exit_code == 0, result.output
    return result.output.strip().splitlines()[-1]


def _hand_edited_without_first(path: Path) -> str:
    """The file with its first entry deleted by hand, leaving a trailing comma (invalid JSON)."""
    entries = json.loads(path.read_text())
    body = ",\n".join(json.dumps(e, indent=2) for e in entries[1:])
    return "[\n" + body + ",\n]\n"


def test_keys_create_does_not_wipe_a_key_file_it_cannot_parse(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    _create(data_dir, "a")
    kept = _create(data_dir, "b")
    path = data_dir / "api_keys.json"
    edited = _hand_edited_without_first(path)
    path.write_text(edited)

    result = runner.invoke(app, ["keys", "create", "--name", "c", "--scope-prefix", "acme",
                                 "--data-dir", str(data_dir)])

    if result.exit_code != 0:  # refused: the operator's file must be as they left it
        assert path.read_text() == edited
        return
    assert KeyStore.digest(kept) in path.read_text(), (
        f"key 'b' was silently dropped from {path}: {path.read_text()}")


def test_a_key_removed_from_an_unparseable_key_file_stops_working(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    revoked = _create(data_dir, "a")
    _create(data_dir, "b")
    path = data_dir / "api_keys.json"
    server = KeyStore(path)  # what a running `altm serve` holds
    assert server.lookup(revoked) is not None

    path.write_text(_hand_edited_without_first(path))  # the operator revokes "a" (and leaves a trailing comma)

    assert server.lookup(revoked) is None, "the revoked key still authenticates while the key file does not parse"
