"""Terminal output: the colour rules (NO_COLOR only when non-empty, FORCE_COLOR, TERM=dumb, --no-color),
live progress only on a capable terminal, tables laid out by rich without trailing blanks, and escaping."""

from __future__ import annotations

import io
import re

import pytest

from reconciler.cli.console import color_enabled, live_progress, make_console, print_blocks, print_lines
from reconciler.cli.progress import ConsoleProgress
from reconciler.render.styled import Table, line

ANSI = re.compile(r"\x1b\[[0-9;]*m")


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("env", "tty", "flag", "expected"),
    [
        ({}, True, False, True),  # a terminal: colour
        ({}, False, False, False),  # a pipe: none
        ({"NO_COLOR": "1"}, True, False, False),  # no-color.org: set and non-empty
        ({"NO_COLOR": ""}, True, False, True),  # empty counts as unset
        ({"FORCE_COLOR": "1"}, False, False, True),  # force-color.org: even into a pipe
        ({"FORCE_COLOR": ""}, False, False, False),  # empty counts as unset
        ({"FORCE_COLOR": "0"}, False, False, True),  # any non-empty value forces (force-color.org)
        ({"TERM": "dumb"}, True, False, False),  # a dumb terminal gets none
        ({"TERM": "dumb", "FORCE_COLOR": "1"}, True, False, True),  # unless forced
        ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False, False),  # NO_COLOR wins over FORCE_COLOR
        ({"FORCE_COLOR": "1"}, True, True, False),  # --no-color wins over everything
    ],
)
def test_colour_rules(env: dict[str, str], tty: bool, flag: bool, expected: bool) -> None:
    assert color_enabled(env, tty, flag) is expected
    stream = FakeTerminal() if tty else io.StringIO()
    print_lines(make_console(stream, flag, env), [line("+ key = 1", "plan.add")])
    assert ("\x1b[" in stream.getvalue()) is expected
    assert ANSI.sub("", stream.getvalue()) == "+ key = 1\n"


def test_live_progress_needs_a_terminal_that_redraws() -> None:
    assert live_progress({}, True)
    assert not live_progress({}, False)
    assert not live_progress({"TERM": "dumb"}, True)
    assert not live_progress({"FORCE_COLOR": "1"}, False)  # colour in a CI log, but no animation


def test_tables_are_aligned_by_rich_without_trailing_blanks() -> None:
    stream = io.StringIO()
    table = Table(("CLUSTER", "STATUS"), ((("a", None), ("applied", "plan.add")), (("long-name", None),
                                                                                      ("failed", None))), "title")
    print_blocks(make_console(stream, env={}), [table])
    assert stream.getvalue() == "title\nCLUSTER    STATUS\na          applied\nlong-name  failed\n"


def test_text_from_manifests_is_escaped_and_never_markup() -> None:
    stream = FakeTerminal()
    print_lines(make_console(stream, env={}), [line("topic [bold]x[/bold] \x1b[2J\u202eevil", "plan.add")])
    shown = ANSI.sub("", stream.getvalue())
    assert shown == "topic [bold]x[/bold] \\x1b[2J\\u202eevil\n"
    assert "\x1b[2J" not in stream.getvalue() and "\u202e" not in stream.getvalue()


def test_progress_off_a_terminal_is_one_line_per_finished_phase() -> None:
    stream = io.StringIO()
    progress = ConsoleProgress(make_console(stream, env={}))
    with progress.phase("c1: read ZooKeeper zk:2181") as phase:
        for done in range(0, 5000, 1000):
            phase.update(done, 5000)
        phase.done("5000 znodes")
    with pytest.raises(RuntimeError), progress.phase("c1: plan"):
        raise RuntimeError("failed")  # a failed phase prints nothing: its error does
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and re.fullmatch(r"c1: read ZooKeeper zk:2181: 5000 znodes \(\d+\.\d s\)", lines[0])


def test_progress_on_a_terminal_draws_a_bar_then_keeps_the_line() -> None:
    stream = FakeTerminal()
    console = make_console(stream, env={"TERM": "xterm"})
    assert console.is_interactive
    progress = ConsoleProgress(console)
    with progress.phase("c1: apply plan abc", total=3) as phase:
        phase.update(2, 3)
        assert progress.bar is not None  # live while the phase runs
        phase.done("3 batches")
    assert progress.bar is None
    assert "c1: apply plan abc: 3 batches" in ANSI.sub("", stream.getvalue())


def _rich_layout(table: Table) -> str:
    from reconciler.cli.console import to_rich_table

    console = make_console(io.StringIO(), env={})
    with console.capture() as captured:
        console.print(to_rich_table(table))
    return "".join(row.rstrip() + "\n" for row in captured.get().splitlines())


def test_plain_tables_are_laid_out_as_rich_lays_them_out() -> None:
    """Without colour, ASCII tables skip rich (1 ms a row): the same text, byte for byte; others go to rich."""
    import random

    from reconciler.cli.console import plain_table

    rng = random.Random(18)
    fast = 0
    for _ in range(300):
        columns = tuple("name" * rng.randint(0, 2) + str(i) * rng.randint(0, 1) for i in range(rng.randint(1, 5)))
        rows = tuple(tuple(("".join(rng.choice("ab -[x]\x1b…é") for _ in range(rng.randint(0, 12))),
                            rng.choice([None, "plan.add"])) for _ in columns) for _ in range(rng.randint(0, 6)))
        table = Table(columns, rows)
        out = io.StringIO()
        print_blocks(make_console(out, env={}), [table])
        assert out.getvalue() == _rich_layout(table), table
        fast += plain_table(table, 10_000) is not None
    assert 20 < fast < 280  # both paths were taken
    narrow = Table(("cluster", "detail"), ((("c1", None), ("x" * 50, None)),))
    assert plain_table(narrow, 40) is None  # rich folds to a terminal's width


def test_plain_console_writes_what_rich_writes() -> None:
    """Without colour or live progress the CLI skips rich (cli/plain.py): the same bytes, escaping included."""
    from reconciler.cli.plain import PlainConsole, wants_rich, write_plain_lines

    lines = [line("topic [bold]x[/bold] \x1b[2J\u202eevil\tq", "plan.add"), line("é 中文 " + "w" * 300, None)]
    with_rich, plain = io.StringIO(), io.StringIO()
    print_lines(make_console(with_rich, env={}), lines)
    write_plain_lines(plain, lines)
    assert plain.getvalue() == with_rich.getvalue()
    label = "c1: read [red]ZooKeeper\x1b[0m \u202e" + "z" * 12_000  # wider than any console
    outputs = []
    for console in (make_console(io.StringIO(), env={}), PlainConsole(io.StringIO(), lambda: make_console(
            io.StringIO(), env={}))):
        with ConsoleProgress(console).phase(label) as phase:
            phase.done("5 znodes\tx")
        assert isinstance(console.file, io.StringIO)
        outputs.append(re.sub(r"\(\d+\.\d s\)", "(s)", console.file.getvalue()))
    assert outputs[0] == outputs[1] and outputs[1].count("\n") == 1
    assert not wants_rich(io.StringIO(), env={}) and wants_rich(FakeTerminal(), env={"TERM": "xterm"})
    assert wants_rich(io.StringIO(), env={"FORCE_COLOR": "1"})
    assert not wants_rich(FakeTerminal(), True, {"TERM": "dumb"})
