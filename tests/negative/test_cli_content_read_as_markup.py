"""``altm memories`` and ``altm review list`` read memory content as Rich markup: one stored ``[/]`` crashes both
commands for every listing, and ``[conceal]``/``[link=…]`` rewrite what the operator is shown.

Finding (red team, what the CLI prints): ``memories`` (altm/interfaces/cli/inspect.py:96-98) and ``review list``
(altm/interfaces/cli/admin.py:200-207) pass memory content, a plain ``str``, to ``rich.table.Table.add_row``; the
shared ``console`` (altm/interfaces/cli/_common.py:26) renders a ``str`` cell with ``markup=True``. Memory content
is attacker-controlled text (a user message, a tool's output: a fetched web page). Rich parses it:

* a closing tag that closes nothing (``[/]``, ``[/bold]``) raises ``rich.errors.MarkupError`` out of
  ``console.print``: the command dies with exit 1 and a traceback, printing no row at all. One hostile tool output
  makes ``altm memories`` (every scope, the operator's view) and the user's ``altm review list`` unusable until the
  memory is erased — which the operator now has to do blind;
* tags that parse are applied and removed from the text: ``[conceal]`` hides its text on a terminal (SGR 8),
  ``[link=URL]`` makes a clickable hyperlink to an attacker's URL, ``[white on white]`` etc.; the operator is shown
  something other than what the memory holds, with no trace of the brackets.

The demo already prints content as text (tests/unit/interfaces/test_demo_output.py); these commands do not.

Reproduction: store a tool message ``"The launch deadline is May 1, 2027. [/]"`` and another giving June 2 (so the
first is contradicted and queued for review); run ``altm memories`` or ``altm review list --scope S``: exit 1,
``MarkupError: closing tag '[/]' … has nothing to close``. Store ``"note [conceal]pw=hunter2[/conceal] …"``: the
listing shows ``note pw=hunter2 …`` (concealed on a terminal), the brackets gone.

Expected: both commands exit 0 and show each memory's content as it is stored, brackets included (content passed
as ``rich.text.Text``, or escaped with ``rich.markup.escape``, never parsed as markup).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from typer.testing import CliRunner

from altm.core import Role, TurnEvent
from altm.core.settings import Settings
from altm.interfaces.cli import app as cli
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

ENV = {"ALTM_EMBEDDER": "none", "COLUMNS": "400"}  # wide enough that no cell folds
runner = CliRunner()
CLOSES_NOTHING = "The launch deadline is May 1, 2027. [/]"
REWRITTEN = "note [conceal]pw=hunter2[/conceal] see [link=https://evil.example/x]runbook[/link] end"


def _store(settings: Settings, turns: Sequence[TurnEvent]) -> Settings:
    s = settings.model_copy(update={"embedder": "none"})

    async def go() -> None:
        async with store_with(s, turns):
            pass

    asyncio.run(go())
    return s


def test_a_stray_closing_tag_in_a_memory_does_not_crash_altm_memories(settings: Settings) -> None:
    s = _store(settings, [make_turn(1, CLOSES_NOTHING, role=Role.TOOL)])
    result = runner.invoke(cli, ["memories", "--data-dir", str(s.data_dir), "--layer", "L0"], env=ENV)
    assert result.exit_code == 0, f"altm memories died on a memory's content: {result.exception!r}"
    assert CLOSES_NOTHING in result.output


def test_markup_in_a_memory_is_shown_as_written_by_altm_memories(settings: Settings) -> None:
    s = _store(settings, [make_turn(1, REWRITTEN)])
    result = runner.invoke(cli, ["memories", "--data-dir", str(s.data_dir), "--scope", SCOPE.path, "--layer", "L0"],
                           env=ENV)
    assert result.exit_code == 0, repr(result.exception)
    row = next(line for line in result.output.splitlines() if "note" in line)
    assert REWRITTEN in result.output, f"the operator is shown {row!r}, not the stored {REWRITTEN!r}"


def test_a_stray_closing_tag_in_a_contradicted_memory_does_not_crash_altm_review_list(settings: Settings) -> None:
    s = _store(settings, [make_turn(1, CLOSES_NOTHING, role=Role.TOOL),
                          make_turn(2, "The launch deadline is June 2, 2027.", role=Role.TOOL)])
    result = runner.invoke(cli, ["review", "list", "--data-dir", str(s.data_dir), "--scope", SCOPE.path], env=ENV)
    assert result.exit_code == 0, f"altm review list died on a memory's content: {result.exception!r}"
    assert CLOSES_NOTHING in result.output  # the contradicted atom, queued for the user's review
