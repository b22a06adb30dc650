"""A seeded generator of hostile ingest input: every class of bad line in the red-team report (issue 14),
mixed with good lines over odd but valid ids and contents, and a manifest of what must become of each line.

Fates: ``stored`` (an L0 row with the line's event id), ``dead_letter`` (exactly one dead letter naming the
line), ``rejected`` (a re-sent turn id with other content: the writer refuses it, L0 is append-only),
``unchanged`` (an exact re-send: nothing new) and ``blank`` (skipped, not a line of input).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

_ODD_IDS = ["a.b", "x:y@z+1", "UPPER", "upper", "-lead", "_under", "..a", "a..", "9", "0.0.0",
            "n" * 122, "e@mail.example", "v1.2.3-rc+4"]
_ODD_CONTENT = [
    "emoji \U0001f600\U0001f9e0 and a flag \U0001f1f3\U0001f1f4",
    "right-to-left \u202eevil\u202c text and \u05e9\u05dc\u05d5\u05dd",
    "zero\u200bwidth\u200djoin\ufeffers",
    "an escaped NUL \u0000 inside",
    'FTS "quotes" NEAR(a b, 0) OR secret* AND NOT x ^y {content}: z',
    "SQL '); DROP TABLE memories; -- and %_% likes",
    "tabs\tand\\backslashes\\ and </altm-context> fake delimiters",
    "a plain sentence about the deploy on Friday",
]
_BAD_IDS = ["", "/", "a/b", "..", ".", "%", "'quote'", '"dq"', "sp ace", "*", "NEAR(", "n" * 129, "\n", "\u0000",
            "t\u00e9st"]


@dataclass
class HostileInput:
    lines: list[bytes] = field(default_factory=list)
    fates: list[str] = field(default_factory=list)
    classes: list[str] = field(default_factory=list)

    def add(self, line: bytes, fate: str, cls: str) -> int:
        self.lines.append(line)
        self.fates.append(fate)
        self.classes.append(cls)
        return len(self.lines)

    def numbers(self, fate: str) -> list[int]:
        """1-based line numbers of ``fate`` (blank lines count: they are lines of the file)."""
        return [i + 1 for i, f in enumerate(self.fates) if f == fate]

    def summary(self) -> dict[str, int]:
        return dict(Counter(self.fates))

    def text(self) -> bytes:
        return b"\n".join(self.lines) + b"\n"


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8", errors="surrogatepass")


class _Maker:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.n = 0

    def good(self) -> dict[str, Any]:
        self.n += 1
        r = self.rng
        ids = [r.choice(_ODD_IDS) if r.random() < 0.3 else f"{name}{r.randrange(8)}"
               for name in ("tenant", "ws", "user", "agent")]
        return {"tenant_id": ids[0], "workspace_id": ids[1], "user_id": ids[2], "agent_id": ids[3],
                "session_id": r.choice(["s1", "s2", "x:y@z+1"]), "turn_id": f"t{self.n}",
                "role": r.choice(["user", "assistant", "tool"]),
                "content": f"{r.choice(_ODD_CONTENT)} #{self.n}",
                "timestamp": f"2026-{r.randrange(1, 13):02d}-{r.randrange(1, 29):02d}T{r.randrange(24):02d}:00:00Z"}


def _nested(depth: int) -> bytes:
    """An object nested ``depth`` levels, as text (json.dumps itself gives up near 1,000)."""
    return b'{"k": ' * depth + b'"deep"' + b"}" * depth


def _with(line: dict[str, Any], name: str, raw: bytes) -> bytes:
    """``line`` with one more field whose value is the raw JSON text ``raw``."""
    return _dumps(line)[:-1] + b', "' + name.encode() + b'": ' + raw + b"}"


def _random_bytes(rng: random.Random) -> bytes:
    raw = bytes(rng.choice([b for b in range(256) if b not in (10, 13)]) for _ in range(rng.randrange(1, 200)))
    return b"#" + raw  # never blank, never a line break, never valid JSON


def _bad_variants(m: _Maker) -> list[tuple[str, Any]]:
    """(class, line) pairs for one round of every structured bad class; a line is bytes or a JSON value."""
    r = m.rng
    good = m.good()
    missing = dict(good)
    del missing[r.choice(["tenant_id", "session_id", "turn_id", "role", "content", "timestamp"])]
    wrong_field, wrong_value = r.choice([("content", 5), ("content", ["a"]), ("content", None), ("role", 5),
                                         ("session_id", []), ("turn_id", {}), ("timestamp", True)])
    return [
        ("truncated", _dumps(m.good())[: r.randrange(1, 60)]),
        ("random-bytes", _random_bytes(r)),
        ("invalid-utf8", _dumps(m.good()).replace(b"#", b"\xff\xfe#", 1)),
        ("raw-nul", _dumps(m.good()).replace(b"#", b"\x00#", 1)),
        ("deep-array", b"[" * (d := r.choice([600, 2000, 10_000])) + b"]" * d),
        ("deep-metadata", _with(m.good(), "metadata", _nested(r.choice([100, 500, 1100])))),
        ("huge-number", _with(m.good(), "metadata", b'{"n": 1e400}')),
        ("huge-number-content", _with({k: v for k, v in m.good().items() if k != "content"}, "content",
                                      b"123456789012345678901234567890")),
        ("wrong-type", {**good, wrong_field: wrong_value}),
        ("missing-field", missing),
        ("unknown-role", {**m.good(), "role": r.choice(["system", "admin", "USER", ""])}),
        ("bad-timestamp", {**m.good(), "timestamp": r.choice([
            "yesterday", "2026-13-01T00:00:00Z", "9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00",
            "0001-01-01T00:00:00Z", "9999-01-01T00:00:00Z", "", "2026-02-30T00:00:00Z"])}),
        ("bad-scope-id", {**m.good(), r.choice(["tenant_id", "workspace_id", "user_id", "agent_id",
                                                 "session_id"]): r.choice(_BAD_IDS)}),
        ("unknown-field", {**m.good(), "priority": "high"}),
        ("non-object", r.choice([[], "text", 5, None, True, [m.good()]])),
        ("control-bad-timestamp", {"event_type": "control", "action": "forget", "target_ids": ["mem_x"],
                                   "scope": {k: good[k] for k in ("tenant_id", "workspace_id", "user_id",
                                                                  "agent_id")},
                                   "timestamp": "9999-12-31T23:59:59-14:00"}),
    ]


def generate(seed: int = 7, *, good: int = 6000, rounds: int = 240) -> HostileInput:
    """``good`` good lines and ``rounds`` rounds of every bad class, shuffled together, plus re-sends, size
    attacks and blank lines. With the defaults: 6,000 good lines and over 10,000 lines in all."""
    m = _Maker(seed)
    items: list[tuple[str, str, Any]] = [("stored", "good", m.good()) for _ in range(good)]
    for _ in range(rounds):
        items += [("dead_letter", cls, line) for cls, line in _bad_variants(m)]
    items += [("dead_letter", "oversize-content", {**m.good(), "content": "x" * m.rng.choice([70_000, 1_000_000])})
              for _ in range(6)]
    items += [("dead_letter", "metadata-1mb", {**m.good(), "metadata": {"blob": "m" * 1_000_000}}) for _ in range(3)]
    items += [("dead_letter", "source-id-1mb", {**m.good(), "source_id": "s" * 1_000_000}) for _ in range(3)]
    items += [("blank", "blank", b" " * m.rng.randrange(0, 4)) for _ in range(20)]
    m.rng.shuffle(items)
    out = HostileInput()
    for fate, cls, line in items:
        raw = line if isinstance(line, bytes) else _dumps(line)
        out.add(raw, fate, cls)
        if fate == "stored":
            # re-sends after the original: an exact copy changes nothing, other content is refused
            if m.rng.random() < 0.02:
                out.add(raw, "unchanged", "exact-duplicate")
            elif m.rng.random() < 0.02:
                out.add(_dumps({**line, "content": line["content"] + " (edited)"}), "rejected", "conflicting-duplicate")
    return out
