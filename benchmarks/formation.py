"""Formation precision and recall on a labelled set of our own (issue 15, item 3): conversations written for this
benchmark in several styles and phrasings — not LoCoMo — with the L2 atoms, L3 scenes and L4 facets a careful
reader would derive, and negatives (chit-chat, questions, quoted text, hypotheticals, negations) that should
derive nothing. Model-free (no chat model), like the default pipeline.

    python benchmarks/formation.py [--set dev|held-out|all] [--out FILE.json]

Scoring: an expected atom is found when an L2 memory of its kind contains its key phrase (case-insensitive); a
formed atom is correct when it matches an expected atom of its kind; a negative is violated when any L2 memory
contains its phrase. Scenes and facets likewise by key phrase. Guard recall: of the messages sent after an
anti-pattern that restate it, the share the write guard refused. The record has a row per expected item and
per formed memory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from altm.core import Role, Scope, TurnEvent
from altm.core.settings import Settings
from altm.wiring import open_embedded
from benchmarks._record import config_stamp, write_record

ATOM_KINDS = ("fact", "preference", "decision", "issue", "task", "outcome", "heuristic", "anti_pattern")


@dataclass
class Case:
    name: str
    style: str
    turns: list[tuple[str, str, str]]  # (session, role, text)
    atoms: list[tuple[str, str]] = field(default_factory=list)  # (kind, key phrase)
    negatives: list[str] = field(default_factory=list)  # phrases no atom may hold
    scenes: list[str] = field(default_factory=list)  # anchors a cross-session scene should name
    facets: list[str] = field(default_factory=list)  # phrases a persona facet should hold
    not_facets: list[str] = field(default_factory=list)
    guarded: list[str] = field(default_factory=list)  # sent last: restate an anti-pattern, should be refused


CASES = [
    Case("billing-migration", "team chat, terse", [
        ("s1", "user", "hey, quick one: the billing service moves from Flask to FastAPI this quarter."),
        ("s1", "assistant", "Got it. Any deadline for the billing migration?"),
        ("s1", "user", "We decided the cutover happens on March 3."),
        ("s1", "user", "Can you look at the flaky test in ci?"),
        ("s1", "user", "Sounds good, thanks!"),
        ("s2", "user", "The billing service cutover went fine, zero downtime."),
        ("s2", "user", "Never restart the payment queue during business hours because it drops in-flight charges."),
        ("s2", "user", "TODO: write the rollback runbook for the billing service."),
    ], atoms=[("decision", "cutover happens on march 3"), ("outcome", "zero downtime"),
              ("anti_pattern", "restart the payment queue"), ("task", "rollback runbook")],
       negatives=["flaky test", "sounds good"], scenes=["billing service"],
       guarded=["Let's restart the payment queue during business hours tonight."]),
    Case("editor-preferences", "personal, first person", [
        ("a", "user", "I prefer dark mode in every editor."),
        ("a", "user", "If I had more time I would learn Rust, but not now."),
        ("a", "assistant", "You might prefer a light theme for presentations."),
        ("b", "user", "I always write commit messages in the imperative mood."),
        ("b", "user", "My colleague said \"I prefer tabs over spaces\", which I don't agree with."),
    ], atoms=[("preference", "dark mode"), ("preference", "imperative mood")],
       negatives=["learn rust", "light theme", "tabs over spaces"],
       facets=["dark mode", "imperative mood"], not_facets=["light theme", "tabs over spaces", "learn rust"]),
    Case("support-ticket", "formal support ticket", [
        ("t1", "user", "Issue: exports to CSV fail with a timeout for reports over 10,000 rows."),
        ("t1", "assistant", "Thank you for the report. Does it happen for smaller reports as well?"),
        ("t1", "user", "No, smaller reports export without problems."),
        ("t2", "user", "Resolution: raising the export timeout to 120 seconds fixed the CSV exports."),
        ("t2", "user", "Lesson learned: paginate large exports instead of raising timeouts."),
    ], atoms=[("issue", "exports to csv fail"), ("outcome", "fixed the csv exports"),
              ("heuristic", "paginate large exports")],
       negatives=["does it happen for smaller"], scenes=["csv exports"]),
    Case("code-review", "code review thread", [
        ("r1", "user", "Let's go with orjson for the session cache serialisation."),
        ("r1", "user", "Don't use pickle for the session cache because it can execute arbitrary code."),
        ("r1", "user", "What about msgpack? Just asking."),
        ("r2", "user", "The session cache now uses orjson and is 3x faster."),
    ], atoms=[("decision", "orjson for the session cache"), ("anti_pattern", "pickle for the session cache"),
              ("outcome", "3x faster")],
       negatives=["msgpack"], scenes=["session cache"],
       guarded=["I prefer pickle for the session cache, it is simpler."]),
    Case("trip-planning", "casual planning", [
        ("p1", "user", "My flight to Lisbon leaves on May 12."),
        ("p1", "user", "Maybe we could visit Porto too, not sure yet."),
        ("p1", "user", "I don't want a hotel near the airport."),
        ("p2", "user", "Booked the Lisbon apartment in Alfama for five nights."),
        ("p2", "user", "Remind me to buy travel insurance before May 1."),
    ], atoms=[("fact", "flight to lisbon"), ("outcome", "booked the lisbon apartment"),
              ("task", "buy travel insurance")],
       negatives=["visit porto"], scenes=["lisbon"]),
    Case("ops-on-call", "on-call handover notes", [
        ("h1", "user", "FYI the primary database is Postgres 16 on the db-01 host."),
        ("h1", "user", "We agreed to rotate the on-call every Monday at 10:00."),
        ("h1", "user", "lol that meme was great"),
        ("h2", "user", "Disk on db-01 filled up overnight; the alert fired at 03:12."),
        ("h2", "user", "Always check the WAL archive before deleting anything on db-01."),
    ], atoms=[("fact", "postgres 16"), ("decision", "rotate the on-call every monday"),
              ("issue", "disk on db-01 filled up"), ("heuristic", "check the wal archive")],
       negatives=["meme"], scenes=["db-01"]),
]


HELD_OUT = [  # written after the rules were tuned on CASES; measured blind until 2026-12-06, tuned on since
    Case("data-standup", "stand-up notes", [
        ("d1", "user", "Yesterday I finished the schema migration for the events table."),
        ("d1", "user", "Today I'm pairing with Ana on the ingestion pipeline."),
        ("d1", "user", "Blocker: the staging cluster keeps evicting pods."),
        ("d2", "user", "We chose Parquet over Avro for the ingestion pipeline."),
        ("d2", "user", "The ingestion pipeline backfill completed in 4 hours."),
        ("d2", "user", "Haha, classic Monday."),
    ], atoms=[("outcome", "finished the schema migration"), ("issue", "evicting pods"),
              ("decision", "parquet over avro"), ("outcome", "backfill completed")],
       negatives=["classic monday"], scenes=["ingestion pipeline"]),
    Case("personal-assistant", "assistant requests", [
        ("m1", "user", "I'm allergic to peanuts."),
        ("m1", "user", "I'd rather have meetings in the morning."),
        ("m1", "user", "What's the weather like in Oslo?"),
        ("m2", "user", "Please remind me to renew my passport before June 30."),
        ("m2", "user", "Suppose I moved to Oslo, would taxes be higher?"),
    ], atoms=[("fact", "allergic to peanuts"), ("preference", "meetings in the morning"),
              ("task", "renew my passport")],
       negatives=["weather", "moved to oslo"], facets=["meetings in the morning"], not_facets=["oslo"]),
    Case("incident-review", "post-incident review", [
        ("i1", "user", "The checkout API returned 502s for twenty minutes after the deploy."),
        ("i1", "user", "Rolling back the deploy fixed it."),
        ("i2", "user", "Never deploy the checkout API on Friday afternoons because nobody is around to roll back."),
        ("i2", "user", "Rule of thumb: canary every release to 5% first."),
        ("i2", "user", "Someone wrote \"just ship it\" in the channel."),
    ], atoms=[("issue", "returned 502s"), ("outcome", "rolling back the deploy fixed"),
              ("anti_pattern", "deploy the checkout api on friday"), ("heuristic", "canary every release")],
       negatives=["just ship it"], scenes=["checkout api"],
       guarded=["Let's deploy the checkout API on Friday afternoon, it's quick."]),
    Case("research-notes", "research notebook", [
        ("n1", "user", "Our benchmark shows the new tokenizer is 18% faster on long documents."),
        ("n1", "user", "We decided to keep the old tokenizer for the legacy models."),
        ("n2", "user", "If we had more GPUs we could retrain everything."),
        ("n2", "user", "TODO: compare the tokenizer on code-heavy corpora."),
    ], atoms=[("outcome", "18% faster"), ("decision", "keep the old tokenizer"), ("task", "compare the tokenizer")],
       negatives=["retrain everything"], scenes=["tokenizer"]),
]
HELD_OUT_2 = [  # written on 2026-12-06 before that day's rule changes, and never tuned on: report apart
    Case("email-thread", "email thread, formal", [
        ("e1", "user", "Hi all, following up on Tuesday's call about the vendor portal."),
        ("e1", "user", "We have decided to sign the annual contract with Northwind instead of paying monthly."),
        ("e1", "user", "Could you forward me the latest invoice when you get a chance?"),
        ("e1", "user", "Best regards, Priya"),
        ("e2", "user", "Update on the vendor portal: the SSO integration went live this morning without issues."),
        ("e2", "user", "Action item: update the vendor portal onboarding guide by Friday."),
        ("e2", "user", "Please do not share vendor portal admin passwords over email because they end up in "
                       "archives."),
    ], atoms=[("decision", "annual contract with northwind"), ("outcome", "sso integration went live"),
              ("task", "onboarding guide"), ("anti_pattern", "share vendor portal admin passwords")],
       negatives=["forward me the latest invoice", "best regards"], scenes=["vendor portal"],
       guarded=["Let's share the vendor portal admin passwords over email, it is faster."]),
    Case("fitness-coach", "personal coaching chat", [
        ("f1", "user", "I usually run in the evening after work."),
        ("f1", "user", "I have a knee injury from last winter, so no jumping exercises."),
        ("f1", "assistant", "Have you considered swimming as low-impact cardio?"),
        ("f1", "user", "How many calories does a 5k burn?"),
        ("f2", "user", "I finished my first half marathon in 2 hours 5 minutes!"),
        ("f2", "user", "If I lost ten kilos I might try a full marathon someday."),
        ("f2", "user", "I prefer plant-based protein shakes."),
    ], atoms=[("preference", "run in the evening"), ("fact", "knee injury"), ("outcome", "half marathon"),
              ("preference", "plant-based protein")],
       negatives=["calories", "full marathon", "swimming"],
       facets=["run in the evening", "plant-based protein"], not_facets=["swimming", "full marathon"]),
    Case("sprint-retro", "sprint retrospective", [
        ("r1", "user", "Went well: the search service latency dropped below 100 ms after the index rebuild."),
        ("r1", "user", "Didn't go well: the mobile release slipped a week because of App Store review."),
        ("r1", "user", "Takeaway: submit mobile builds for review at least five days before the release."),
        ("r2", "user", "We agreed to drop the weekly demo meeting and share recordings instead."),
        ("r2", "user", "The search service now serves all traffic from the new cluster."),
        ("r2", "user", "Who's bringing snacks on Thursday?"),
    ], atoms=[("outcome", "latency dropped below 100 ms"), ("issue", "mobile release slipped"),
              ("heuristic", "submit mobile builds for review"), ("decision", "drop the weekly demo meeting")],
       negatives=["snacks"], scenes=["search service"]),
    Case("home-renovation", "household planning, casual", [
        ("h1", "user", "The kitchen renovation starts on April 8 and the contractor is Bauer & Sons."),
        ("h1", "user", "we picked oak flooring for the kitchen, not tiles"),
        ("h1", "user", "What would a skylight cost? Just curious."),
        ("h2", "user", "The kitchen plumbing passed the inspection yesterday."),
        ("h2", "user", "The dishwasher leaks when the kitchen sink drains at the same time."),
        ("h2", "user", "Need to order the cabinet handles before the end of the month."),
    ], atoms=[("fact", "kitchen renovation starts on april 8"), ("decision", "oak flooring"),
              ("outcome", "passed the inspection"), ("issue", "dishwasher leaks"), ("task", "cabinet handles")],
       negatives=["skylight"], scenes=["kitchen"]),
    Case("mentoring", "mentoring conversation", [
        ("m1", "user", "My manager said \"always say yes to every project\", and I'm not sure about that."),
        ("m1", "user", "I want to move into a staff engineer role within two years."),
        ("m1", "user", "Lesson I learned the hard way: write the design doc before writing the code."),
        ("m2", "user", "I presented the caching design to the architecture group and it was approved."),
        ("m2", "user", "Maybe I should learn Go, maybe not."),
    ], atoms=[("heuristic", "write the design doc before"), ("outcome", "it was approved")],
       negatives=["say yes to every project", "learn go"], facets=["staff engineer"],
       not_facets=["say yes to every project", "learn go"]),
    Case("data-platform-dm", "direct messages, lowercase, terse", [
        ("x1", "user", "fyi the warehouse runs on snowflake now, redshift is gone"),
        ("x1", "user", "decided: nightly dbt runs move to 02:00 utc"),
        ("x1", "user", "ok cool"),
        ("x2", "user", "the nightly dbt run failed again, out of memory on the orders model"),
        ("x2", "user", "dont run full refreshes of the orders model during business hours, it locks the warehouse"),
        ("x2", "user", "todo: split the orders model into daily partitions"),
    ], atoms=[("fact", "snowflake"), ("decision", "nightly dbt runs move to 02:00"),
              ("issue", "out of memory on the orders model"), ("anti_pattern", "full refreshes of the orders model"),
              ("task", "split the orders model")],
       negatives=["ok cool"], scenes=["orders model"],
       guarded=["let's run a full refresh of the orders model at noon today"]),
]


def _load_cases(path: Path) -> list[Case]:
    """Cases kept as JSON (``formation_sets/``): lists where the dataclass has tuples."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    return [Case(name=c["name"], style=c["style"], turns=[(s, r, t) for s, r, t in c["turns"]],
                 atoms=[(k, p) for k, p in c["atoms"]], negatives=c["negatives"], scenes=c["scenes"],
                 facets=c["facets"], not_facets=c["not_facets"], guarded=c["guarded"]) for c in doc["cases"]]


