"""Administration of a deployment: ``erase``, ``review``, ``governance``, ``retention``, ``compaction``,
``sweep``, ``optimize`` and ``replay``. Every change is a control event on the deployment's own bus (the
embedded log, run here until idle, or Kafka, applied by the workers)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from altm.app import Request
from altm.interfaces.cli._common import (
    DEFAULT_DATA_DIR,
    BrokerOpt,
    DataDir,
    Json,
    PipelineProgress,
    ScopeOpt,
    _require_data_dir,
    console,
    deployment_for,
    emit_json,
    fail,
    parse_scope,
    run,
    settings_for,
    shown,
)
from altm.store import DataDirError
from altm.vectors import VectorIndexBusy
from altm.wiring import Deployment, open_read_only, open_vectors, replay_into, resolve, state_hash
from altm.wiring import open_embedding as _embedding

review_app = typer.Typer(help="The review queue: contradicted/uncertain memories, held actions, "
                              "rejected proposals.", no_args_is_help=True)
gov_app = typer.Typer(help="Autonomous decisions: list, preview and roll back.", no_args_is_help=True)
Preview = Annotated[bool, typer.Option("--preview", help="Show what would change; change nothing")]


async def _applied(deployment: Deployment, request: Request, what: str) -> str:
    """Wait for the writer to apply a request (what follows from it, e.g. an erasure's re-derivations, with a
    progress bar); fail with its reason when it was refused."""
    with PipelineProgress(what, 1) as progress:
        progress("published", 1)
        settled = await deployment.settle(progress=progress)
    if not settled:
        return f"{what}: queued on {deployment.settings.bus}; the workers have not applied it yet"
    outcome = deployment.app.admin.outcome(request)
    if outcome.status == "rejected":
        fail(f"the {what} was refused: {outcome.reason}")
    return ""


def erase(
    data_dir: DataDir = DEFAULT_DATA_DIR,
    scope: ScopeOpt = "",
    session: Annotated[str | None, typer.Option(help="Erase one session of the agent")] = None,
    memory: Annotated[str | None, typer.Option(help="Erase one memory (and what was derived from it)")] = None,
    agent: Annotated[bool, typer.Option("--agent", help="Erase everything of the agent")] = False,
    user: Annotated[bool, typer.Option("--user", help="Erase everything of the user (all agents)")] = False,
    reason: Annotated[str, typer.Option(help="Recorded with the tombstones and the audit")] = "erasure requested",
    broker: BrokerOpt = None,
) -> None:
    """Erase content from every store and leave tombstones so no replay re-creates it."""
    chosen = [name for name, on in (("session", session), ("memory", memory), ("agent", agent), ("user", user))
              if on]
    if len(chosen) != 1:
        fail("choose exactly one of --session S, --memory ID, --agent, --user")
    parsed = parse_scope(scope)

    async def go() -> tuple[str, bool]:
        async with deployment_for(data_dir, broker, existing=True) as deployment:
            before = deployment.app.admin.tombstones(parsed)
            request = await deployment.app.admin.erase(parsed, chosen[0], memory_id=memory, session_id=session,
                                                       reason=reason)
            pending = await _applied(deployment, request, "erasure")
            after = deployment.app.admin.tombstones(parsed)
            if pending:
                return pending, True
            # a mistyped id or another scope: nothing was stored there, so nothing was buried (said, not "erased")
            found = after > before or chosen[0] == "memory"
            return (f"erased ({chosen[0]}); {after} tombstones for {parsed.home}" if found else
                    f"nothing of {chosen[0]} {session or ''} was stored in {parsed.path}: nothing erased (check the "
                    "scope and the id; records of it still on the log, if any, are shredded)"), found

    message, found = run(go())
    if not found:
        fail(message)
    console.print(shown(message))


def _maintenance(data_dir: Path, broker: str | None, preview: bool, which: str, now: datetime | None = None
                 ) -> list[dict[str, Any]] | int:
    async def go() -> list[dict[str, Any]] | int:
        async with deployment_for(data_dir, broker, existing=True) as deployment:
            admin = deployment.app.admin
            if preview:
                return admin.retention_candidates(now) if which == "retention" else admin.compaction_candidates(now)
            with PipelineProgress("requests", None) as progress:
                n = await (admin.retention(now) if which == "retention" else admin.compaction(now))
                progress("events", n)  # all published: the total is known
                await deployment.settle(progress=progress)
            return n

    return run(go())


def retention(data_dir: DataDir = DEFAULT_DATA_DIR, preview: Preview = False, broker: BrokerOpt = None) -> None:
    """Forget memories past their layer's retention (ALTM_RETENTION_DAYS_L0..L4); pinned ones are exempt."""
    result = _maintenance(data_dir, broker, preview, "retention")
    if isinstance(result, list):
        for c in result:
            console.print(shown(f"would forget {c['memory_id']} ({c['layer']} {c['kind']}, {c['valid_from']}): "
                                f"{str(c['content'])[:80]}"))
        console.print(f"{len(result)} memories past retention (preview: nothing changed)")
    else:
        console.print(f"forgot {result} memories (pinned ones are exempt)")


