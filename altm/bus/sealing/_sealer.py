"""Sealing records: AES-GCM under the data key of the record's owner (user, agent, session).

A sealed value is ``MAGIC || kid || nonce || ciphertext``, with the kid and the record key as associated data
(a sealed value moved under another user's key does not open). Records that carry no content stay readable
so that an erasure holds for every replay even after its keys are gone: erase control events, erase
proposals and their changes. A value without the magic prefix (a log written before sealing, a host that
does not seal) opens as itself.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import replace
from typing import Any

import orjson
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from altm.bus._base import OutgoingRecord, Record
from altm.bus.sealing._keys import KeyStore, Owner

log = logging.getLogger("altm.sealing")

MAGIC = b"\x00altm-sealed:1\x00"
"""Prefix of a sealed value (JSON never starts with a NUL byte)."""
_KID = 32
_NONCE = 12

SHREDDED_HEADER = "altm-shredded"
"""Header of a record whose data key is destroyed: its value is empty, and stages skip it silently."""


SEALED_BY_HEADER = "altm-sealed-by"
"""Header :meth:`Sealer.open` adds to a record it opened: the id of the data key it was sealed with."""


class SealError(ValueError):
    """A sealed value that does not open with its key: damaged, or moved under another record key."""


def is_sealed(value: bytes) -> bool:
    return value.startswith(MAGIC)


def sealed_kid(value: bytes) -> str | None:
    """The id of the data key a sealed value names (None for a value in the clear or a damaged one)."""
    if not is_sealed(value):
        return None
    try:
        return value[len(MAGIC):len(MAGIC) + _KID].decode("ascii")
    except UnicodeDecodeError:
        return None


def is_shredded(record: Record) -> bool:
    return any(name == SHREDDED_HEADER for name, _ in record.headers)


def sealed_by(record: Record) -> str | None:
    """The data key an opened record was sealed with (:data:`SEALED_BY_HEADER`); None for one in the clear."""
    for name, value in record.headers:
        if name == SEALED_BY_HEADER:
            return value.decode("ascii", errors="replace")
    return None


def _scope_parts(obj: dict[str, Any]) -> tuple[str, str] | None:
    """(home, agent) of a record's scope: its ``scope`` object, or the fields of a flat transcript line (the
    ``ingest`` format, ``tenant_id`` … ``agent_id`` at the top), whose dead letter was sealed under no user's key
    and outlived an erasure of its session or user."""
    scope = obj.get("scope")
    if scope is None and "scope" not in obj and all(k in obj for k in ("tenant_id", "workspace_id", "user_id")):
        scope = obj
    if not isinstance(scope, dict):
        return None
    parts = [scope.get(k) for k in ("tenant_id", "workspace_id", "user_id")]
    if not all(isinstance(p, str) for p in parts):
        return None
    agent = scope.get("agent_id")
    return "/".join(str(p) for p in parts), agent if isinstance(agent, str) else ""


DERIVED = "~derived"
"""The session slot of the key that seals derived records carrying no single session (scenes, facets, graph
nodes, verdicts, dead letters of unreadable input). An erasure retires it: new records get a fresh key and
the retired one is destroyed after a grace period (:meth:`KeyStore.retire`)."""


def _session_of(obj: dict[str, Any]) -> str:
    """The session a record's content comes from: the turn's, the memory's (proposal or after-image), a recall
    cycle's (its record: an erasure of the session takes it)."""
    session = obj.get("session_id")
    if isinstance(session, str):
        return session
    cycle = obj.get("cycle")
    if isinstance(cycle, dict) and isinstance(cycle.get("session_id"), str):
        return str(cycle["session_id"])
    memory = obj.get("memory")
    if isinstance(memory, dict) and isinstance(memory.get("session_id"), str):
        return str(memory["session_id"])
    return ""


def _is_erasure(obj: dict[str, Any]) -> bool:
    """A record of an erasure, which carries ids, not content. A change of an erasure that carries an
    after-image (a message the erasure relinked, for fold to fold its session again) carries content: it is
    sealed as any other."""
    etype = obj.get("event_type")
    if etype == "change" and obj.get("memory") is not None:
        return False
    return (etype == "control" and obj.get("action") == "erase") or (
        etype in ("proposal", "change") and obj.get("op") in ("erase", "bury"))  # bury: its tombstones' hashes


def _is_users_decision(obj: dict[str, Any]) -> bool:
    """A rollback, a review or a pin (or unpin), requested or proposed: a decision about the user's governance
    record or the user's memories (whichever agent's scope the operator asked from; the review queue covers the
    whole user), carrying ids, a decision and a reason, no memory content. It is sealed under the user's own key, so an
    erasure of the asking agent or of a session does not make it unreadable while its effect on the other
    agents' memories stays (a replay applies it as the source did); an erasure of the user destroys it."""
    etype = obj.get("event_type")
    return (etype == "control" and obj.get("action") in ("rollback", "review_decision", *_CURATION)) or (
        etype == "proposal" and (obj.get("op") in ("rollback", "review") or _is_curation(obj)))


_CURATION = ("pin", "unpin")
"""A pin is a curation decision about the user's memories (an L4 facet is pinned with a user key, from whichever
agent's scope): like a review, it outlives an erasure of the agent whose scope carried it."""


