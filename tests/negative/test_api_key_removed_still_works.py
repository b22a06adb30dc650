"""An API key removed from ``api_keys.json`` keeps working in a running ``altm serve`` (HTTP, MCP and the
memory browser) until it is restarted, and nothing says so.

Finding: ``altm.interfaces.access.KeyStore`` reads ``api_keys.json`` once, in its constructor, and ``lookup``
and ``by_digest`` answer from that list for the life of the process. There is no ``altm keys`` command to
revoke a key, so an operator who learns that a key leaked deletes its entry from the file — and the server
goes on accepting the key. The browser's logins even say they end "if ... its key is still in the key store"
(``Logins.find``), but that is the same in-memory list. README ("Keys are sent as ...", "The memory browser")
documents neither the lack of revocation nor the restart it takes.

Expected: a key removed from the key file stops authenticating in a running process (the store notices the
file changed, e.g. by its mtime, before answering), and an existing browser login of that key ends with it."""

from __future__ import annotations

from pathlib import Path

import orjson

from altm.interfaces.access import KeyStore
from altm.interfaces.browser._sessions import Logins


def _revoke(path: Path, name: str) -> None:
    """What an operator does, there being no ``altm keys`` command for it: drop the entry from the file."""
    entries = [e for e in orjson.loads(path.read_bytes()) if e["name"] != name]
    path.write_bytes(orjson.dumps(entries, option=orjson.OPT_INDENT_2))


def test_a_key_removed_from_the_key_file_stops_working_in_the_running_server(tmp_path: Path) -> None:
    path = tmp_path / "api_keys.json"
    served = KeyStore(path)  # what ``altm serve`` holds
    leaked = served.create("leaked", "acme/platform/dana")
    kept = served.create("kept", "acme/platform/sam")
    logins = Logins(served)
    opened = logins.open(leaked)
    assert opened is not None and served.lookup(leaked) is not None
    token, _ = opened

    _revoke(path, "leaked")
    assert KeyStore(path).lookup(leaked) is None  # a new process sees the revocation,
    assert served.lookup(kept) is not None
    assert served.lookup(leaked) is None, "the running server still accepts the removed key"
    assert logins.find(token) is None, "the removed key's browser login is still live"
