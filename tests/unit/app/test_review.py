"""The review queue and its consumer: decisions are control events the writer applies; replay keeps them."""

from __future__ import annotations

from pathlib import Path

import orjson
from typer.testing import CliRunner

from altm.core import encode
from altm.interfaces.cli import app
from altm.wiring import replay_into, state_hash
from tests.support.turns import make_turn

runner = CliRunner()
SCOPE = "acme/platform/dana/coder"


def _ingest(data: Path, tmp: Path) -> None:
    turns = [make_turn(1, "The deadline is December 15.", session="s1"),
             make_turn(2, "The deadline is January 10.", session="s2"),  # a conflict without a correction cue
             make_turn(3, "I prefer dark mode in every editor.", session="s1"),
             make_turn(4, "I prefer light mode in every editor.", session="s2")]  # a deferred supersede
    src = tmp / "turns.jsonl"
    src.write_bytes(b"\n".join(encode(t) for t in turns))
    assert runner.invoke(app, ["ingest", "--data-dir", str(data), str(src)]).exit_code == 0


def _queue(data: Path) -> dict[str, list[dict[str, object]]]:
    result = runner.invoke(app, ["review", "list", "--data-dir", str(data), "--scope", SCOPE, "--json"])
    assert result.exit_code == 0, result.output
    return orjson.loads(result.output)  # type: ignore[no-any-return]


def test_contradictions_and_held_actions_are_queued_without_any_read(tmp_path: Path) -> None:
    data = tmp_path / "d"
    _ingest(data, tmp_path)
    queue = _queue(data)
    contents = {m["content"]: m for m in queue["memories"]}
    assert contents["The deadline is December 15."]["trust_status"] == "contradicted"
    assert contents["The deadline is January 10."]["trust_status"] == "uncertain"
    (action,) = queue["held_actions"]
    assert action["action"] == "supersede"


def test_decisions_through_the_cli_change_rows_and_survive_replay(tmp_path: Path) -> None:
    data = tmp_path / "d"
    _ingest(data, tmp_path)
    queue = _queue(data)
    newer = next(m for m in queue["memories"] if m["content"] == "The deadline is January 10.")
    older = next(m for m in queue["memories"] if m["content"] == "The deadline is December 15.")
    action = queue["held_actions"][0]
    for verb, item in (("approve", newer["item_id"]), ("reject", older["item_id"]),
                       ("approve", action["item_id"])):
        result = runner.invoke(app, ["review", verb, str(item), "--data-dir", str(data), "--scope", SCOPE,
                                     "--note", "checked with the user"])
        assert result.exit_code == 0, result.output
    after = _queue(data)
    assert after["memories"] == [] and after["held_actions"] == []
    listed = runner.invoke(app, ["memories", "--data-dir", str(data), "--scope", SCOPE, "--json", "--limit", "200"])
    rows = {r["content"]: r for r in orjson.loads(listed.output)}
    assert "The deadline is January 10." in rows
    query = runner.invoke(app, ["query", "--data-dir", str(data), "--scope", SCOPE, "--session", "s3",
                                "--preset", "lexical", "--json", "deadline December"])
    contents = [r["content"] for r in orjson.loads(query.output)["results"]]
    assert "The deadline is December 15." not in contents  # rejected by the reviewer: out of recall
    facets = runner.invoke(app, ["query", "--data-dir", str(data), "--scope", SCOPE, "--session", "s3",
                                 "--preset", "lexical", "--json", "editor mode dark light"])
    l4 = [r["content"] for r in orjson.loads(facets.output)["results"] if r["layer"] == "L4"]
    assert l4 and all("light" in c for c in l4)  # the approved supersede was carried out
    # the decisions are on the log: a replay into a fresh dir reproduces them
    fresh = tmp_path / "fresh"
    import asyncio

    asyncio.run(replay_into(data, fresh))
    assert state_hash(fresh) == state_hash(data)


def test_a_decision_on_an_unknown_item_is_refused_with_the_reason(tmp_path: Path) -> None:
    data = tmp_path / "d"
    _ingest(data, tmp_path)
    result = runner.invoke(app, ["review", "approve", "act_" + "0" * 32, "--data-dir", str(data), "--scope", SCOPE])
    assert result.exit_code == 1 and "no held action" in result.output
    result = runner.invoke(app, ["review", "approve", "bogus", "--data-dir", str(data), "--scope", SCOPE])
    assert result.exit_code == 1


def test_a_held_action_is_decided_only_in_its_own_workspace(tmp_path: Path) -> None:
    """Red-team note on the browser review: the writer checked a held action's tenant and user, not its
    workspace; a decision from another workspace of the same tenant and user whose home shares the partition
    reached it."""
    from altm.core import Settings, partition_for

    data = tmp_path / "d"
    _ingest(data, tmp_path)
    (action,) = _queue(data)["held_actions"]
    partitions = Settings().partitions
    home = partition_for("acme/platform/dana", partitions)
    other = next(w for w in (f"ws{i}" for i in range(1000)) if partition_for(f"acme/{w}/dana", partitions) == home)
    for verb in ("approve", "reject"):  # a rejection from there used to dismiss it
        result = runner.invoke(app, ["review", verb, str(action["item_id"]), "--data-dir", str(data),
                                     "--scope", f"acme/{other}/dana/coder"])
        assert result.exit_code == 1 and "no held action" in result.output  # and no other scope's path
        assert "acme/platform/dana" not in result.output
    assert _queue(data)["held_actions"][0]["status"] == "pending"
