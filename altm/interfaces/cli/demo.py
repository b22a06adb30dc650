"""``altm demo``: the sample conversation through the embedded pipeline, then recall across sessions."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.panel import Panel
from rich.text import Text

from altm.app import PreparedTurn
from altm.core import Scope
from altm.interfaces.cli._common import DataDir, console, run, sample_path, settings_for, shown
from altm.interfaces.cli.ingest import ingest_into, print_summary
from altm.interfaces.cli.inspect import stats
from altm.wiring import open_embedded, state_hash

DEMO_QUESTIONS = (
    ("s4-t1", "What is the current deadline for the billing migration?"),
    ("s4-t2", "How should I run the refund batch so it doesn't lock the database?"),
    ("s4-t3", "How does Dana want pull requests and tests written?"),
)


def demo(
    data_dir: DataDir = Path("altm-demo"),
    fresh: Annotated[bool, typer.Option(help="Start from an empty data dir")] = True,
    token_budget: Annotated[int, typer.Option(min=64)] = 600,
) -> None:
    """Ingest the sample multi-session conversation on the embedded defaults, then recall across sessions."""
    if fresh and data_dir.exists():
        shutil.rmtree(data_dir)
    console.rule(Text("ALTM demo — embedded runtime, no servers, no model", style="bold"))
    console.print(f"sample: {sample_path()}\ndata dir: {data_dir}")
    settings = settings_for(data_dir)
    print_summary(run(ingest_into(settings, sample_path())))
    stats(data_dir=data_dir, json=False)
    scope = Scope.parse("acme/platform/dana/coder")
    console.rule(Text("prepare_turn in a new session (s4): memories from sessions s1–s3", style="bold"))

    async def ask() -> list[tuple[str, PreparedTurn]]:
        out = []
        async with open_embedded(settings) as deployment:
            for turn_id, question in DEMO_QUESTIONS:
                out.append((question, await deployment.app.prepare_turn(scope, "s4", turn_id, question,
                                                                        token_budget)))
            await deployment.settle()
        return out

    for question, prepared in run(ask()):
        _show(question, prepared)
    console.print(f"\nstate hash: {state_hash(data_dir, settings)}")


def _show(question: str, prepared: Any) -> None:
    bundle = prepared.bundle
    console.print(Text.assemble("\n", ("user:", "bold cyan"), f" {shown(question)}   ",
                                (f"(cycle {prepared.cycle_id})", "dim")))
    # memory content is untrusted text: a Text, never markup; folded at the panel's edge, never cropped
    console.print(Panel(Text(bundle.rendered, overflow="fold"), title=f"context bundle: {len(bundle.items)} "
                        f"memories, {bundle.tokens}/{bundle.token_budget} tokens", expand=False), soft_wrap=False)
    for item in bundle.items:
        ranks = ", ".join(f"{c}#{r}" for c, r in sorted(item.channels.items()))
        fusion = "score" if "score" in item.breakdown else "rrf"
        console.print(Text(f"  {item.layer} {item.kind} from session {item.session_id or '*'}: "
                           f"score {item.score:.4f} = {fusion} {item.breakdown[fusion]:.4f} × trust "
                           f"{item.breakdown['trust']} × lifecycle {item.breakdown['lifecycle']} ({ranks})",
                           style="dim"))


def register(app: typer.Typer) -> None:
    app.command()(demo)
