"""GitHub Actions workflow commands (`::error file=…,line=…::message`): the ONE place that writes them.

The runner reads every line of a step's output as a possible command, so text from a manifest (a key, a
file name, a value quoted in a message) must never be able to end the line it is on and start another
(`\\n::add-mask::…`, `::set-output`, `::stop-commands::`), nor add a property (`,line=1` in a file name).
Escaping follows the runner's own rules (actions/toolkit `command.ts`: `escapeData` for the message,
`escapeProperty` for property values). Pure.
"""

from __future__ import annotations

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
