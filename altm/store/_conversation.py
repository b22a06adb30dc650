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


TURN_SQL = "coalesce(json_extract({m}.attributes, '$.turn_id'), {m}.source_id)"
"""A message row's turn id in SQL (``{m}``: the table's alias): capture keeps it in the attributes; the host's own
message id (``source_id``, which defaults to it) is no order of turns."""


def turn_of(row: Mapping[str, Any] | sqlite3.Row) -> str | None:
    """A message row's turn id: a ``turn`` column (``TURN_SQL``), its attributes' ``turn_id``, else its
    ``source_id``."""
    keys = row.keys()
    if "turn" in keys:
        return None if row["turn"] is None else str(row["turn"])
    if "attributes" in keys and row["attributes"]:
        turn = orjson.loads(row["attributes"]).get("turn_id")
        if isinstance(turn, str):
            return turn
    return None if row["source_id"] is None else str(row["source_id"])


def conversation_key(row: Mapping[str, Any] | sqlite3.Row) -> tuple[str, str, str, str]:
    """A message's place in its session's conversation order (see the module's docstring)."""
    return (str(row["valid_from"] or ""), natural_key(turn_of(row)), _ROLE_ORDER.get(str(row["role"]), "2"),
            str(row["memory_id"]))


def in_conversation_order(rows: Sequence[sqlite3.Row]) -> list[sqlite3.Row]:
    """``rows`` of one session's messages, in conversation order."""
    return sorted(rows, key=conversation_key)


def neighbours(db: sqlite3.Connection, where: str, args: Sequence[Any], anchor: Mapping[str, Any] | sqlite3.Row,
               direction: Direction, limit: int) -> list[sqlite3.Row]:
    """Up to ``limit`` messages just before (``previous``, nearest first) or after ``anchor`` in conversation
    order, among the ``memories`` rows ``where`` (bound to ``args``) selects: one session's messages. Read by
    time through the session's index: the messages of the anchor's time, then those of the times beyond it, each
    time's messages whole (they are put in order here)."""
    if limit <= 0:
        return []
    before = direction == "previous"
    mine = conversation_key(anchor)
    tied = [r for r in db.execute(f"SELECT * FROM memories WHERE {where} AND valid_from IS ?",
                                  [*args, anchor["valid_from"]])
            if (conversation_key(r) < mine if before else conversation_key(r) > mine)]
    out = sorted(tied, key=conversation_key, reverse=before)[:limit]
    if len(out) < limit and anchor["valid_from"] is not None:
        op, order = ("<", "DESC") if before else (">", "ASC")
        rows = db.execute(f"SELECT * FROM memories WHERE {where} AND valid_from {op} ? ORDER BY valid_from {order} "
                          "LIMIT ?", [*args, anchor["valid_from"], limit - len(out)]).fetchall()
        if rows:  # the farthest time's other messages may come first in conversation order: read it whole
            edge = rows[-1]["valid_from"]
            rows = [r for r in rows if r["valid_from"] != edge] + db.execute(
                f"SELECT * FROM memories WHERE {where} AND valid_from = ?", [*args, edge]).fetchall()
            out += sorted(rows, key=conversation_key, reverse=before)[:limit - len(out)]
    return out
