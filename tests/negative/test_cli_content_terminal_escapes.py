"""``altm memories`` and ``altm review list`` write a memory's terminal escape sequences and bidi controls to the
operator's terminal as they are.

Finding (red team, what the CLI prints): ``memories`` (altm/interfaces/cli/inspect.py:96-98) and ``review list``
(altm/interfaces/cli/admin.py:200-207) put memory content, attacker-controlled text, into a Rich table cell
unfiltered. Rich's own ``strip_control_codes`` removes only BEL, BS, VT, FF and CR; ESC (``\\x1b``) and the
Unicode bidi overrides/isolates pass through to stdout. The context bundle escapes exactly these characters
(altm/recall/context/_bundle.py:104-110, tests/negative/test_bundle_control_characters.py), but the operator's
listings of the same memories do not.

Reproduction: a tool output ``"build ok \\x1b]52;c;<base64>\\x1b\\\\ \\x1b[1A\\x1b[2K\\x1b[1Gdeleted … \\u202eabc"``
stored in L0; ``altm memories`` (or, once it is contradicted and queued, ``altm review list --scope S``) prints
the bytes as they are: on a terminal OSC 52 writes the attacker's text to the operator's clipboard (pasted into a
shell next), ``CSI 1A``/``2K`` move up and erase the previous table line (another memory's row disappears, a
forged "deleted" status is drawn in its place), and U+202E shows the rest of the cell reversed.

Expected: what these commands print carries no C0/C1 control character other than the newlines the table draws,
and no bidi embedding/override/isolate control: such characters are shown visibly (``\\x1b``, ``\\u202e``) or
replaced, as the bundle does; ``--json`` and drilldown keep the original.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

from typer.testing import CliRunner

from altm.core import Role, TurnEvent
from altm.core.settings import Settings
from altm.interfaces.cli import app as cli
from tests.support.memories import store_with
from tests.support.turns import SCOPE, make_turn

ENV = {"ALTM_EMBEDDER": "none", "COLUMNS": "400"}
runner = CliRunner()
HOSTILE = ("The launch deadline is May 1, 2027. \x1b]52;c;cm0gLXJmIH4K\x1b\\ \x1b[1A\x1b[2K\x1b[1Gdeleted "
           "\u202eyrtne deifirev\u202c \u2066x\u2069")
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _store(settings: Settings, turns: Sequence[TurnEvent]) -> Settings:
    s = settings.model_copy(update={"embedder": "none"})

    async def go() -> None:
        async with store_with(s, turns):
            pass

    asyncio.run(go())
    return s


def _found(output: str) -> list[str]:
    return sorted({f"U+{ord(c):04X}" for c in CONTROL.findall(output)})


def test_altm_memories_writes_no_terminal_control_characters(settings: Settings) -> None:
    s = _store(settings, [make_turn(1, HOSTILE, role=Role.TOOL)])
    result = runner.invoke(cli, ["memories", "--data-dir", str(s.data_dir), "--layer", "L0"], env=ENV, color=True)
    assert result.exit_code == 0, repr(result.exception)
    assert "launch deadline" in result.output
    assert _found(result.output) == [], f"written to the terminal as they are: {result.output!r}"


def test_altm_review_list_writes_no_terminal_control_characters(settings: Settings) -> None:
    s = _store(settings, [make_turn(1, HOSTILE, role=Role.TOOL),
                          make_turn(2, "The launch deadline is June 2, 2027.", role=Role.TOOL)])
    result = runner.invoke(cli, ["review", "list", "--data-dir", str(s.data_dir), "--scope", SCOPE.path], env=ENV,
                           color=True)
    assert result.exit_code == 0, repr(result.exception)
    assert "May 1, 2027" in result.output  # the contradicted atom, queued for the user's review
    assert _found(result.output) == [], f"written to the terminal as they are: {result.output!r}"
