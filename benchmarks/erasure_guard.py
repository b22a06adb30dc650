"""False positives of the write guard after erasures, through the real pipeline (issue 14, F5).

    python benchmarks/erasure_guard.py [--data LOCOMO.json] [--fraction 0.1] [--seed 7] [--out FILE.json]

The LoCoMo dev conversations are ingested (embedded pipeline, no embedder, messages without the speaker
prefix so short ones repeat across sessions), a seeded random ``fraction`` of the sessions is erased, then every
message is sent again as a new turn of a new session:

* messages of sessions that were *not* erased must all be stored: each refusal is a false positive (target 0);
* messages of erased sessions are exact re-sends of erased content: refused when distinctive (long, or naming
  a number, code or identifier: see the guard's ``MIN_SHINGLES``), stored otherwise ("Thanks!" said again is
  a new message).

Refusals of derived memories (L1-L4) formed from the re-sent messages are counted too, and the capsules and
scenes stored without the statements or members that re-state an erased message (the guard leaves those out).
The record has the config stamp, the figures and one row per refused message.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.core import TurnEvent
from altm.core.settings import Settings
from altm.pipeline.writer.guard import MIN_SHINGLES, distinctive
from altm.pipeline.writer.ops.memory import LEFT_OUT
from altm.store import shard_files
from altm.wiring import open_embedded
from benchmarks._record import config_stamp, write_record
from benchmarks.ingest import DEFAULT_DATA
from benchmarks.locomo import conversation_turns

GUARD = "matches erased content"


def _renewed(turn: TurnEvent, kind: str) -> TurnEvent:
    """The same message as a new turn of a new session (its event id derived afresh)."""
    data = turn.model_dump()
    data.pop("event_id")
    data.update(session_id=f"{kind}-{turn.session_id}", turn_id=f"{kind}-{turn.turn_id}",
                source_id=f"{kind}-{turn.turn_id}")
    return TurnEvent.model_validate(data)


async def run(samples: list[dict[str, Any]], fraction: float, seed: int, work: Path) -> dict[str, Any]:
    turns = [t for sample in samples for t in conversation_turns(sample, speaker_prefix=False)]
    sessions = sorted({(t.scope.path, t.session_id) for t in turns})
    erased = set(random.Random(seed).sample(sessions, max(1, round(fraction * len(sessions)))))
    settings = Settings(data_dir=work, embedder="none")
    started = time.perf_counter()
    async with open_embedded(settings) as deployment:
        runtime = deployment.runtime
        assert runtime is not None
        await runtime.publish(turns)
        await runtime.run_until_idle()
        by_path = {t.scope.path: t.scope for t in turns}
        for path, session in sorted(erased):
            await deployment.app.erase(by_path[path], "session", session_id=session, reason="benchmark")
        await runtime.run_until_idle()
        kept = [_renewed(t, "again") for t in turns if (t.scope.path, t.session_id) not in erased]
        resent = [_renewed(t, "resend") for t in turns if (t.scope.path, t.session_id) in erased]
        await runtime.publish([*kept, *resent])
        await runtime.run_until_idle()
    refused, left_out = _refusals(work), _left_out(work)
    elapsed = time.perf_counter() - started
    kept_ids = {t.turn_id for t in kept}
    rows = []
    for r in refused:
        memory = orjson.loads(r["payload"]).get("memory", {})
        turn_id, session = memory.get("attributes", {}).get("turn_id"), memory.get("session_id") or ""
        # a refusal of something formed from messages that were not erased is a false positive
        wrong = turn_id in kept_ids if r["layer"] == "L0" else session.startswith("again-")
        rows.append({"layer": r["layer"], "turn_id": turn_id, "session_id": session, "false_positive": wrong,
                     "reason": r["reason"]})
    l0_fp = [r for r in rows if r["layer"] == "L0" and r["false_positive"]]
    l0_resent = [r for r in rows if r["layer"] == "L0" and not r["false_positive"]]
    derived = [r for r in rows if r["layer"] != "L0"]
    specific = sum(1 for t in resent if distinctive(t.content))
    return {
        "sessions": len(sessions), "sessions_erased": len(erased), "messages": len(turns),
        "messages_not_erased_resent": len(kept), "l0_false_positives": len(l0_fp),
        "l0_false_positive_rate": len(l0_fp) / max(1, len(kept)),
        "erased_messages_resent": len(resent), "erased_resent_distinctive": specific,
        "erased_resent_refused": len(l0_resent),
        "derived_refusals": len(derived),
        "derived_false_positives": sum(1 for r in derived if r["false_positive"]),
        "derived_refusals_without_session": sum(1 for r in derived if not r["session_id"]),
        "capsules_with_statements_left_out": len(left_out["L1"]), "statements_left_out": sum(left_out["L1"]),
        "scenes_with_members_left_out": len(left_out["L3"]), "members_left_out": sum(left_out["L3"]),
        "seconds": round(elapsed, 1), "rows": rows,
    }


def _refusals(data_dir: Path) -> list[dict[str, Any]]:
    out = []
    for _, path in shard_files(data_dir):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            for reason, payload in conn.execute(
                    "SELECT reason, payload FROM rejections WHERE reason LIKE ?", (f"%{GUARD}%",)):
                memory = orjson.loads(payload).get("memory", {}) if payload.startswith("{") else {}
                out.append({"reason": reason, "payload": payload, "layer": memory.get("layer", "?")})
        finally:
            conn.close()
    return out


def _left_out(data_dir: Path) -> dict[str, list[int]]:
    """By layer (L1 capsules, L3 scenes), how many statements or members the guard left out of each memory it
    stored without some (see ``ops.memory``)."""
    out: dict[str, list[int]] = {"L1": [], "L3": []}
    for _, path in shard_files(data_dir):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            for layer, n in conn.execute(
                    "SELECT layer, json_extract(attributes, ?) FROM memories "
                    "WHERE json_extract(attributes, ?) IS NOT NULL", (f"$.{LEFT_OUT}", f"$.{LEFT_OUT}")):
                out.setdefault(layer, []).append(int(n))
        finally:
            conn.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--fraction", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if not args.data.exists():
        sys.exit(f"no conversation data at {args.data}")
    with tempfile.TemporaryDirectory(prefix="altm-erasure-guard-") as tmp:
        result = asyncio.run(run(orjson.loads(args.data.read_bytes()), args.fraction, args.seed, Path(tmp)))
    rows = result.pop("rows")
    print(f"{result['sessions_erased']}/{result['sessions']} sessions erased; "
          f"{result['messages_not_erased_resent']} messages of the others sent again: "
          f"{result['l0_false_positives']} refused (false-positive rate {result['l0_false_positive_rate']:.4%})")
    print(f"{result['erased_messages_resent']} erased messages re-sent: {result['erased_resent_refused']} refused "
          f"({result['erased_resent_distinctive']} distinctive); derived refusals: {result['derived_refusals']} "
          f"({result['derived_false_positives']} of memories formed from messages that were not erased); "
          f"{result['seconds']} s")
    print(f"capsules stored without some statements: {result['capsules_with_statements_left_out']} "
          f"({result['statements_left_out']} statements left out); scenes stored without some members: "
          f"{result['scenes_with_members_left_out']} ({result['members_left_out']} members left out)")
    path = write_record("erasure_guard", {
        "config": config_stamp(benchmark="erasure_guard", dataset=str(args.data), fraction=args.fraction,
                               seed=args.seed, min_shingles=MIN_SHINGLES),
        "aggregate": result, "refusals": rows,
    }, args.out)
    print(f"record: {path}")


if __name__ == "__main__":
    main()
