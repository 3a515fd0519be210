"""GitHub Actions workflow commands (`::error file=…,line=…::message`): the ONE place that writes them, and
the ONE function that keeps every other line of output from being one (`neutralize`).

The runner reads every line of a step's output as a possible command, so text from a manifest (a key, a
file name, a value quoted in a message) must never be able to end the line it is on and start another
(`\\n::add-mask::…`, `::set-output`, `::stop-commands::`), nor add a property (`,line=1` in a file name).
Escaping follows the runner's own rules (actions/toolkit `command.ts`: `escapeData` for the message,
`escapeProperty` for property values).

Every other line: the runner (actions/runner `ActionCommandManager`) reads a line as a command when, after
`TrimStart()`, it starts with `::` (`ActionCommand.TryParseV2`), or when it contains `##[` followed by a
registered command name and `]` anywhere (`ActionCommand.TryParse`, the v1 syntax: `##[add-mask]x`,
`##[set-output name=a]b`). It splits output into lines at LF, CR and CRLF (`StreamReader.ReadLine`). So
`neutralize`, applied by the command line's stdout/stderr sink to everything it writes (`cli/plain.py`,
`CommandSafeStream`), turns the `:` of a `::` that begins a line (after whitespace, invisible format
characters and ANSI escape sequences) into `\\u003a`, and the `[` of every `##[` into `\\u005b`: a cluster
directory named `::add-mask::x` prints as `\\u003a:add-mask::x`. (Both forms are also valid JSON string
escapes of the same character, so a JSON artefact on stdout keeps its meaning.) Only `workflow_command`'s
own lines are written as commands, through the sink's `command` method. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from reconciler.errors import printable


def escape_data(text: str) -> str:
    """A command's message: `%`, CR and LF escaped (the runner un-escapes them for display)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (`file=`, `title=`): also `:` and `,`, which would end or add a property."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(command: str, message: str, properties: Mapping[str, object] | None = None) -> str:
    """`::command prop=value,…::message`, one line whatever `message` and the properties hold.

    Other control and bidi characters are escaped too (`printable`, after the runner's own escapes, so a
    newline still shows as one), so an annotation reads as written.
    """
    props = ",".join(
        f"{name}={printable(escape_property(str(value)))}"
        for name, value in (properties or {}).items()
        if value is not None
    )
    return f"::{command}{' ' + props if props else ''}::{printable(escape_data(message))}"


def annotation(level: str, message: str, file: str | None = None, line: int | None = None,
               col: int | None = None, title: str | None = None) -> str:
    """`::error`/`::warning`/`::notice` at a file position (absent properties are left out)."""
    command = level if level in ("error", "warning", "notice") else "warning"
    return workflow_command(command, message, {"file": file, "line": line, "col": col, "title": title})


# What may precede a line's `::` and still leave the runner reading a command: whitespace (.NET's TrimStart
# trims Unicode white space; Python's is a superset), other C0/C1 controls and invisible format characters
# (in case a log viewer or a future runner drops them), and ANSI CSI/OSC escape sequences (a coloured line).
_LEAD = (r"(?:\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\r\n]*(?:\x07|\x1b\\)"
         r"|[\s\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff])*")
_COMMAND_START = re.compile(rf"(?:^|(?<=[\r\n])){_LEAD}:(?=:)")
_UNDECIDED = re.compile(rf"{_LEAD}(?::|\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b\r\n]*)?)?")
COLON = "\\u003a"
BRACKET = "\\u005b"


def neutralize(text: str, *, mid_line: bool = False) -> str:
    """`text` with no line the runner would read as a workflow command (see the module docstring); any other
    text is unchanged. `mid_line`: `text` continues a line whose start was already written (and checked)."""
    if "::" not in text and "##[" not in text:
        return text
    if mid_line:
        cut = min((i for i in (text.find("\n"), text.find("\r")) if i >= 0), default=len(text))
        return text[:cut].replace("##[", "##" + BRACKET) + neutralize(text[cut:])
    out = _COMMAND_START.sub(lambda m: m.group()[:-1] + COLON, text)
    return out.replace("##[", "##" + BRACKET)


def undecided(partial: str) -> bool:
    """Whether the start of a line written so far (`partial`) could still become a command start with what
    follows: only leading whitespace/escapes, then at most one `:` or an unfinished escape sequence."""
    return _UNDECIDED.fullmatch(partial) is not None
