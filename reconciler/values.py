"""Config values as Kafka strings: YAML scalars to strings, the canonical form every comparison and write
uses, and the checks a broker runs (`ConfigDef.parseType` + the key's validator) with Kafka's own reasons.

Parsing follows Java, not Python: `String.trim` strips every char <= U+0020, `Integer.parseInt` takes a sign
and Unicode decimal digits but no underscores or spaces, `Double.parseDouble` takes `1.5d`, hex floats,
`NaN` and `Infinity`, and DOUBLE values print like `Double.toString`. Standard library only.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_EVEN, Decimal

from reconciler.catalog import ConfigKey, Validator
from reconciler.units import parse_int

_JAVA_BLANK = "".join(map(chr, range(0x21)))
_LIST_SPLIT = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")  # ConfigDef's "\\s*,\\s*" (Java \s is ASCII)
_INTEGER = re.compile(r"[+-]?\d+")  # str pattern: \d is any Unicode decimal digit, as Character.digit
_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity"
    r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?"
    r"|0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?)"
)
_CLASS = re.compile(r"(?:[^\W\d]|\$)[\w$]*(?:\.(?:[^\W\d]|\$)[\w$]*)*")  # a loadable binary name at least
_REPLICA = re.compile(r"(?:[0-9]+:[0-9]+)?")
# java.time.Duration.parse's pattern (case-insensitive): days, then T with hours, minutes, seconds.fraction
_DURATION = re.compile(r"([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?"
                       r"(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?", re.IGNORECASE | re.ASCII)
_INT_BITS = {"SHORT": 16, "INT": 32, "LONG": 64}


def java_trim(value: str) -> str:
    return value.strip(_JAVA_BLANK)


def to_kafka_string(raw: object) -> str:
    """A YAML scalar or list of scalars as the string Kafka stores: True -> "true", [a, b] -> "a,b"."""
    if isinstance(raw, list | tuple):
        return ",".join(_scalar(item) for item in raw)
    return _scalar(raw)


def _scalar(raw: object) -> str:
    if isinstance(raw, bool):  # before int: bool is an int subclass
        return "true" if raw else "false"
    if isinstance(raw, int):
        return str(raw)
    if isinstance(raw, float):
        return java_double_to_string(raw)
    if isinstance(raw, str):
        return raw
    raise TypeError(
        f"a config value must be a string, number, boolean or list of them, not {type(raw).__name__}"
    )


def java_double_to_string(d: float) -> str:
    """Java's `Double.toString` (JDK 19+ shortest form): 50 -> "50.0", 1e-05 -> "1.0E-5", 1e7 -> "1.0E7"."""
    if math.isnan(d):
        return "NaN"
    if math.isinf(d):
        return "Infinity" if d > 0 else "-Infinity"
    if d == 0:
        return "-0.0" if math.copysign(1.0, d) < 0 else "0.0"
    sign, x = ("-" if d < 0 else ""), abs(d)
    if 1e-3 <= x < 1e7:
        return sign + repr(x)  # Python's repr is positional with ".0" in this range, digits are shortest
    _, digits, exp = Decimal(repr(x)).normalize().as_tuple()
    assert isinstance(exp, int)
    if len(digits) == 1:  # Java takes the closest 2-digit decimal when 1 digit suffices: 4.9E-324
        exact = Decimal(x)
        power = exact.adjusted()
        two = exact.scaleb(-power).quantize(Decimal("0.1"), ROUND_HALF_EVEN)
        if float(two.scaleb(power)) == x:
            _, digits, exp = two.scaleb(power).normalize().as_tuple()
            assert isinstance(exp, int)
    text = "".join(map(str, digits))
    return f"{sign}{text[0]}.{text[1:] or '0'}E{len(text) - 1 + exp}"


# --- parsing like ConfigDef.parseType ------------------------------------------------------------------


def _parse_bool(v: str) -> bool | None:
    for word, result in (("true", True), ("false", False)):
        if len(v) == len(word) and all(_same_ignoring_case(a, b) for a, b in zip(v, word, strict=True)):
            return result
    return None


