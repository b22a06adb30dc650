"""From the review of the session folded again after an erasure of one message (76c2bcf): a refused refold,
a large refused capsule, an erased capsule met again, and a capsule gone stale after a chit-chat message was
erased."""

from __future__ import annotations

from pathlib import Path

from altm.core import Role, Settings
from altm.wiring import replay_into, state_hash
from tests.support.memories import store_with
from tests.support.rows import rows
from tests.support.turns import SCOPE, make_turn


def _settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"embedder": "none", "retired_key_grace_s": 0.0})


def _l0(data_dir: Path, like: str) -> str:
    (found,) = rows(data_dir, "SELECT memory_id FROM memories WHERE layer='L0' AND content LIKE ?", (like,))
    return str(found["memory_id"])


async def test_a_refused_refold_replays_to_the_same_state(settings: Settings, tmp_path: Path) -> None:
    """The refold's capsule proposal takes the erasure's change as its cause (and the erasure's timestamp).
    When the guard refuses it, the rejection's payload (a hashed column) names that cause; the replay folds
    the same capsule from the turn's change and records another payload: the state hashes differ."""
    s = _settings(settings)
    said = [make_turn(1, "We decided that ZEBRA-4471 goes into the Vault service.", session="s-z", role=Role.ASSISTANT),
            make_turn(2, "I prefer that ZEBRA-4471 is rotated monthly.", session="s-z"),
            make_turn(3, "We decided that ZEBRA-4471 stays in the blue binder.", session="s-z", role=Role.ASSISTANT)]
    async with store_with(s, said) as (rt, app):
        await app.erase(SCOPE, "memory", memory_id=_l0(s.data_dir, "%rotated monthly%"))
        await rt.run_until_idle()
    assert rows(s.data_dir, "SELECT 1 FROM rejections")  # the refolded capsule, refused
    target = tmp_path / "replayed"
    await replay_into(s.data_dir, target, settings=s)
    assert state_hash(s.data_dir) == state_hash(target)


async def test_a_session_erasure_scrubs_a_large_refused_capsule(settings: Settings) -> None:
    """A proposal over 64 KiB is kept as a summary (no ``memory`` key, its first 4 KiB in ``head``): the
    ``$.memory.evidence`` scan never finds it, and ``memory_id`` is the capsule's, never stored. The erased
    session's text stays in the rejections table."""
    s = _settings(settings)
    filler = " ".join(f"word{i}" for i in range(3500))
    said = [make_turn(1, f"We decided that ZEBRA-4471 goes into the vault with {filler}", session="s-big",
                      role=Role.ASSISTANT),
            make_turn(2, "I prefer that ZEBRA-4471 is rotated monthly.", session="s-big"),
            make_turn(3, f"We decided that ZEBRA-4471 stays in the binder with {filler}", session="s-big",
                      role=Role.ASSISTANT)]
    async with store_with(s, said) as (rt, app):
        await app.erase(SCOPE, "memory", memory_id=_l0(s.data_dir, "%rotated monthly%"))
        await rt.run_until_idle()
        refused = rows(s.data_dir, "SELECT payload FROM rejections")
        assert refused and all('"truncated":true' in r["payload"] for r in refused)
        await app.erase(SCOPE, "session", session_id="s-big")
        await rt.run_until_idle()
        after = rows(s.data_dir, "SELECT payload FROM rejections")
    assert not any("ZEBRA-4471" in str(r["payload"]) for r in after)


async def test_erasing_a_capsule_by_id_replays_without_keeping_its_text(settings: Settings, tmp_path: Path) -> None:
    """``erased_itself`` is for L0 only: a derived memory met again with its own id and content (the replay
    folds the erased capsule again) is refused by the guard, and the rejection keeps the erased capsule's
    whole text; the source has no such row, so the state hashes differ too."""
    s = _settings(settings)
    said = [make_turn(1, "Hello, how are you today?"),
            make_turn(2, "We decided to move the billing service to Postgres."),
            make_turn(3, "The deadline for the migration is March 3 and the budget is 4000 EUR.")]
    async with store_with(s, said) as (rt, app):
        (capsule,) = rows(s.data_dir, "SELECT memory_id FROM memories WHERE layer='L1'")
        await app.erase(SCOPE, "memory", memory_id=str(capsule["memory_id"]))
        await rt.run_until_idle()
    target = tmp_path / "replayed"
    await replay_into(s.data_dir, target, settings=s)
    assert rows(target, "SELECT 1 FROM rejections WHERE payload LIKE '%\"kind\":\"capsule\"%'") == []
    assert state_hash(s.data_dir) == state_hash(target)


async def test_a_capsule_folded_after_a_chit_chat_erasure_counts_the_new_message(settings: Settings) -> None:
    """Erasing a message that gave the capsule nothing, then a new such message: the fold proposes exactly the
    capsule the session had before the erasure (same payload, same proposal id). The refold stored a capsule
    under that id again, and the audit log still names the old proposal, so ``upsert_applied`` says "applied
    before": the stage drops it and the capsule stays at "(1 messages" with two messages stored. (Were it
    judged, the erased capsule's tombstone, the same text, would refuse it.)"""
    s = _settings(settings)
    said = [make_turn(1, "We decided to move the billing service to Postgres."),
            make_turn(2, "Haha, that is a great picture of my dog Rex.", role=Role.ASSISTANT)]
    async with store_with(s, said) as (rt, app):
        await app.erase(SCOPE, "memory", memory_id=_l0(s.data_dir, "%dog Rex%"))
        await rt.run_until_idle()
        await rt.publish([make_turn(3, "Haha, lovely photo of the cat Tom.", role=Role.ASSISTANT)])
        await rt.run_until_idle()
        assert len(rows(s.data_dir, "SELECT 1 FROM memories WHERE layer='L0'")) == 2
        (capsule,) = rows(s.data_dir, "SELECT content FROM memories WHERE layer='L1'")
    assert "(2 messages" in str(capsule["content"])


async def test_a_message_an_erasure_relinked_is_sealed_on_the_log(settings: Settings) -> None:
    """Found by a randomized replay check: the erasure's change naming the message its session is folded from
    again carries that message's after-image, and an erasure's records stay readable (they carry ids), so the
    message's text lay in the clear on the log, beyond the reach of a later erasure of its session."""
    from tests.support.rows import rows_of

    s = _settings(settings)
    secret = "ZEBRAQAAC"
    said = [make_turn(1, "Marco Bellini met Priya Raman in Dublin to review the billing service.", session="s3"),
            make_turn(2, f"The ledger API runs in Dublin on Redis 11.8, ticket {secret}.", session="s3")]
    async with store_with(s, said) as (rt, app):
        await app.erase(SCOPE, "memory", memory_id=_l0(s.data_dir, "Marco%"))
        await rt.run_until_idle()
        clear = rows_of(s.data_dir / "log.db", "SELECT 1 FROM records WHERE instr(value, ?) > 0", (secret.encode(),))
        assert clear == []
        await app.erase(SCOPE, "session", session_id="s3")
        await rt.run_until_idle()
    assert [str(p) for p in s.data_dir.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()] == []

