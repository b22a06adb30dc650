"""Finding: an ``ALTM_KEYSTORE`` that names another file than the data dir's key store (a typo, a path relative
to another working directory, a half-done move) is accepted silently on an existing, sealed data dir: a fresh,
empty key store is created there, and an erasure then shreds keys in *that* store only. The log's records of the
erased session stay readable with the data dir's own ``keys.db``: ``altm log tail turns`` prints the erased text.

``resolve`` (altm/wiring/_adapters.py:112-115) takes any ``sqlite:///`` key store URL, and ``open_keystore``
(altm/wiring/_adapters.py:134-141) creates the file when it is missing while sealing is on; nothing compares the
store with the log it is meant to open (README "Crypto-shredding": the data keys of the log "live in a key store";
"a record whose key the key store never had (sealed with another key store) stops the stage with an error naming
ALTM_KEYSTORE" — but that check runs only when a stage reads such a record again, and a running deployment has
already consumed them). The writer's erasure (``Writer._shred``, altm/pipeline/writer/_apply.py:300-311) calls
``shred`` on the configured store, which holds no key of the session, and reports the erasure done; the session's
data key in DATA_DIR/keys.db is never destroyed.

Reproduction: store "My passport number is X1234567." in an embedded data dir (default key store); open the same
data dir with ``keystore=sqlite:///<elsewhere>/keys.db``; erase the session (the shards no longer list it); run
``altm log tail turns --data-dir DIR`` with the default settings.

Expected: a data dir whose log holds sealed records is not opened with a key store that holds none of their keys
(a store created just now): the deployment refuses with a message naming ALTM_KEYSTORE / the key store, and
nothing is created. Failing that, an erasure must not leave the erased session's records readable with the data
dir's own key store.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from typer.testing import CliRunner

from altm.bus.sealing import KeyStoreError
from altm.core import Settings
from altm.interfaces.cli import app
from altm.pipeline import LogBindingError
from altm.wiring import WiringError
from tests.support.memories import embedded, store_with
from tests.support.turns import SCOPE, make_turn

SECRET = "X1234567"
REFUSALS = (WiringError, KeyStoreError, LogBindingError)


async def _store_then_erase_with_another_keystore(data_dir: Path, other: Path) -> str | None:
    """Returns the refusal's message, or None when the other key store was accepted (and the session erased)."""
    async with store_with(Settings(data_dir=data_dir, embedder="none"),
                          [make_turn(1, f"My passport number is {SECRET}.")]) as (_, app_):
        assert app_.list_memories(SCOPE)
    try:
        async with embedded(Settings(data_dir=data_dir, embedder="none", keystore=f"sqlite:///{other}")) as dep:
            assert dep.runtime is not None
            await dep.app.erase(SCOPE, "session", session_id="s1")
            await dep.runtime.run_until_idle()
            assert not dep.app.list_memories(SCOPE), "the erasure did not reach the shards"
    except REFUSALS as exc:
        return str(exc)
    return None


def test_an_erasure_under_another_keystore_leaves_nothing_readable(tmp_path: Path) -> None:
    data_dir, other = tmp_path / "data", tmp_path / "elsewhere" / "keys.db"
    other.parent.mkdir()
    refusal = asyncio.run(_store_then_erase_with_another_keystore(data_dir, other))
    if refusal is not None:
        text = refusal.lower()
        assert "keystore" in text or "key store" in text, f"refused without naming the key store: {refusal}"
        assert not other.exists(), "the refused key store was created anyway"
        return
    tail = CliRunner().invoke(app, ["log", "tail", "turns", "--data-dir", str(data_dir)],
                              env={"ALTM_EMBEDDER": "none"})
    assert SECRET not in tail.output, (
        "a session erased while ALTM_KEYSTORE named another (new, empty) key store: its turn still opens with the "
        f"data dir's own keys.db, and `altm log tail turns` prints it: {tail.output[-300:]!r}")