def _same_ignoring_case(a: str, b: str) -> bool:
    """Java's per-char equalsIgnoreCase (simple case mapping: 'ſ' matches 's', 'ß' matches nothing)."""
    ua, ub = a.upper(), b.upper()
    return a == b or (len(ua) == 1 and (ua == ub or ua.lower() == ub.lower()))


def _parse_int(v: str, bits: int) -> int | None:
    return parse_int(v, bits) if _INTEGER.fullmatch(v) else None  # bounded before int(): any length is safe


def _parse_double(v: str) -> float | None:
    if not _DOUBLE.fullmatch(v):
        return None
    if v[-1] in "fFdD":  # Java's float/double type suffix; never part of NaN/Infinity or an exponent
        v = v[:-1]
    body = v.lstrip("+-")
    negative = v.startswith("-")
    if body == "NaN":
        return math.nan
    if body == "Infinity":
        return -math.inf if negative else math.inf
    try:
        return float.fromhex(v) if body[:2] in ("0x", "0X") else float(v)
    except OverflowError:  # a hex float beyond the double range: Double.parseDouble gives an infinity
        return -math.inf if negative else math.inf


def _split_list(v: str) -> list[str]:
    return [] if v == "" else _LIST_SPLIT.split(v)


# --- public API ----------------------------------------------------------------------------------------


def canonical(key: ConfigKey | None, value: str) -> str:
    """The form compared and written: trimmed; BOOLEAN lower-case; integers plain decimal; DOUBLE as Java
    prints it; LIST items comma-joined without spaces. A value Kafka would reject is only trimmed."""
    v = java_trim(value)
    kind = key.type if key is not None else None
    if kind == "BOOLEAN":
        b = _parse_bool(v)
        return v if b is None else ("true" if b else "false")
    if kind in _INT_BITS:
        n = _parse_int(v, _INT_BITS[kind])
        return v if n is None else str(n)
    if kind == "DOUBLE":
        d = _parse_double(v)
        return v if d is None else java_double_to_string(d)
    if kind == "LIST":
        return ",".join(_split_list(v))
    return v


def equal(key: ConfigKey | None, a: str, b: str) -> bool:
    """Kafka-equal: canonical forms match (DOUBLE numerically, so 0.0 == -0.0 and NaN == NaN)."""
    if key is not None and key.type == "DOUBLE":
        x, y = _parse_double(java_trim(a)), _parse_double(java_trim(b))
        if x is not None and y is not None:
            return x == y or (math.isnan(x) and math.isnan(y))
    return canonical(key, a) == canonical(key, b)


def check(key: ConfigKey, value: str) -> str | None:
    """None if a broker accepts `value` for `key`; else Kafka's reason, as in
    "Invalid value <v> for configuration <key>: <reason>"."""
    v = java_trim(value)
    parsed: object = v
    if key.type == "BOOLEAN":
        if _parse_bool(v) is None:
            return "Expected value to be either true or false"
    elif key.type in _INT_BITS or key.type == "DOUBLE":
        parsed = _parse_double(v) if key.type == "DOUBLE" else _parse_int(v, _INT_BITS[key.type])
        if parsed is None:
            return f"Not a number of type {key.type}"
    elif key.type == "LIST":
        parsed = _split_list(v)
    elif key.type == "CLASS" and not _CLASS.fullmatch(v):
        return f"Class {value} could not be found."
    return _validate(key, key.validator, parsed) if key.validator is not None else None


def problem(key: ConfigKey, value: str) -> str | None:
    """What validation reports for `value` of `key`: Kafka's reason (`check`), and beyond Kafka, a DOUBLE that
    is not a finite number. `Double.parseDouble` reads `NaN`, `Infinity` and `1e400` (an infinity), and a
    Range validator lets NaN through, so a broker would store them; no Kafka setting means one (a NaN quota
    never throttles, an infinite one never lets a ratio compare), and every later step that orders or shows
    numbers would have to guess. Refused here, at the manifest line."""
    reason = check(key, value)
    if reason is None and key.type == "DOUBLE":
        parsed = _parse_double(java_trim(value))
        if parsed is not None and not math.isfinite(parsed):
            return "Not a finite number: NaN and infinities (also a literal beyond the double range) mean no setting"
    return reason


