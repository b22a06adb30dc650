"""Conversation order: how a session's L0 messages follow one another.

By time, then by turn id in its natural order ("s1-2" before "s1-10": runs of digits compare as numbers), then
the user's message before the reply of the same turn, then by memory id. Hosts that know only when a session
happened send every message of it with one time; the turn ids compared as text put message 10 after message 1,
and each reply was indexed with the wrong question. The order is a function of the messages alone (their times,
ids and roles), never of their arrival, so every runtime and replay agrees.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import orjson

from altm.core import natural_key

Direction = Literal["previous", "next"]

_ROLE_ORDER = {"user": "0", "assistant": "1"}
"""Of one turn's messages at one time, the user's comes first (a reply has its question's turn id)."""


def turn_of(row: Mapping[str, Any] | sqlite3.Row) -> str | None:
    """A message row's turn id: a ``turn`` column, its attributes' ``turn_id`` (capture keeps it there), else its
    ``source_id`` (the host's own message id, which defaults to it, is no order of turns)."""
    keys = row.keys()
    if "turn" in keys:
        return None if row["turn"] is None else str(row["turn"])
    if "attributes" in keys and row["attributes"]:
        turn = orjson.loads(row["attributes"]).get("turn_id")
        if isinstance(turn, str):
            return turn
    return None if row["source_id"] is None else str(row["source_id"])


def turn_key(turn: str | None, role: str | None) -> str:
    """A message's place among the messages of its time, as one text (``memories.turn_key``, indexed): its turn id
    in natural order, then its role's rank. The turn id's NULs are written as NUL and 0x01 and it ends with two
    NULs, so the text compares as the pair does whatever the turn id holds (a turn id may hold a NUL)."""
    return f"{natural_key(turn).replace(chr(0), chr(0) + chr(1))}\x00\x00{_ROLE_ORDER.get(str(role), '2')}"


def turn_key_of(attributes: str | None, source_id: str | None, role: str | None) -> str:
    """:func:`turn_key` of a ``memories`` row's columns (the shard's ``turn_key_of`` SQL function)."""
    return turn_key(turn_of({"attributes": attributes, "source_id": source_id}), role)


def row_turn_key(row: Mapping[str, Any] | sqlite3.Row) -> str:
    """A row's stored ``turn_key``, or (a row not read from the table) the one it is stored with."""
    keys = row.keys()  # a sqlite3.Row's ``in`` looks at its values
    if "turn_key" in keys and row["turn_key"] is not None:
        return str(row["turn_key"])
    return turn_key(turn_of(row), row["role"])


def conversation_key(row: Mapping[str, Any] | sqlite3.Row) -> tuple[str, str, str]:
    """A message's place in its session's conversation order (see the module's docstring)."""
    return str(row["valid_from"] or ""), row_turn_key(row), str(row["memory_id"])


def in_conversation_order(rows: Sequence[sqlite3.Row]) -> list[sqlite3.Row]:
    """``rows`` of one session's messages, in conversation order."""
    return sorted(rows, key=conversation_key)


def neighbours(db: sqlite3.Connection, where: str, args: Sequence[Any], anchor: Mapping[str, Any] | sqlite3.Row,
               direction: Direction, limit: int) -> list[sqlite3.Row]:
    """Up to ``limit`` messages just before (``previous``, nearest first) or after ``anchor`` in conversation
    order, among the ``memories`` rows ``where`` (bound to ``args``) selects: one session's messages (``where``
    names its tenant, workspace, user, agent, session and layer, so the ``memories_conversation`` index reads
    them in order). Messages without a time come first."""
    if limit <= 0:
        return []
    before = direction == "previous"
    at, key, mid = anchor["valid_from"], row_turn_key(anchor), str(anchor["memory_id"])
    op, way = ("<", "DESC") if before else (">", "ASC")
    order = f"ORDER BY valid_from {way}, turn_key {way}, memory_id {way} LIMIT ?"
    select = f"SELECT * FROM memories WHERE {where} AND "
    if at is not None:
        out = db.execute(f"{select}(valid_from, turn_key, memory_id) {op} (?, ?, ?) {order}",
                         [*args, at, key, mid, limit]).fetchall()
        if before and len(out) < limit:
            out += db.execute(f"{select}valid_from IS NULL {order}", [*args, limit - len(out)]).fetchall()
        return out
    out = db.execute(f"{select}valid_from IS NULL AND (turn_key, memory_id) {op} (?, ?) {order}",
                     [*args, key, mid, limit]).fetchall()
    if not before and len(out) < limit:
        out += db.execute(f"{select}valid_from IS NOT NULL {order}", [*args, limit - len(out)]).fetchall()
    return out
