"""Human forms of config values: `604800000` -> `7d`, `1073741824` -> `1 GiB`, `-1` -> `infinite`.

Shared by risk reasons and the renderers so an operator reads the same wording everywhere. The unit is
inferred from Kafka's naming conventions (`*.ms`, `*.bytes`, `*_byte_rate`, `*.throttled.rate`); keys
that follow none of them are shown as written.

Why not a units library (humanize, pint): none knows Kafka's conventions — which keys are milliseconds or
bytes by their names, and the sentinels (-1 infinite retention, -2 "same as retention" for tiered storage,
Integer/Long.MAX_VALUE as "unlimited" quotas and defaults) — and a wrong human form would mislead a review.
"""

from __future__ import annotations

import functools
import math
import re
import sys
from typing import Literal

Unit = Literal["ms", "bytes", "bytes/s"]

# Kafka's "no limit" defaults: Integer/Long.MAX_VALUE (float(Long.MAX_VALUE) rounds up, so compare as floats;
# the double quota default 2.147483647E9 is Integer.MAX_VALUE) and Double.MAX_VALUE (the default of DOUBLE
# rates such as log.cleaner.io.max.bytes.per.second)
_UNLIMITED = frozenset({float(2147483647), float(9223372036854775807), sys.float_info.max})
_YEAR_MS = 365 * 86_400_000
_YEARS_FROM = 1000 * 86_400_000  # durations this long are read in years: "50903d4h" says nothing at a glance
MAX_FACTOR = 10_000  # a larger factor is shown as "over 10,000×": both values are named beside it anyway
_SMALL_UNIT: dict[Unit, str] = {"ms": "ms", "bytes": "B", "bytes/s": "B/s"}
_PLAIN_DOUBLE_BELOW = 1e19  # a whole DOUBLE below this is shown as the integer an operator writes
_DURATIONS = (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1))
_SIZES = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))
# Keys whose negative values mean "no limit" (-1) or "same as the total retention" (-2, tiered storage).
NEGATIVE_MEANS_UNLIMITED = frozenset(
    {
        "retention.ms",
        "log.retention.ms",
        "retention.bytes",
        "log.retention.bytes",
        "local.retention.ms",
        "log.local.retention.ms",
        "local.retention.bytes",
        "log.local.retention.bytes",
    }
)


def unit_of(key: str) -> Unit | None:
    if key.endswith(".ms"):
        return "ms"
    if key.endswith(("_byte_rate", ".throttled.rate", ".bytes.per.second")):
        return "bytes/s"
    if key.endswith((".bytes", ".buffer.size")):
        return "bytes"
    return None


# Text a manifest or a znode may hold is read as a number only through these two functions, which are
# total (never raise) and bounded: Python's int() refuses strings of more than 4,300 digits with a ValueError
# (CVE-2020-10735) and int() of an infinite float raises OverflowError, so neither is ever called on text
# whose size or value has not been checked first.
_JAVA_BLANK = "".join(map(chr, range(0x21)))  # Java's String.trim strips every char <= U+0020
_INTEGER = re.compile(r"([+-]?)(\d+)")  # \d: any Unicode decimal digit, as Java's Character.digit(c, 10)
MAX_INT_DIGITS = 19  # significant digits of Long.MAX_VALUE (9223372036854775807): nothing longer fits 64 bits
_MAX_NUMBER_TEXT = 1_000  # characters; no number Kafka reads is longer, and float() is linear in them


def parse_int(text: str | None, bits: int = 64) -> int | None:
    """`Long.parseLong` (or `Integer.parseInt`, `Short.parseShort` with `bits` 32 or 16) after Java's trim:
    a sign and decimal digits (Unicode digits too, as Java reads them), no underscores or spaces. None when
    the text is not such a number or does not fit `bits` bits; never raises, whatever the text's length."""
    if text is None:
        return None
    match = _INTEGER.fullmatch(text.strip(_JAVA_BLANK))
    if match is None:
        return None
    sign, digits = match.groups()
    if not digits.isascii():
        if max(digits) >= "\U00010000":  # Java reads UTF-16 chars: a supplementary digit is two non-digits
            return None
        digits = "".join(str(int(d)) for d in digits)  # one digit at a time: never a long int() argument
    digits = digits.lstrip("0") or "0"
    if len(digits) > MAX_INT_DIGITS:
        return None
    number = int(sign + digits)
    return number if -(2 ** (bits - 1)) <= number < 2 ** (bits - 1) else None


