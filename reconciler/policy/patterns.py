"""Policy regular expressions (selector `names`, rule `namePattern`): RE2, matched against the whole name (PURE).

A policy file comes from a pull request as much as from the platform team, so its patterns are untrusted input:
* **Linear time.** Python's `re` backtracks: `(a+)+b` over a 30-character name runs for minutes, a PR check
  hangs (issue 38, finding 17). RE2 (Google's engine, the `google-re2` package) matches in time linear in the
  name, whatever the pattern; its memory is bounded (`max_mem`). What RE2 does not have is refused when the
  policy is loaded, at the pattern's line: look-around (`(?=…)`, `(?!…)`, `(?<=…)`) and back-references (`\\1`),
  the constructs that need backtracking.
* **Over the whole name.** A pattern matches the entire name (Java's `String.matches`, RE2's `fullmatch`), and
  `.` matches every character, a newline included: a user named `mallory\\nx` is selected by `mallory.*` and
  is not a way around a rule that judges `mallory.*` (finding 15). Python's default `.` stops at a newline.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Protocol, cast

import re2

MAX_PATTERN = 1_000  # characters: a name pattern is a line, not a program
_MAX_MEM = 8 << 20  # bytes RE2 may use for one compiled pattern (its default is 8 MiB as well; stated here)
SYNTAX = "RE2 syntax: no look-around such as (?!…) and no back-references such as \\1"


class _Compiled(Protocol):
    def fullmatch(self, text: str) -> object | None: ...


def _options() -> object:
    options = re2.Options()
    options.dot_nl = True  # `.` matches a newline too: the name is one string, whatever it holds
    options.log_errors = False  # a refused pattern is our diagnostic, not a line on stderr
    options.max_mem = _MAX_MEM
    return options


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> _Compiled:
    return cast(_Compiled, re2.compile(pattern, _options()))


def pattern_problem(pattern: str) -> str | None:
    """Why `pattern` cannot be a policy pattern (None when it can), in words for the policy's author."""
    if len(pattern) > MAX_PATTERN:
        return f"a pattern is at most {MAX_PATTERN:,} characters (this one has {len(pattern):,})"
    try:
        _compiled(pattern)
    except re2.error as exc:
        reason = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        return f"not supported: {reason} ({SYNTAX}; patterns are matched in linear time)"
    return None


def full_match(pattern: str, name: str) -> bool:
    """`name` as a whole matches `pattern` (a pattern `pattern_problem` accepted)."""
    return _compiled(pattern).fullmatch(name) is not None
