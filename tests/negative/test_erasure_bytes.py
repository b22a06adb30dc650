"""Erasure that reaches every byte (issue 14, F4): after `erase`, no file of the data dir holds the erased text
(published outbox rows are deleted, freed pages are zeroed, the word indexes are merged and the write-ahead
log truncated; the log itself only ever holds ciphertext, see test_crypto_shredding), before and after a
replay."""

from __future__ import annotations

from pathlib import Path

from altm.core import Role
from altm.core.settings import Settings
from altm.wiring import replay_into
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

SECRET = b"ZEBRA-4471-SECRET"
TURNS = [make_turn(1, "My vault code is ZEBRA-4471-SECRET, keep it.", session="s-secret"),
         make_turn(2, "Noted, ZEBRA-4471-SECRET is stored.", session="s-secret", role=Role.ASSISTANT),
         make_turn(3, "Tool output: ZEBRA-4471-SECRET verified.", session="s-secret", role=Role.TOOL),
         make_turn(4, "Never paste ZEBRA-4471-SECRET into chat, it is a bad idea.", session="s-secret"),
         make_turn(5, "I prefer that ZEBRA-4471-SECRET is rotated monthly.", session="s-secret"),
         make_turn(6, "Unrelated: the billing deadline is March 3.", session="s1")]


def occurrences(data_dir: Path) -> dict[str, int]:
    """Files of the data dir (the log, the key store, the shards, the vector index...) that hold the secret."""
    found = {}
    for path in sorted(p for p in data_dir.rglob("*") if p.is_file()):
        n = path.read_bytes().count(SECRET)
        if n:
            found[str(path.relative_to(data_dir))] = n
    return found


async def test_no_derived_file_holds_erased_text_before_or_after_a_replay(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "local"})
    conflicting = make_turn(1, "My vault code is ZEBRA-4471-SECRET, and the spare one too.", session="s-secret")
    async with store_with(s, TURNS) as (rt, app):
        await rt.publish([conflicting])  # refused (L0 is append-only): its payload is kept for review
        await rt.run_until_idle()
        await app.prepare_turn(SCOPE, "s9", "t1", "what is the vault code?", 800)
        assert occurrences(s.data_dir)  # the probe sees it while it is stored
        await app.erase(SCOPE, "session", session_id="s-secret")
        await rt.run_until_idle()
    assert occurrences(s.data_dir) == {}
    target = tmp_path / "replayed"
    await replay_into(s.data_dir, target, settings=s)
    assert occurrences(target) == {}