def compaction(data_dir: DataDir = DEFAULT_DATA_DIR, preview: Preview = False, broker: BrokerOpt = None) -> None:
    """Move idle memories down compression levels C1..C4 (pinned and recently used ones stay at C0)."""
    result = _maintenance(data_dir, broker, preview, "compaction")
    if isinstance(result, list):
        for c in result:
            console.print(f"{c['memory_id']} ({c['layer']}): C{c['lc_compression']} -> C{c['level']} "
                          f"after {c['idle_days']} idle days")
        console.print(f"{len(result)} level changes (preview: nothing changed)")
    else:
        console.print(f"{result} memories changed compression level")


def sweep(data_dir: DataDir = DEFAULT_DATA_DIR, broker: BrokerOpt = None) -> None:
    """Verify every L2 memory that was never verified or changed since its verdict (no reads needed)."""

    async def go() -> int:
        async with deployment_for(data_dir, broker, existing=True) as deployment:
            with PipelineProgress("verifications", None) as progress:
                n = await deployment.app.admin.sweep(limit=100_000)
                progress("events", n)  # all published: the total is known
                await deployment.settle(progress=progress)
            return n

    console.print(f"verified {run(go())} memories")


def optimize(data_dir: DataDir = DEFAULT_DATA_DIR) -> None:
    """Build the vector index's HNSW graphs (run after large ingests; queries work without it, slower)."""
    settings = resolve(settings_for(data_dir))
    try:
        _require_data_dir(settings.bus, data_dir)  # a mistyped --data-dir is refused, not given an index
        index = open_vectors(settings, _embedding(settings))
    except DataDirError as exc:
        fail(str(exc))
    except VectorIndexBusy as exc:
        fail(f"{exc}: stop the pipeline (altm ingest, altm serve) before optimising its index")
    if index is None:
        fail("no embedder configured (ALTM_EMBEDDER=none): there is no vector index")
    try:
        with console.status("optimising the vector index…"):
            index.optimize()
    finally:
        index.close()
    console.print("vector index optimised")


def replay(
    data_dir: DataDir = DEFAULT_DATA_DIR,
    into: Annotated[Path, typer.Option("--into", help="A fresh data dir to rebuild into")] = Path("altm-replay"),
    broker: Annotated[str | None, typer.Option(help="kafka://HOST:PORT: replay the Kafka topics instead")] = None,
    from_offset: Annotated[int, typer.Option("--from-offset", min=0)] = 0,
    from_time: Annotated[datetime | None, typer.Option("--from-time", help="Events from this time on")] = None,
    cache_from: Annotated[Path | None, typer.Option("--cache-from", help="Reuse the LLM cache of a data dir")] = None,
) -> None:
    """Re-derive everything from the turns and control events (of DATA_DIR's log, or of Kafka with --broker)
    into a fresh data dir."""
    with PipelineProgress("events", None) as progress:
        summary = run(replay_into(data_dir, into, settings=settings_for(data_dir), broker=broker,
                                  from_offset=from_offset, from_time=from_time, cache_from=cache_from,
                                  progress=progress))
    console.print(f"replayed {summary.events} events ({summary.records_processed} records processed) in "
                  f"{summary.seconds:.1f} s: {summary.events_per_s:.1f} events/s")
    if summary.skipped:
        console.print(f"skipped {summary.skipped} records an erasure shredded (their keys are destroyed)")
    console.print(f"state hash: {state_hash(into)}")


def _queue(data_dir: Path, scope: str, limit: int) -> dict[str, Any]:
    parsed = parse_scope(scope)

    async def go() -> dict[str, Any]:
        async with open_read_only(settings_for(data_dir)) as deployment:
            return deployment.app.review_queue(parsed, limit=limit)

    return run(go())