def shown(value: str, limit: int = 60) -> str:
    """A value as quoted in a message: at most `limit` characters (a 4,000-digit number is not read in full)."""
    return value if len(value) <= limit else f"{value[: limit - 12]}… ({len(value)} characters)"


def _validate(key: ConfigKey, val: Validator, parsed: object) -> str | None:
    if val.kind == "range" and isinstance(parsed, int | float):
        # Kafka compares doubleValue()s, so NaN passes every range
        if val.min is not None and float(parsed) < float(val.min):
            return f"Value must be at least {_bound(val.min)}"
        if val.max is not None and float(parsed) > float(val.max):
            return f"Value must be no more than {_bound(val.max)}"
    elif val.kind == "gzip_level" and isinstance(parsed, int):
        low, high, default = int(val.min or 0), int(val.max or 0), int(val.allowed[0])
        if parsed > high or (parsed < low and parsed != default):
            return f"Value must be between {low} and {high} or equal to {default}"
    elif val.kind == "one_of" and parsed not in val.allowed:
        return "String must be one of: " + ", ".join(val.allowed)
    elif val.kind == "one_of_ci" and isinstance(parsed, str) and parsed.upper() not in val.allowed:
        return "String must be one of (case insensitive): " + ", ".join(val.allowed)
    elif val.kind == "each_of" and isinstance(parsed, list):
        if any(item not in val.allowed for item in parsed):
            return "String must be one of: " + ", ".join(val.allowed)
    elif val.kind == "throttled_replicas" and isinstance(parsed, list):
        items = [java_trim(item) for item in parsed]
        if not (all(_REPLICA.fullmatch(i) for i in items) or "".join(items) == "*"):
            return (
                f"{key.name} must be the literal '*' or a list of replicas in the following format: "
                "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
            )
    elif val.kind == "message_format_version" and isinstance(parsed, str):
        if _metadata_version_key(parsed) not in val.allowed:
            return f"Version {parsed} is not a valid version"
    elif val.kind == "non_empty_string" and parsed == "":
        return "String must be non-empty"
    elif val.kind == "share_offset_reset" and isinstance(parsed, str) and not _share_offset_reset(parsed):
        return (f"Invalid value `{parsed}` for configuration {key.name}. The value must be either 'earliest', "
                "'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")
    return None


def _share_offset_reset(v: str) -> bool:
    """`ShareGroupAutoOffsetResetStrategy.Validator` (Kafka 4.x group config share.auto.offset.reset): `earliest`,
    `latest` (case-sensitive) or `by_duration:` and a non-negative `java.time.Duration.parse` text."""
    if v in ("earliest", "latest"):
        return True
    if not v.startswith("by_duration:"):
        return False
    seconds = _duration_seconds(v[len("by_duration:"):])
    return seconds is not None and seconds >= 0


def _duration_seconds(text: str) -> float | None:
    """`Duration.parse`: None when Java throws (no part after P or T, a bad shape), else the signed seconds."""
    m = _DURATION.fullmatch(text)
    if m is None or m.group(3) == "T" or not any(m.group(i) for i in (2, 4, 5, 6)):
        return None
    days, hours, minutes, secs = (int(m.group(i) or 0) for i in (2, 4, 5, 6))
    frac = int((m.group(7) or "").ljust(9, "0")) / 1e9
    total = days * 86400 + hours * 3600 + minutes * 60 + secs + (-frac if m.group(6) and m.group(6)[0] == "-" else frac)
    return -total if m.group(1) == "-" else total


def _bound(x: float) -> str:
    return str(x) if isinstance(x, int) else java_double_to_string(x)


def _metadata_version_key(v: str) -> str:
    """`MetadataVersion.fromVersionString`'s lookup key: "3.6.1" -> "3.6", "0.10.2.1" -> "0.10.2"."""
    segments = v.split(".")
    while len(segments) > 1 and segments[-1] == "":  # Java's split drops trailing empty strings
        segments.pop()
    if segments == [""] and v:
        segments = []
    width = 3 if v.startswith("0.") else 2
    return v if width >= len(segments) else ".".join(segments[:width])
