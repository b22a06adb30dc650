"""Finding: ``ALTM_KEYSTORE`` naming another data dir's key store (an existing file: a shared environment, a path
copied from a sibling deployment) is accepted on an existing, sealed data dir; an erasure then shreds keys in
that other store only, and the erased session's records stay readable with the data dir's own ``keys.db``:
``altm log tail turns`` prints the erased text.

c8b07e2 refuses only a key store that does not exist yet: ``open_keystore`` calls
``_refuse_new_keystore_for_sealed_log`` under ``if not path.exists()`` (altm/wiring/_adapters.py:155-156), so a
key store file that exists but never sealed one of the log's records passes unchecked. ``SqliteKeyStore`` opens
it, the writer's erasure shreds the session's key in it (a key it never had: nothing destroyed) and reports the
erasure done; the data dir's own key store still holds the session's data key.

Reproduction: data dir A stores "My passport number is X1234567." (its own key store); data dir B is made with
its own key store; open A with ``keystore=sqlite:///B/keys.db`` and erase the session; ``altm log tail turns
--data-dir A``.

Expected: a data dir whose log holds sealed records is not opened with a key store that holds none of their keys:
refused with a message naming the key store (the check reads the key ids of the log's sealed records, not only
whether the file exists). Failing that, the erasure must not leave the session's records readable with A's own
key store.
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


async def _erase_with_another_data_dirs_keystore(data_dir: Path, other: Path) -> str | None:
    """Returns the refusal's message, or None when the other key store was accepted (and the session erased)."""
    async with store_with(Settings(data_dir=data_dir, embedder="none"),
                          [make_turn(1, f"My passport number is {SECRET}.")]) as (_, app_):
        assert app_.list_memories(SCOPE)
    async with store_with(Settings(data_dir=other, embedder="none"), [make_turn(1, "We use PostgreSQL 15.")]):
        pass
    assert (other / "keys.db").exists()
    try:
        async with embedded(Settings(data_dir=data_dir, embedder="none",
                                     keystore=f"sqlite:///{other / 'keys.db'}")) as dep:
            assert dep.runtime is not None
            await dep.app.erase(SCOPE, "session", session_id="s1")
            await dep.runtime.run_until_idle()
            assert not dep.app.list_memories(SCOPE), "the erasure did not reach the shards"
    except REFUSALS as exc:
        return str(exc)
    return None


def test_an_erasure_under_another_data_dirs_keystore_leaves_nothing_readable(tmp_path: Path) -> None:
    data_dir, other = tmp_path / "data", tmp_path / "other"
    refusal = asyncio.run(_erase_with_another_data_dirs_keystore(data_dir, other))
    if refusal is not None:
        text = refusal.lower()
        assert "keystore" in text or "key store" in text, f"refused without naming the key store: {refusal}"
        return
    tail = CliRunner().invoke(app, ["log", "tail", "turns", "--data-dir", str(data_dir)],
                              env={"ALTM_EMBEDDER": "none"})
    assert SECRET not in tail.output, (
        "a session erased while ALTM_KEYSTORE named another data dir's (existing) key store: its turn still opens "
        f"with the data dir's own keys.db, and `altm log tail turns` prints it: {tail.output[-300:]!r}")