def review_list(data_dir: DataDir = DEFAULT_DATA_DIR, scope: ScopeOpt = "", json: Json = False) -> None:
    """Items waiting for a decision, for the user of SCOPE."""
    queue = _queue(data_dir, scope, 50)
    if json:
        emit_json(queue)
        return
    table = Table(title="review queue")
    for col in ("item", "what", "why"):
        table.add_column(col, overflow="fold")
    for m in queue["memories"]:
        table.add_row(shown(m["item_id"]), shown(f"{m['layer']} {m['kind']} ({m['trust_status']}): {m['content']}"),
                      shown(m["trust_reason"] or ""))
    for a in queue["held_actions"]:
        table.add_row(shown(a["item_id"]), shown(f"held {a['action']} of {a['target_ids']}"), shown(a["reason"]))
    for r in queue["rejections"]:
        table.add_row(shown(r["item_id"]), shown(f"rejected proposal {r['proposal_id']}"), shown(r["reason"]))
    console.print(table)


def review_show(item: Annotated[str, typer.Argument(help="mem_…, act_… or rej_… (as the review queue lists it)")],
                data_dir: DataDir = DEFAULT_DATA_DIR, scope: ScopeOpt = "") -> None:
    """One review item, as JSON."""
    for group in _queue(data_dir, scope, 1000).values():
        for entry in group:
            if entry["item_id"] == item:
                emit_json(entry)
                return
    fail(f"{item} is not in the review queue of {parse_scope(scope).home}")


def _decide(item: str, decision: str, data_dir: Path, scope: str, note: str | None, broker: str | None) -> None:
    parsed = parse_scope(scope)

    async def go() -> str:
        async with deployment_for(data_dir, broker, existing=True) as deployment:
            request = await deployment.app.admin.review_decide(parsed, item, decision, note)
            return await _applied(deployment, request, "decision")

    console.print(shown(run(go()) or f"{decision}d {item}"))


def review_approve(item: Annotated[str, typer.Argument()], data_dir: DataDir = DEFAULT_DATA_DIR,
                   scope: ScopeOpt = "", note: Annotated[str | None, typer.Option()] = None,
                   broker: BrokerOpt = None) -> None:
    """Approve: a memory becomes verified (ground truth); a held action is carried out."""
    _decide(item, "approve", data_dir, scope, note, broker)


def review_reject(item: Annotated[str, typer.Argument()], data_dir: DataDir = DEFAULT_DATA_DIR,
                  scope: ScopeOpt = "", note: Annotated[str | None, typer.Option()] = None,
                  broker: BrokerOpt = None) -> None:
    """Reject: a memory leaves recall (kept for the audit); a held action or rejection is dismissed."""
    _decide(item, "reject", data_dir, scope, note, broker)


def governance_list(data_dir: DataDir = DEFAULT_DATA_DIR, scope: ScopeOpt = "") -> None:
    """Every decision's steps (evaluated → decided → applied / held / rolled_back), oldest first."""
    parsed = parse_scope(scope)

    async def go() -> list[dict[str, Any]]:
        async with open_read_only(settings_for(data_dir)) as deployment:
            return deployment.app.governance_events(parsed)

    table = Table(title="governance events")
    for col in ("decision id", "decision", "step", "reason"):
        table.add_column(col, overflow="fold")
    for e in run(go()):
        table.add_row(*(shown(v) for v in (e["decision_id"], e["decision"], e["step"], e["reason"])))
    console.print(table)


def governance_preview(data_dir: DataDir = DEFAULT_DATA_DIR, broker: BrokerOpt = None) -> None:
    """What retention would forget and compaction would compress now; changes nothing."""
    retention(data_dir=data_dir, preview=True, broker=broker)
    compaction(data_dir=data_dir, preview=True, broker=broker)


def governance_rollback(
    decision_id: Annotated[str, typer.Argument(help="A decision id from `altm governance list`")],
    data_dir: DataDir = DEFAULT_DATA_DIR,
    scope: ScopeOpt = "",
    reason: Annotated[str, typer.Option()] = "rolled back by an operator",
    broker: BrokerOpt = None,
) -> None:
    """Restore the rows a decision changed, from the audit log (a control event the writer applies)."""
    parsed = parse_scope(scope)

    async def go() -> str:
        async with deployment_for(data_dir, broker, existing=True) as deployment:
            request = await deployment.app.admin.rollback(parsed, decision_id, reason)
            return await _applied(deployment, request, "rollback")

    console.print(shown(run(go()) or f"rolled back {decision_id}"))


def register(app: typer.Typer) -> None:
    for command in (erase, retention, compaction, sweep, optimize, replay):
        app.command()(command)
    review_app.command("list")(review_list)
    review_app.command("show")(review_show)
    review_app.command("approve")(review_approve)
    review_app.command("reject")(review_reject)
    app.add_typer(review_app, name="review")
    gov_app.command("list")(governance_list)
    gov_app.command("preview")(governance_preview)
    gov_app.command("rollback")(governance_rollback)
    app.add_typer(gov_app, name="governance")
