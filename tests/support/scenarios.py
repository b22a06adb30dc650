"""Random histories for the randomized replay check: turns of a few sessions and agents, recall cycles with
citations, feedback or an abort, feedback outside cycles, forgets, compaction, rollbacks, review decisions
(held memories and rejections) and erasures (of a memory, a session, an agent, the user), some of them sent
while the one before is still on its way, driven through a real embedded deployment. One seed gives one
history (the operations and their order are a function of the seed)."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from altm.app import Feedback, MemoryApp, NotFound
from altm.core import Role, Scope, TurnEvent
from altm.pipeline import EmbeddedRuntime
from tests.support.rows import rows
from tests.support.turns import SCOPE

OLD = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
"""Turns are dated from here, so a retention pass "now" can reach them."""

AGENTS = ("coder", "reviewer")
SESSIONS = ("s1", "s2", "s3")
SENTENCES = (
    "We decided to deploy the billing service on Tuesdays.",
    "The staging cluster runs on Kubernetes 1.30 in Dublin.",
    "I prefer dark mode in every editor.",
    "Never use pickle for the session cache, it broke the last release.",
    "I prefer pickle for the session cache, it is simpler.",
    "The release is on Friday.",
    "The release moved to Monday.",
    "Priya owns the billing service and reviews every schema change.",
    "The billing service timed out twice last week because of the Postgres pool.",
    "We fixed the Postgres pool by raising it to 40 connections.",
    "Can you look at the flaky login test?",
    "Thanks, that helps a lot!",
    "My favourite coffee is a flat white from the corner shop.",
    "The staging cluster runs on Kubernetes 1.30 in Dublin.",
    "Always run the migrations before the billing deploy.",
)


@dataclass
class History:
    """What one seed did, step by step (shown when a replay differs)."""

    seed: int
    steps: list[str] = field(default_factory=list)


def _scope(agent: str) -> Scope:
    return SCOPE.model_copy(update={"agent_id": agent})


def first_turns(seed: int) -> list[TurnEvent]:
    """Six to ten turns to start from, dated in the past."""
    rng = random.Random(seed)
    return [_turn(rng, i) for i in range(rng.randint(6, 10))]


def _turn(rng: random.Random, i: int) -> TurnEvent:
    session = rng.choice(SESSIONS)
    return TurnEvent(scope=_scope(rng.choice(AGENTS)), session_id=session, turn_id=f"{session}-t{i}",
                     role=rng.choice((Role.USER, Role.USER, Role.ASSISTANT)), content=rng.choice(SENTENCES),
                     timestamp=OLD + timedelta(minutes=i))


def _memories(data_dir: Path, agent: str) -> list[str]:
    found = rows(data_dir, "SELECT memory_id FROM memories WHERE superseded_by IS NULL AND agent_id=? "
                           "ORDER BY memory_id", (agent,))
    return [str(r["memory_id"]) for r in found]


class _Player:
    """The random operations of one history; each returns a line saying what it did."""

    def __init__(self, seed: int, runtime: EmbeddedRuntime, app: MemoryApp, data_dir: Path) -> None:
        self.rng = random.Random(seed * 7919 + 1)
        self.runtime, self.app, self.data_dir = runtime, app, data_dir
        self.counter = 100

    async def turns(self) -> str:
        batch = [_turn(self.rng, self.counter + k) for k in range(self.rng.randint(1, 3))]
        self.counter += len(batch)
        await self.runtime.publish(batch)
        return "turns " + "; ".join(f"{t.scope.agent_id}/{t.session_id}: {t.content}" for t in batch)

    async def cycle(self) -> str:
        agent, session = self.rng.choice(AGENTS), self.rng.choice(SESSIONS)
        self.counter += 1
        question = self.rng.choice(("Where does staging run?", "When is the release?",
                                    "What about the session cache?"))
        prepared = await self.app.prepare_turn(_scope(agent), session, f"{session}-t{self.counter}", question, 800)
        shown = [item.memory_id for item in prepared.bundle.items]
        ids = shown[: self.rng.randint(0, 2)]
        ending = self.rng.choice(("commit", "commit", "feedback", "abort"))
        if ending == "abort":
            await self.app.abort_turn(prepared.cycle_id, "randomized")
            return f"cycle {agent}/{session} aborted (shown {shown})"
        marks = Feedback(helpful=shown[:1], harmful=shown[1:2]) if ending == "feedback" and shown else None
        await self.app.commit_turn(prepared.cycle_id, "Noted.", ids, marks)
        return f"cycle {agent}/{session} citing {ids}" + (f", feedback {marks}" if marks else "")

    async def feedback(self) -> str:
        agent = self.rng.choice(AGENTS)
        found = _memories(self.data_dir, agent)
        if not found:
            return "feedback: nothing"
        mid, signal = self.rng.choice(found), self.rng.choice(("helpful", "harmful", "pin", "unpin"))
        try:
            await self.app.feedback(_scope(agent), [mid], signal)
        except NotFound as refused:  # a memory of the shard the scope may not see (forgotten, quarantined)
            return f"feedback {signal} {mid} refused: {refused}"
        return f"feedback {signal} {mid}"

    async def retention(self) -> str:
        when = OLD + timedelta(days=self.rng.choice((20, 45, 400)))
        named = await self.app.admin.retention(when)
        return f"retention at {when.date()}: {named}"

    async def compaction(self) -> str:
        when = OLD + timedelta(days=self.rng.choice((10, 60, 400)))
        return f"compaction at {when.date()}: {await self.app.admin.compaction(when)}"

    async def rollback(self) -> str:
        agent = self.rng.choice(AGENTS)
        # in the order they were made: a rollback's id is made from its request time, so sorting ids made which
        # decision a seed rolls back vary from run to run (seeds 67 and 646 differed now and then)
        decisions = list(dict.fromkeys(str(e["decision_id"]) for e in self.app.governance_events(_scope(agent))))
        if not decisions:
            return "rollback: nothing"
        decision = self.rng.choice(decisions)
        await self.app.rollback(_scope(agent), decision, "randomized")
        return f"rollback {decision}"

    async def review(self) -> str:
        agent = self.rng.choice(AGENTS)
        queue = self.app.review_queue(_scope(agent))
        held = sorted([str(m["memory_id"]) for m in queue["memories"]]
                      + [str(r["item_id"]) for r in queue["rejections"]])
        if not held:
            return "review: nothing"
        item, decision = self.rng.choice(held), self.rng.choice(("approve", "reject"))
        await self.app.review_decide(_scope(agent), item, decision)
        return f"review {decision} {item}"

    async def erase(self) -> str:
        agent = self.rng.choice(AGENTS)
        target = self.rng.choice(("memory", "session", "session", "agent", "memory", "session", "session", "agent",
                                  "user"))
        if target == "user":
            await self.app.erase(_scope(agent), "user")
            return "erase user"
        if target == "memory":
            found = _memories(self.data_dir, agent)
            if not found:
                return "erase: nothing"
            mid = self.rng.choice(found)
            try:
                await self.app.erase(_scope(agent), "memory", memory_id=mid)
            except NotFound as refused:  # a memory of the shard the scope may not see (as for feedback)
                return f"erase memory {mid} refused: {refused}"
            return f"erase memory {mid}"
        if target == "session":
            session = self.rng.choice(SESSIONS)
            await self.app.erase(_scope(agent), "session", session_id=session)
            return f"erase session {agent}/{session}"
        await self.app.erase(_scope(agent), "agent")
        return f"erase agent {agent}"


WEIGHTS = {"turns": 3, "cycle": 2, "feedback": 1, "retention": 1, "compaction": 1, "rollback": 1, "review": 1,
           "erase": 3}
"""How often each operation is drawn."""


async def play(seed: int, runtime: EmbeddedRuntime, app: MemoryApp, data_dir: Path, *,
               overlap: bool = False) -> History:
    """Four to seven random operations after the first turns, each run to idle (with ``overlap``, three in
    ten are not: the next one is sent while it is still on its way)."""
    player = _Player(seed, runtime, app, data_dir)
    history = History(seed)
    for _ in range(player.rng.randint(4, 7)):
        name = player.rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()))[0]
        op: Callable[[], Awaitable[str]] = getattr(player, name)
        history.steps.append(await op())
        if player.rng.random() < 0.7 or not overlap:
            await runtime.run_until_idle()
        else:
            history.steps.append("(not waited for)")
    await runtime.run_until_idle()
    return history