def _is_curation(proposal: dict[str, Any]) -> bool:
    signal = proposal.get("signal")
    return proposal.get("op") == "signal" and isinstance(signal, dict) and signal.get("kind") in _CURATION


def owner_of(value: bytes | str, key: str | None) -> Owner | None:
    """Whose data key seals ``value`` (published under ``key``), or None when it stays readable (erasures)."""
    try:
        obj = orjson.loads(value)
    except orjson.JSONDecodeError:
        obj = None
    if not isinstance(obj, dict):
        return Owner(key or "", "", DERIVED)  # not an event at all
    if obj.get("event_type") == "dead_letter":  # the owner of what it keeps, when that can be read
        original = obj.get("original")
        inner = owner_of(original, key) if isinstance(original, str) else None
        return inner if inner is not None else Owner(key or "", "", DERIVED)
    if _is_erasure(obj):
        return None
    parts = _scope_parts(obj)
    if parts is None:
        return Owner(key or "", "", DERIVED)
    home, agent = parts
    if _is_users_decision(obj):
        return Owner(home)
    memory = obj.get("memory")
    if isinstance(memory, dict):
        inner_parts = _scope_parts(memory)
        if inner_parts is not None:
            home, agent = inner_parts
    if obj.get("event_type") == "proposal" and obj.get("op") in _IDS_ONLY:
        return Owner(home)
    session = _session_of(obj)
    if not session and obj.get("event_type") in ("proposal", "change"):
        session = DERIVED
    return Owner(home, agent, session)


_IDS_ONLY = ("signal", "forget", "merge")
"""Proposals that carry ids, counts and fixed reasons, never memory content: a use signal, a retention pass, an
exact-duplicate merge. They are sealed under the user's key, not the derived key every erasure of a session or
agent retires (a restore, a standby copy and a read replica, which open the log with current keys only, skipped
them after any erasure and lost the signals, compactions and forgets of every other session: a forgotten
message came back). What an erasure takes of them it takes in the shard, in the log's order."""


class Sealer:
    """Seals outgoing records and opens incoming ones with the key store's data keys."""

    def __init__(self, keys: KeyStore, *, seal: bool = True) -> None:
        self.keys = keys
        self.sealing = seal  # False: open what is sealed, publish in the clear (ALTM_SEAL_LOG=false)

    def seal_value(self, value: bytes, key: str | None) -> bytes:
        if not self.sealing or is_sealed(value):
            return value
        owner = owner_of(value, key)
        if owner is None:
            return value
        kid, data_key = self.keys.current(owner)
        nonce = secrets.token_bytes(_NONCE)
        kid_bytes = kid.encode("ascii")
        return MAGIC + kid_bytes + nonce + AESGCM(data_key).encrypt(nonce, value, _aad(kid_bytes, key))

    def open_value(self, value: bytes, key: str | None, *, retired: bool = True) -> bytes | None:
        """The plain value; None when its key is destroyed (or retired, with ``retired=False``). Raises
        :class:`SealError` when it does not open."""
        if not is_sealed(value):
            return value
        start = len(MAGIC)
        kid_bytes = value[start:start + _KID]
        nonce = value[start + _KID:start + _KID + _NONCE]
        try:
            kid = kid_bytes.decode("ascii")
        except UnicodeDecodeError:
            raise SealError("a sealed record with a malformed key id") from None
        data_key = self.keys.get(kid)
        # destroyed between the two questions (the grace ended) reads as retired: never opened without the flag
        if data_key is None or (not retired and (self.keys.retired(kid) or self.keys.destroyed(kid))):
            return None
        try:
            return AESGCM(data_key).decrypt(nonce, value[start + _KID + _NONCE:], _aad(kid_bytes, key))
        except InvalidTag:
            raise SealError("a sealed record does not open with its data key (damaged, or moved to another "
                            "record key)") from None

    def seal(self, record: OutgoingRecord) -> OutgoingRecord:
        sealed = self.seal_value(record.value, record.key)
        return record if sealed is record.value else replace(record, value=sealed)

    def open(self, record: Record, *, retired: bool = True) -> Record:
        """The record with its plain value (and the key it was sealed with: :data:`SEALED_BY_HEADER`); a shredded
        one with an empty value and :data:`SHREDDED_HEADER`; one that does not open stays sealed (the stage
        dead-letters it, without its content).

        ``retired=False`` treats a key an erasure retired as destroyed already: for a reader that is not the
        owning worker's live writer (a shard restored from the log, a read replica), which may meet a record
        sealed before the erasure only after it (a scene or facet that quotes erased content, whose evidence
        it never had)."""
        try:
            plain = self.open_value(record.value, record.key, retired=retired)
        except SealError as exc:
            log.warning("%s[%d]@%d: %s", record.topic, record.partition, record.offset, exc)
            return record
        if plain is None:
            return replace(record, value=b"", headers=(*record.headers, (SHREDDED_HEADER, b"1")))
        if plain is record.value:
            return record
        kid = record.value[len(MAGIC):len(MAGIC) + _KID]
        return replace(record, value=plain, headers=(*record.headers, (SEALED_BY_HEADER, kid)))


def _aad(kid: bytes, key: str | None) -> bytes:
    return kid + b"\x1f" + (key or "").encode("utf-8", errors="surrogatepass")