HELD_OUT_3 = _load_cases(Path(__file__).resolve().parent / "formation_sets" / "held_out_3.json")  # written blind
SETS = {"dev": CASES, "held-out": HELD_OUT, "held-out-2": HELD_OUT_2, "held-out-3": HELD_OUT_3,
        "all": CASES + HELD_OUT + HELD_OUT_2 + HELD_OUT_3}


def _turns(case: Case, scope: Scope) -> list[TurnEvent]:
    t0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    sessions = list(dict.fromkeys(s for s, _, _ in case.turns))
    return [TurnEvent(scope=scope, session_id=session, turn_id=f"{session}-t{i}", role=Role(role), content=text,
                      timestamp=t0 + timedelta(days=sessions.index(session), minutes=i))
            for i, (session, role, text) in enumerate(case.turns)]


def _rows(data_dir: Path, sql: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in sorted((data_dir / "shards").glob("shard-*.db")):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            out += [dict(r) for r in conn.execute(sql)]
        finally:
            conn.close()
    return out


async def run_case(case: Case, work: Path) -> dict[str, Any]:
    settings = Settings(data_dir=work / case.name, partitions=1, embedder="none")
    scope = Scope(tenant_id="bench", workspace_id="formation", user_id=case.name, agent_id="a")
    async with open_embedded(settings) as deployment:
        assert deployment.runtime is not None
        await deployment.runtime.publish(_turns(case, scope))
        await deployment.runtime.run_until_idle()
        before = len(_rows(settings.data_dir, "SELECT 1 FROM rejections"))
        guarded = [TurnEvent(scope=scope, session_id="guard", turn_id=f"g{i}", role=Role.USER, content=text,
                             timestamp=datetime(2026, 4, 1, tzinfo=UTC) + timedelta(minutes=i))
                   for i, text in enumerate(case.guarded)]
        await deployment.runtime.publish(guarded)
        await deployment.runtime.run_until_idle()
    memories = _rows(settings.data_dir, "SELECT layer, kind, content FROM memories WHERE superseded_by IS NULL")
    derived_from_guarded = [m for m in memories if m["layer"] == "L2" and any(
        g.lower()[:40] in m["content"].lower() for g in case.guarded)]
    refused = len(_rows(settings.data_dir, "SELECT 1 FROM rejections")) - before
    return {"memories": memories, "guard_refused": min(refused, len(case.guarded)),
            "guard_admitted": len(derived_from_guarded)}


def score(case: Case, memories: list[dict[str, Any]]) -> dict[str, Any]:
    atoms = [m for m in memories if m["layer"] == "L2"]
    scenes = [m for m in memories if m["layer"] == "L3"]
    facets = [m for m in memories if m["layer"] == "L4"]

    def holds(m: dict[str, Any], phrase: str) -> bool:
        return phrase.lower() in m["content"].lower()

    expected = [{"kind": k, "phrase": p, "found": any(a["kind"] == k and holds(a, p) for a in atoms)}
                for k, p in case.atoms]
    formed = [{"kind": a["kind"], "content": a["content"],
               "correct": any(a["kind"] == k and holds(a, p) for k, p in case.atoms)} for a in atoms]
    return {
        "expected": expected, "formed": formed, "negatives_total": len(case.negatives),
        "negatives_violated": [p for p in case.negatives if any(holds(a, p) for a in atoms)],
        "scenes_expected": [{"anchor": s, "found": any(holds(m, s) for m in scenes)} for s in case.scenes],
        "scenes_formed": [{"content": m["content"][:200], "correct": any(holds(m, s) for s in case.scenes)}
                          for m in scenes],
        "facets_expected": [{"phrase": f, "found": any(holds(m, f) for m in facets)} for f in case.facets],
        "facets_formed": [{"content": m["content"], "correct": any(holds(m, f) for f in case.facets),
                           "forbidden": any(holds(m, f) for f in case.not_facets)} for m in facets],
    }


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def aggregate(scored: list[dict[str, Any]]) -> dict[str, Any]:
    per_kind: dict[str, dict[str, Any]] = {}
    for kind in ATOM_KINDS:
        exp = [e for s in scored for e in s["expected"] if e["kind"] == kind]
        got = [f for s in scored for f in s["formed"] if f["kind"] == kind]
        per_kind[kind] = {"expected": len(exp), "formed": len(got),
                          "recall": _ratio(sum(e["found"] for e in exp), len(exp)),
                          "precision": _ratio(sum(f["correct"] for f in got), len(got))}
    all_exp = [e for s in scored for e in s["expected"]]
    all_got = [f for s in scored for f in s["formed"]]
    scenes_exp = [x for s in scored for x in s["scenes_expected"]]
    scenes_got = [x for s in scored for x in s["scenes_formed"]]
    facets_exp = [x for s in scored for x in s["facets_expected"]]
    facets_got = [x for s in scored for x in s["facets_formed"]]
    return {
        "atoms": {"recall": _ratio(sum(e["found"] for e in all_exp), len(all_exp)),
                  "precision": _ratio(sum(f["correct"] for f in all_got), len(all_got)),
                  "expected": len(all_exp), "formed": len(all_got)},
        "per_kind": per_kind,
        "negatives": {"total": sum(s["negatives_total"] for s in scored),
                      "violated": sum(len(s["negatives_violated"]) for s in scored)},
        "scenes": {"recall": _ratio(sum(x["found"] for x in scenes_exp), len(scenes_exp)),
                   "precision": _ratio(sum(x["correct"] for x in scenes_got), len(scenes_got)),
                   "formed": len(scenes_got)},
        "facets": {"recall": _ratio(sum(x["found"] for x in facets_exp), len(facets_exp)),
                   "precision": _ratio(sum(x["correct"] for x in facets_got), len(facets_got)),
                   "forbidden": sum(x["forbidden"] for x in facets_got), "formed": len(facets_got)},
    }


def _fmt(value: float | None) -> str:
    return "  -  " if value is None else f"{value:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", choices=sorted(SETS), default="dev",
                    help="dev: the cases the rules were tuned on; held-out: tuned on since 2026-12-06; held-out-2 "
                         "(written by the rules' author before that day's changes) and held-out-3 (written blind by "
                         "someone who had not seen the rules): never tuned on")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    cases = SETS[args.set]
    scored, guard = [], {"restatements": 0, "refused": 0, "admitted": 0}
    with tempfile.TemporaryDirectory(prefix="altm-formation-") as tmp:
        for case in cases:
            result = asyncio.run(run_case(case, Path(tmp)))
            scored.append({"case": case.name, "style": case.style, **score(case, result["memories"])})
            guard["restatements"] += len(case.guarded)
            guard["refused"] += result["guard_refused"]
            guard["admitted"] += result["guard_admitted"]
    agg = aggregate(scored)
    agg["guard"] = {**guard, "recall": _ratio(guard["refused"], guard["restatements"])}
    print(f"L2 atoms: recall {_fmt(agg['atoms']['recall'])}, precision {_fmt(agg['atoms']['precision'])} "
          f"({agg['atoms']['expected']} expected, {agg['atoms']['formed']} formed)")
    for kind, row in agg["per_kind"].items():
        print(f"  {kind:>12}: recall {_fmt(row['recall'])} of {row['expected']:>2}, "
              f"precision {_fmt(row['precision'])} of {row['formed']:>2}")
    print(f"negatives that became atoms: {agg['negatives']['violated']} of {agg['negatives']['total']}")
    print(f"scenes: recall {_fmt(agg['scenes']['recall'])}, precision {_fmt(agg['scenes']['precision'])} "
          f"({agg['scenes']['formed']} formed)")
    print(f"facets: recall {_fmt(agg['facets']['recall'])}, precision {_fmt(agg['facets']['precision'])}, "
          f"forbidden {agg['facets']['forbidden']} ({agg['facets']['formed']} formed)")
    print(f"guard: {guard['refused']} of {guard['restatements']} restated anti-patterns refused, "
          f"{guard['admitted']} admitted as atoms")
    path = write_record("formation", {
        "config": config_stamp(benchmark="formation", set=args.set, cases=[c.name for c in cases], model=None,
                               embedder=None),
        "aggregate": agg, "cases": scored}, args.out)
    print(f"record: {path}")


if __name__ == "__main__":
    main()
