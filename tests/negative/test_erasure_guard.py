"""A guard that does not eat the conversation (issue 14: F5), and tombstones that keep no erased text.

After one erased session, ordinary messages ("Sounds good to me.") were refused at L0 for the whole user
forever: containment with a 12-character minimum blocked every substring of anything erased."""

from __future__ import annotations

import re

from altm.core import Role, normalise_text, partition_for, sha256_hex
from altm.core.settings import Settings
from altm.store import Shard, shard_path
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn

SECRET = "The ZEBRA-4471 vault code for the billing migration is stored in the blue binder."
ERASED = [make_turn(1, SECRET, session="s-secret"),
          make_turn(2, "Sounds good to me.", session="s-secret", role=Role.ASSISTANT),
          make_turn(3, "Thank you so much for the help!", session="s-secret")]


async def test_ordinary_messages_are_kept_after_an_erasure_and_erased_ones_stay_out(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, ERASED) as (rt, app):
        await app.erase(SCOPE, "session", session_id="s-secret")
        await rt.run_until_idle()
        later = [make_turn(1, "Sounds good to me.", session="s-later", role=Role.ASSISTANT),
                 make_turn(2, "Thank you so much for the help!", session="s-later"),
                 make_turn(3, "The vault code for the billing migration is not in the binder any more.",
                           session="s-later"),
                 make_turn(4, SECRET, session="s-resent"),  # an exact re-send of the distinctive erased text
                 ERASED[0]]  # the erased message itself, as a replay would bring it back
        await rt.publish(later)
        await rt.run_until_idle()
    stored = {r["content"] for r in rows(s.data_dir, "SELECT content FROM memories WHERE layer='L0'")}
    assert {"Sounds good to me.", "Thank you so much for the help!",
            "The vault code for the billing migration is not in the binder any more."} <= stored
    assert SECRET not in stored
    refused = rows(s.data_dir, "SELECT reason, payload FROM rejections WHERE reason LIKE '%matches erased content%'")
    assert len(refused) == 1  # the re-send, nothing else
    # the erased message itself is void (a rejection kept its text for review): only the re-send's is kept
    assert [ERASED[0].turn_id not in str(r["payload"]) for r in refused] == [True]


async def test_a_tombstone_keeps_no_erased_text(settings: Settings) -> None:
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, ERASED) as (rt, app):
        await app.erase(SCOPE, "session", session_id="s-secret")
        await rt.run_until_idle()
    tombs = rows(s.data_dir, "SELECT * FROM tombstones")
    assert len(tombs) >= 3
    plain = {sha256_hex(normalise_text(SECRET)), sha256_hex(" ".join(re.findall(r"[a-z0-9][a-z0-9_\-]*",
                                                                                 normalise_text(SECRET))))}
    for t in tombs:
        assert "ZEBRA" not in str(t) and "zebra" not in str(t) and "binder" not in str(t)
        assert t["memory_id"] and t["shingle_hashes"] and t["normalised_text"] == ""
        assert t["value_hash"] not in plain  # keyed: a dictionary of guesses does not find the text


async def test_a_derived_memory_restating_erased_content_is_refused(settings: Settings) -> None:
    """Derived layers are still guarded by overlap (keyed shingle hashes), against tombstones written before they
    were hashed too: the writer hashes those (and blanks their text) when it starts."""
    s = settings.model_copy(update={"embedder": "none"})
    async with store_with(s, [make_turn(9, "Unrelated warm-up message.", session="s0")]):
        pass
    partition = partition_for(SCOPE.home, s.partitions)
    shard = Shard(shard_path(s.data_dir, partition), partition).open()
    with shard.transaction() as tx:  # a tombstone as version 5 wrote it
        tx._db.execute(
            "INSERT INTO tombstones (tombstone_id, tenant_id, workspace_id, user_id, agent_id, value_hash, "
            "normalised_text, reason, at) VALUES ('tomb_legacy', ?, ?, ?, ?, 'x', ?, 'session erased: test', "
            "'2026-01-01T00:00:00+00:00')",
            (SCOPE.tenant_id, SCOPE.workspace_id, SCOPE.user_id, SCOPE.agent_id,
             "the deadline for the zebra billing migration to the new cluster is march 3"))
    shard.close()
    # not an exact re-send (that would be refused at L0 too): a new message that quotes the erased one
    restated = "Reminder: the deadline for the ZEBRA billing migration to the new cluster is March 3."
    async with store_with(s, [make_turn(1, restated, session="s1")]):
        pass
    l2 = rows(s.data_dir, "SELECT content FROM memories WHERE layer IN ('L1','L2') AND content LIKE '%ZEBRA%'")
    assert l2 == []  # the raw message is kept (L0), nothing derived re-states it
    assert rows(s.data_dir, "SELECT 1 FROM memories WHERE layer='L0' AND content LIKE '%ZEBRA%'")
    assert len(rows(s.data_dir, "SELECT 1 FROM rejections WHERE reason LIKE '%tomb_legacy%'")) >= 1
    (legacy,) = rows(s.data_dir, "SELECT normalised_text, shingle_hashes, value_hash FROM tombstones "
                                 "WHERE tombstone_id='tomb_legacy'")
    assert legacy["normalised_text"] == "" and legacy["shingle_hashes"] and legacy["value_hash"] != "x"
