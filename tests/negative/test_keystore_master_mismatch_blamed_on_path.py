"""A key store wrapped by another master key than the one given (an interrupted ``altm sealing rotate-master``,
or ``ALTM_MASTER_KEY`` not yet changed after a rotation) is refused as "another deployment's key store": the
message tells the operator that ALTM_KEYSTORE names the wrong file, and the key store's own diagnosis (which
master key wraps it, and that the new one waits in ``keys.db.master.new``) is thrown away.

Finding: ``_refuse_foreign_keystore`` (altm/wiring/_adapters.py:185-200, third round 7e830b6) asks ``_knows``
(altm/wiring/_adapters.py:203-208) for each key id of the log's latest records; ``_knows`` calls
``store.get(kid)``, which unwraps the key and raises ``KeyStoreError`` when the key is wrapped by another master
key (``SqliteKeyStore._unwrap``, altm/bus/sealing/_keys.py:431-436: "data key … is wrapped by master key X, not
by the one given (Y): set ALTM_MASTER_KEY (or restore keys.db.master) … a rotation interrupted after rewrapping
left the new one in keys.db.master.new"). ``_knows`` catches every ``KeyStoreError`` as "not in the key store"
and the open fails with "the key store … holds none of the keys the log … was sealed with: ALTM_KEYSTORE names
another deployment's key store". The store is the right one and holds every key: only the master key differs.
The message even names the refused file as "the data dir's own key store". (Before 7e830b6 the open went
through and the first seal or unseal raised the accurate error.) An operator following the message points
ALTM_KEYSTORE elsewhere (or restores another key store) instead of finishing the rotation.

Reproduction: an embedded data dir with a sealed log; rewrap its key store with a new master key without
replacing the master key file (what ``rotate-master`` leaves when interrupted: the new key in
``keys.db.master.new``); open the deployment.

Expected: the open is refused with the key store's own reason: the message names the master key (e.g. "wrapped
by master key …", ALTM_MASTER_KEY / keys.db.master.new), not "another deployment's key store" (``_knows`` should
not swallow the unwrap error: e.g. compare ``SqliteKeyStore.master_ids()`` with the given master key first and
refuse with the store's message, then ask for the key ids' rows without unwrapping).
"""

from __future__ import annotations

import asyncio
import base64
import secrets
from pathlib import Path

from altm.bus.sealing import SqliteKeyStore
from altm.core import Settings
from altm.wiring import WiringError
from tests.support.memories import embedded, store_with
from tests.support.turns import make_turn


async def _open_message(settings: Settings) -> str | None:
    try:
        async with embedded(settings):
            return None
    except WiringError as exc:
        return str(exc)


async def _sealed_data_dir(settings: Settings) -> None:
    async with store_with(settings, [make_turn(1, "We deploy the billing service on Fridays.")]):
        pass


def test_a_master_key_mismatch_is_not_blamed_on_the_key_store_path(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", embedder="none")
    asyncio.run(_sealed_data_dir(settings))
    store = SqliteKeyStore(tmp_path / "data" / "keys.db")
    new = secrets.token_bytes(32)
    pending = store.master_path.with_name(store.master_path.name + ".new")
    pending.write_text(base64.urlsafe_b64encode(new).decode() + "\n", encoding="ascii")
    try:
        assert store.rewrap(new) > 0  # interrupted here: the master key file still holds the old key
    finally:
        store.close()
    message = asyncio.run(_open_message(settings))
    assert message is not None, "a key store wrapped by another master key was opened"
    assert "another deployment" not in message, f"the master key mismatch is blamed on ALTM_KEYSTORE: {message}"
    assert "master key" in message, f"the refusal does not name the master key: {message}"
