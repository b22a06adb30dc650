"""Re-derivation throughput: ingest a conversation set, replay its log into a fresh data dir, compare hashes,
and count the model calls the replay made (texts embedded, chat calls that reached an endpoint): a replay takes
model answers from the source's LLM cache and vectors from its index, so both should be 0.

python benchmarks/replay.py [--data LOCOMO.json] [--turns N] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prometheus_client import REGISTRY

from altm.wiring import replay_into, state_hash
from benchmarks._record import config_stamp, write_record
from benchmarks.ingest import DEFAULT_DATA, load_turns, run, turns_source


def model_calls() -> dict[str, float]:
    """Texts embedded and chat calls that reached an endpoint so far in this process (its metrics)."""
    texts = calls = 0.0
    for metric in REGISTRY.collect():
        for s in metric.samples:
            if s.name == "altm_embedder_texts_total":
                texts += s.value
            elif s.name == "altm_model_calls_total" and s.labels.get("outcome") in ("ok", "failed", "invalid"):
                calls += s.value
    return {"texts_embedded": texts, "chat_calls": calls}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--turns", type=int, default=500)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    turns = load_turns(args.data, args.turns)
    with tempfile.TemporaryDirectory(prefix="altm-replay-") as tmp:
        original, rebuilt = Path(tmp) / "original", Path(tmp) / "rebuilt"
        ingest_s = float(asyncio.run(run(turns, original))["seconds"])  # the ingest benchmark's run
        before = model_calls()
        summary = asyncio.run(replay_into(original, rebuilt))
        calls = {k: v - before[k] for k, v in model_calls().items()}
        h1, h2 = state_hash(original), state_hash(rebuilt)
    equal = h1 == h2
    print(
        f"ingest: {len(turns)} turns in {ingest_s:.1f} s; replay: {summary.events} events in "
        f"{summary.seconds:.1f} s = {summary.events_per_s:.1f} events/s"
    )
    print(f"state hash original {h1[:16]}…, rebuilt {h2[:16]}… -> {'EQUAL' if equal else 'DIFFERENT'}")
    print(f"model calls during the replay: {calls['texts_embedded']:.0f} texts embedded, "
          f"{calls['chat_calls']:.0f} chat calls")
    path = write_record(
        "replay",
        {
            "config": config_stamp(benchmark="replay", turns=len(turns), model=None, source=turns_source(args.data)),
            "aggregate": {
                "events_per_s": summary.events_per_s,
                "events": summary.events,
                "seconds": summary.seconds,
                "state_hash_equal": equal,
                "texts_embedded": calls["texts_embedded"],
                "chat_calls": calls["chat_calls"],
                "state_hash": h1,
            },
        },
        args.out,
    )
    print(f"record: {path}")
    if not equal:
        sys.exit(1)


if __name__ == "__main__":
    main()