def parse_number(value: str | None) -> float | None:
    """A finite number for ordering and human forms: Kafka parses numbers after trimming. None for anything
    else: not a number, NaN (never ordered), or an infinity (`Infinity`, `1e400`), which no Kafka setting
    means and whose int() would raise."""
    if value is None or len(value) > _MAX_NUMBER_TEXT:
        return None
    try:
        number = float(value.strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _duration(ms: int) -> str:
    if ms >= _YEARS_FROM:
        return f"≈{ms / _YEAR_MS:,.0f} years"
    parts: list[str] = []
    rest = ms
    for name, size in _DURATIONS:
        if rest >= size:
            parts.append(f"{rest // size}{name}")
            rest %= size
    shown = "".join(parts[:2])
    return shown if len(parts) <= 2 else f"≈{shown}"  # two components are enough to read at a glance


def _size(n: int, suffix: str) -> str:
    for name, size in _SIZES:
        if n >= size:
            if n % size == 0:
                return f"{n // size} {name}{suffix}"
            return f"≈{n / size:.1f} {name}{suffix}"
    return f"{n} B{suffix}"


@functools.lru_cache(maxsize=4096)  # pure; a plan's changes and reasons repeat a few (key, value) pairs
def humanize(key: str, value: str | None) -> str | None:
    """The human annotation of a value (`7d`, `1 GiB`, `infinite`), or None when it would add nothing."""
    unit = unit_of(key)
    number = parse_number(value)
    if number is None or (unit is None and number not in _UNLIMITED):
        return None
    if number < 0:
        if key not in NEGATIVE_MEANS_UNLIMITED:
            return None
        return "same as retention" if number == -2 and "local" in key else "infinite"
    if number in _UNLIMITED:
        return "unlimited"
    if not number.is_integer():
        return None
    n = int(number)
    if unit == "ms":
        return _duration(n) if n >= 1000 else None
    if unit is not None and n >= 1024:
        return _size(n, "/s" if unit == "bytes/s" else "")
    return None


def as_written(value: str) -> str:
    """A number as an operator writes it: Kafka stores a DOUBLE in Java's form (`5.24288E7`, `5.0E7`), shown as
    the whole number it is (`52428800`); anything else (fractions, `0.5`, text) unchanged. Display only: the
    plan and the znode keep the stored form."""
    if "E" not in value or len(value) > 40:
        return value
    number = parse_number(value)
    if number is None or not number.is_integer() or abs(number) >= _PLAIN_DOUBLE_BELOW:
        return value
    return str(int(number))  # finite, whole and below 1e19: int() cannot raise


def describe(key: str, value: str | None) -> str:
    """`604800000 (7d)`: the value an operator can grep the manifests for, plus its human form."""
    if value is None:
        return "(unset)"
    human = humanize(key, value)
    return as_written(value) if human is None else f"{as_written(value)} ({human})"


def short(key: str, value: str | None) -> str:
    """`7d`: the human form alone when there is one (for reasons), else the value; `1 ms` for a duration
    below a second; `≈139 years` rather than a 13-digit number."""
    if value is None:
        return "(unset)"
    human = humanize(key, value)
    if human is None:
        n, unit = parse_int(value), unit_of(key)
        small = n is not None and 0 <= n < 1024 and unit is not None  # below the human forms' first unit
        return f"{n} {_SMALL_UNIT[unit]}" if small and unit is not None else as_written(value)
    return as_written(value) if human.startswith("≈") and not human.endswith("years") else human


def factor(before: float, after: float) -> str | None:
    """`1,000× lower`, `2.5× higher`, `over 10,000× lower`: how far a number moves, for a reviewer's sense of
    scale; None when either side is not a positive finite number or the two are equal."""
    if not (0 < before < float("inf") and 0 < after < float("inf")) or before == after:
        return None
    ratio, word = (before / after, "lower") if after < before else (after / before, "higher")
    if ratio > MAX_FACTOR:
        return f"over {MAX_FACTOR:,}× {word}"
    return f"{ratio:,.0f}× {word}" if ratio >= 10 else f"{ratio:.1f}× {word}".replace(".0×", "×")


def looks_like_seconds(key: str, value: str) -> str | None:
    """For a `*.ms` key: the value read as seconds when it is a whole number of hours in seconds but not a
    whole number of minutes in milliseconds (`retention.ms: 604800` is 7d in seconds, 10m4.8s as written);
    None otherwise. Round millisecond values (`3600000`) never match."""
    if unit_of(key) != "ms":
        return None
    number = parse_number(value)
    if number is None or number <= 0 or not number.is_integer():
        return None
    n = int(number)  # finite and whole: int() cannot raise
    if n % 3_600 or not n % 60_000:
        return None
    return _duration(n * 1000)


# The human forms `humanize` prints, read back: durations in ms, sizes in bytes (binary units, as Kafka's docs;
# decimal ones too). Policies write bounds so (`max: 30d`), and a manifest value written so gets a hint.
DURATION_MS = {"ms": 1, "s": 1_000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000,
               "w": 7 * 86_400_000}
SIZE_BYTES = {"b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
              "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4}
_HUMAN = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*")


def unit_hint(key: str, value: str) -> str | None:
    """`; write 604800000 (7d in milliseconds)` for `retention.ms: 7d`: a duration or size written in a human
    form where Kafka reads a plain number of the key's unit (ms, bytes, bytes/s). None when it is not one."""
    unit = unit_of(key)
    match = _HUMAN.fullmatch(value) if len(value) <= 40 else None
    if unit is None or match is None:
        return None
    table = DURATION_MS if unit == "ms" else SIZE_BYTES
    factor_ = table.get(match.group(2).lower())
    if factor_ is None:
        return None
    number = float(match.group(1)) * factor_
    if not number.is_integer():
        return None
    words = {"ms": "milliseconds", "bytes": "bytes", "bytes/s": "bytes per second"}[unit]
    return f"; write {int(number)} ({value.strip()} in {words})"


def counted(n: int, one: str, many: str) -> str:
    """`1 entry`, `3 entries`, `1,204 entries`: a count with its noun in the right number."""
    return f"{n:,} {one if n == 1 else many}"
