"""Config values: YAML scalars to Kafka strings, canonical forms, Kafka's reasons for rejecting, equality."""

from __future__ import annotations

import datetime
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconciler.catalog import ConfigKey, Validator, load_catalog
from reconciler.values import canonical, check, equal, java_double_to_string, java_trim, to_kafka_string

CAT = load_catalog()


def topic(name: str) -> ConfigKey:
    k = CAT.topic(name)
    assert k is not None
    return k


def broker(name: str) -> ConfigKey:
    k = CAT.broker(name)
    assert k is not None
    return k


def plain(type_: str, validator: Validator | None = None, name: str = "test.key") -> ConfigKey:
    return ConfigKey(name, type_, None, validator, "2.0.0", "cluster-wide")


TYPES = ("BOOLEAN", "STRING", "INT", "SHORT", "LONG", "DOUBLE", "LIST", "CLASS", "PASSWORD")
THROTTLE_REASON = (
    "leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the following "
    "format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
)
NOT_BOOL = "Expected value to be either true or false"
CLEANUP = "String must be one of: compact, delete"
COMPRESSION = "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"
GZIP = "Value must be between 1 and 9 or equal to -1"

# --- to_kafka_string -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (True, "true"),
        (False, "false"),
        (3, "3"),
        (-3, "-3"),
        (0, "0"),
        (2**70, "1180591620717411303424"),
        (0.5, "0.5"),
        (50.0, "50.0"),
        (1e-5, "1.0E-5"),
        (1.5e10, "1.5E10"),
        (float("inf"), "Infinity"),
        ("x", "x"),
        (" x ", " x "),  # trimming is canonical()'s job
        ("", ""),
        (["a", "b"], "a,b"),
        (("a",), "a"),
        ([1, 2], "1,2"),
        ([True, "x", 0.5], "true,x,0.5"),
        ([], ""),
    ],
)
def test_to_kafka_string(raw: object, expected: str) -> None:
    assert to_kafka_string(raw) == expected


@pytest.mark.parametrize(
    "raw", [None, {}, {"a": 1}, [None], [["a"]], [{"a": 1}], b"x", datetime.date(2024, 1, 1), object()]
)
def test_to_kafka_string_rejects(raw: object) -> None:
    with pytest.raises(TypeError, match="config value must be"):
        to_kafka_string(raw)


# --- check: Kafka's own reasons --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        # BOOLEAN: case-insensitive true/false, trimmed (Java equalsIgnoreCase: the long s matches 's')
        (topic("preallocate"), "true", None),
        (topic("preallocate"), "FALSE", None),
        (topic("preallocate"), " True\n", None),
        (topic("preallocate"), "fal\u017fe", None),
        (topic("preallocate"), "yes", NOT_BOOL),
        (topic("preallocate"), "1", NOT_BOOL),
        (topic("preallocate"), "", NOT_BOOL),
        (topic("preallocate"), "tru e", NOT_BOOL),
        (topic("preallocate"), "truee", NOT_BOOL),
        # INT: Integer.parseInt (sign, Unicode digits; no decimals, exponents, underscores, hex) + Range
        (topic("min.insync.replicas"), "2", None),
        (topic("min.insync.replicas"), "+2", None),
        (topic("min.insync.replicas"), " 2 ", None),
        (topic("min.insync.replicas"), "002", None),
        (topic("min.insync.replicas"), "\u0663", None),  # ARABIC-INDIC THREE: Character.digit takes it
        # an astral digit: Java's parseInt sees two surrogate chars, neither a digit
        (topic("min.insync.replicas"), "\U0001d7d1", "Not a number of type INT"),
        (topic("min.insync.replicas"), "2147483647", None),
        (topic("min.insync.replicas"), "0", "Value must be at least 1"),
        (topic("min.insync.replicas"), "-2147483648", "Value must be at least 1"),
        (topic("min.insync.replicas"), "2147483648", "Not a number of type INT"),  # Java int overflow
        (topic("min.insync.replicas"), "-2147483649", "Not a number of type INT"),
        (topic("min.insync.replicas"), "99999999999999999999", "Not a number of type INT"),
        (topic("min.insync.replicas"), "2.0", "Not a number of type INT"),
        (topic("min.insync.replicas"), "1e3", "Not a number of type INT"),
        (topic("min.insync.replicas"), "1_000", "Not a number of type INT"),
        (topic("min.insync.replicas"), "0x10", "Not a number of type INT"),
        (topic("min.insync.replicas"), "2 2", "Not a number of type INT"),
        (topic("min.insync.replicas"), "", "Not a number of type INT"),
        (topic("min.insync.replicas"), "+", "Not a number of type INT"),
        (topic("min.insync.replicas"), "--1", "Not a number of type INT"),
        (topic("compression.lz4.level"), "17", None),
        (topic("compression.lz4.level"), "18", "Value must be no more than 17"),
        (topic("compression.lz4.level"), "0", "Value must be at least 1"),
        (topic("compression.zstd.level"), "-131072", None),
        (topic("compression.zstd.level"), "-131073", "Value must be at least -131072"),
        (topic("compression.zstd.level"), "23", "Value must be no more than 22"),
        (topic("segment.bytes"), "13", "Value must be at least 14"),
        (topic("segment.bytes"), "14", None),
        # gzip level: [1,...,9] or -1
        (topic("compression.gzip.level"), "-1", None),
        (topic("compression.gzip.level"), "1", None),
        (topic("compression.gzip.level"), "9", None),
        (topic("compression.gzip.level"), "0", GZIP),
        (topic("compression.gzip.level"), "10", GZIP),
        (topic("compression.gzip.level"), "-2", GZIP),
        (topic("compression.gzip.level"), "x", "Not a number of type INT"),
        # LONG: Long.parseLong bounds + Range
        (topic("retention.ms"), "604800000", None),
        (topic("retention.ms"), "-1", None),
        (topic("retention.ms"), "-2", "Value must be at least -1"),
        (topic("retention.ms"), "9223372036854775807", None),
        (topic("retention.ms"), "9223372036854775808", "Not a number of type LONG"),
        (topic("retention.ms"), "1.5", "Not a number of type LONG"),
        (topic("retention.ms"), "7d", "Not a number of type LONG"),  # no unit suffixes
        (topic("retention.bytes"), "-5", None),  # LONG without validator
        (topic("retention.bytes"), "-9223372036854775808", None),
        (topic("retention.bytes"), "-9223372036854775809", "Not a number of type LONG"),
        (topic("local.retention.ms"), "-2", None),
        (topic("local.retention.ms"), "-3", "Value must be at least -2"),
        # SHORT
        (plain("SHORT"), "32767", None),
        (plain("SHORT"), "-32768", None),
        (plain("SHORT"), "32768", "Not a number of type SHORT"),
        (broker("sasl.login.refresh.buffer.seconds"), "300", None),
        (broker("sasl.login.refresh.buffer.seconds"), "40000", "Not a number of type SHORT"),
        # DOUBLE: Double.parseDouble (suffixes, hex, NaN/Infinity; no "inf", no underscores) + Range
        (topic("min.cleanable.dirty.ratio"), "0.5", None),
        (topic("min.cleanable.dirty.ratio"), "1", None),
        (topic("min.cleanable.dirty.ratio"), "0", None),
        (topic("min.cleanable.dirty.ratio"), ".5", None),
        (topic("min.cleanable.dirty.ratio"), "0.", None),
        (topic("min.cleanable.dirty.ratio"), "5e-1", None),
        (topic("min.cleanable.dirty.ratio"), "0.5d", None),
        (topic("min.cleanable.dirty.ratio"), "0.5F", None),
        (topic("min.cleanable.dirty.ratio"), "0x1p-1", None),
        (topic("min.cleanable.dirty.ratio"), "0x.8P0", None),
        (
            topic("min.cleanable.dirty.ratio"),
            "NaN",
            None,
        ),  # Range compares doubles: NaN passes (a Kafka quirk)
        (topic("min.cleanable.dirty.ratio"), "1.0001", "Value must be no more than 1"),
        (topic("min.cleanable.dirty.ratio"), "-0.1", "Value must be at least 0"),
        (topic("min.cleanable.dirty.ratio"), "Infinity", "Value must be no more than 1"),
        (topic("min.cleanable.dirty.ratio"), "-Infinity", "Value must be at least 0"),
        (topic("min.cleanable.dirty.ratio"), "inf", "Not a number of type DOUBLE"),
        (topic("min.cleanable.dirty.ratio"), "nan", "Not a number of type DOUBLE"),
        (topic("min.cleanable.dirty.ratio"), "1_0", "Not a number of type DOUBLE"),
        (topic("min.cleanable.dirty.ratio"), "0,5", "Not a number of type DOUBLE"),
        (topic("min.cleanable.dirty.ratio"), "0.5e", "Not a number of type DOUBLE"),
        (topic("min.cleanable.dirty.ratio"), "0x1", "Not a number of type DOUBLE"),  # hex needs an exponent
        (topic("min.cleanable.dirty.ratio"), "", "Not a number of type DOUBLE"),
        (topic("min.cleanable.dirty.ratio"), "abc", "Not a number of type DOUBLE"),
        (
            plain("DOUBLE", Validator("range", 0, 0.5, text="[0,...,0.5]")),
            "0.6",
            "Value must be no more than 0.5",
        ),
        (CAT.quota("clients", "request_percentage"), "50", None),
        (CAT.quota("clients", "request_percentage"), "50.5", None),
        (CAT.quota("clients", "producer_byte_rate"), "1024.0", "Not a number of type LONG"),
        (CAT.quota("ips", "connection_creation_rate"), "-1", "Value must be at least 0"),
        (CAT.quota("brokers", "leader.replication.throttled.rate"), "-1", "Value must be at least 0"),
        # LIST + ValidList: every item in the allowed set
        (topic("cleanup.policy"), "compact", None),
        (topic("cleanup.policy"), "compact,delete", None),
        (topic("cleanup.policy"), " delete , compact ", None),
        (topic("cleanup.policy"), "", None),  # an empty list is valid in 3.9
        (topic("cleanup.policy"), "Compact", CLEANUP),
        (topic("cleanup.policy"), "compact,", CLEANUP),  # trailing empty item
        (topic("cleanup.policy"), "delete,foo", CLEANUP),
        (broker("metric.reporters"), "a.B, c.D", None),
        # STRING + ValidString (case-sensitive) / CaseInsensitiveValidString / NonEmptyString
        (topic("compression.type"), "gzip", None),
        (topic("compression.type"), " zstd ", None),
        (topic("compression.type"), "GZIP", COMPRESSION),
        (topic("compression.type"), "", COMPRESSION),
        (topic("message.timestamp.type"), "LogAppendTime", None),
        (
            topic("message.timestamp.type"),
            "logappendtime",
            "String must be one of: CreateTime, LogAppendTime",
        ),
        (broker("ssl.client.auth"), "required", None),
        (broker("ssl.client.auth"), "REQUIRED", "String must be one of: required, requested, none"),
        (broker("group.consumer.migration.policy"), "upgrade", None),
        (
            broker("group.consumer.migration.policy"),
            "sideways",
            "String must be one of (case insensitive): DISABLED, DOWNGRADE, UPGRADE, BIDIRECTIONAL",
        ),
        (broker("remote.log.metadata.manager.class.name"), "x.Y", None),
        (broker("remote.log.metadata.manager.class.name"), "  ", "String must be non-empty"),
        (broker("remote.log.manager.copier.thread.pool.size"), "-5", None),  # custom lambda: not enforced
        (topic("follower.replication.throttled.replicas"), "*", None),
        # throttled replicas: '*' or partition:broker pairs
        (topic("leader.replication.throttled.replicas"), "*", None),
        (topic("leader.replication.throttled.replicas"), " * ", None),
        (topic("leader.replication.throttled.replicas"), "0:1,1:2", None),
        (topic("leader.replication.throttled.replicas"), "0:1, 1:2 ,2:3", None),
        (topic("leader.replication.throttled.replicas"), "", None),
        (topic("leader.replication.throttled.replicas"), "0:1,", None),  # empty items match ([0-9]+:[0-9]+)?
        (topic("leader.replication.throttled.replicas"), "*,", None),  # items joined are "*"
        (topic("leader.replication.throttled.replicas"), "0:1,*", THROTTLE_REASON),
        (topic("leader.replication.throttled.replicas"), "0-1", THROTTLE_REASON),
        (topic("leader.replication.throttled.replicas"), "a:b", THROTTLE_REASON),
        (topic("leader.replication.throttled.replicas"), "*:*", THROTTLE_REASON),
        (topic("leader.replication.throttled.replicas"), "0:1:2", THROTTLE_REASON),
        (topic("leader.replication.throttled.replicas"), "\u0663:1", THROTTLE_REASON),  # [0-9] is ASCII
        # message.format.version: MetadataVersion.fromVersionString
        (topic("message.format.version"), "2.8", None),
        (topic("message.format.version"), "3.0-IV1", None),
        (topic("message.format.version"), "2.8.2", None),  # 2 segments kept for non-0.x versions
        (topic("message.format.version"), "2.8.x.y", None),
        (topic("message.format.version"), "0.10.2", None),
        (topic("message.format.version"), "0.10.2.1", None),  # 3 segments kept for 0.x versions
        (topic("message.format.version"), "0.8.0", None),
        (topic("message.format.version"), " 3.6 ", None),
        (topic("message.format.version"), "4.0", "Version 4.0 is not a valid version"),
        (topic("message.format.version"), "3.6.", "Version 3.6. is not a valid version"),
        (topic("message.format.version"), "3", "Version 3 is not a valid version"),
        (topic("message.format.version"), "x", "Version x is not a valid version"),
        (topic("message.format.version"), "", "Version  is not a valid version"),
        (topic("message.format.version"), "3.6-IV9", "Version 3.6-IV9 is not a valid version"),
        # CLASS: not loadable offline, but an impossible binary name can never load
        (broker("principal.builder.class"), "org.example.MyBuilder", None),
        (broker("principal.builder.class"), "org.example.Outer$Inner", None),
        (broker("principal.builder.class"), "foo bar", "Class foo bar could not be found."),
        (broker("principal.builder.class"), "1abc", "Class 1abc could not be found."),
        (broker("principal.builder.class"), "a..b", "Class a..b could not be found."),
        (broker("principal.builder.class"), "", "Class  could not be found."),
        # PASSWORD and plain STRING: anything
        (broker("sasl.jaas.config"), "org.x.Login required user='a';", None),
        (broker("ssl.keystore.password"), "", None),
        (broker("listeners"), "PLAINTEXT://:9092", None),
    ],
)
def test_check(key: ConfigKey | None, value: str, reason: str | None) -> None:
    assert key is not None
    assert check(key, value) == reason


@pytest.mark.parametrize("type_", TYPES)
def test_every_type_has_an_accepted_value(type_: str) -> None:
    good = {
        "BOOLEAN": "true",
        "INT": "1",
        "SHORT": "1",
        "LONG": "1",
        "DOUBLE": "1.5",
        "LIST": "a,b",
        "CLASS": "a.B",
    }
    assert check(plain(type_), good.get(type_, "anything")) is None


def all_keys() -> list[ConfigKey]:
    keys = [CAT.topic(n) for n in CAT.names("topic")] + [CAT.broker(n) for n in CAT.names("broker")]
    keys += [CAT.quota(kind, n) for kind in ("clients", "users", "ips") for n in CAT.names(kind)]
    return [k for k in keys if k is not None]


def test_every_catalog_default_is_valid_and_canonical() -> None:
    checked = 0
    for k in all_keys():
        if k.default is not None:
            assert check(k, k.default) is None, k.name
            assert canonical(k, k.default) == k.default, k.name
            checked += 1
    assert checked > 250


def test_every_validator_kind_is_handled() -> None:
    handled = {"range", "gzip_level", "one_of", "one_of_ci", "each_of", "throttled_replicas"}
    handled |= {"message_format_version", "non_empty_string", "custom"}
    assert {k.validator.kind for k in all_keys() if k.validator} == handled


# --- canonical -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        (plain("BOOLEAN"), "TRUE", "true"),
        (plain("BOOLEAN"), " False ", "false"),
        (plain("BOOLEAN"), "fal\u017fe", "false"),
        (plain("BOOLEAN"), "yes", "yes"),  # invalid: only trimmed
        (plain("INT"), "007", "7"),
        (plain("INT"), "+5", "5"),
        (plain("INT"), "-0", "0"),
        (plain("INT"), " 42\t", "42"),
        (plain("INT"), "\u0663", "3"),
        (plain("INT"), "2147483648", "2147483648"),  # overflow: invalid, unchanged
        (plain("INT"), "1.0", "1.0"),
        (plain("SHORT"), "-00012", "-12"),
        (plain("LONG"), "+9223372036854775807", "9223372036854775807"),
        (plain("LONG"), "0604800000", "604800000"),
        (plain("DOUBLE"), "0.5", "0.5"),
        (plain("DOUBLE"), "50", "50.0"),
        (plain("DOUBLE"), "1e-5", "1.0E-5"),
        (plain("DOUBLE"), "0.00001", "1.0E-5"),
        (plain("DOUBLE"), "1E7", "1.0E7"),
        (plain("DOUBLE"), "9999999", "9999999.0"),
        (plain("DOUBLE"), "12345678", "1.2345678E7"),
        (plain("DOUBLE"), "0.001", "0.001"),
        (plain("DOUBLE"), "0.0001", "1.0E-4"),
        (plain("DOUBLE"), ".5", "0.5"),
        (plain("DOUBLE"), "0.5d", "0.5"),
        (plain("DOUBLE"), "0x1p-1", "0.5"),
        (plain("DOUBLE"), "2147483647", "2.147483647E9"),
        (plain("DOUBLE"), "-0", "-0.0"),
        (plain("DOUBLE"), "NaN", "NaN"),
        (plain("DOUBLE"), "1e400", "Infinity"),
        (plain("DOUBLE"), "-Infinity", "-Infinity"),
        (plain("DOUBLE"), "abc", "abc"),
        (plain("LIST"), "a, b", "a,b"),
        (plain("LIST"), " a ,b ", "a,b"),
        (plain("LIST"), "compact,\tdelete", "compact,delete"),
        (plain("LIST"), "a , b , c", "a,b,c"),
        (plain("LIST"), "a,,b", "a,,b"),
        (plain("LIST"), "", ""),
        (plain("LIST"), " , ", ","),
        (plain("STRING"), "  x  ", "x"),
        (plain("STRING"), "a  b", "a  b"),
        (plain("STRING"), "GZIP", "GZIP"),  # never case-folded: Kafka compares exactly
        (plain("PASSWORD"), " secret ", "secret"),
        (plain("CLASS"), " a.B ", "a.B"),
        (None, " x ", "x"),
        (None, "\x00x\x1f", "x"),  # Java's trim strips every char <= U+0020
        (None, "\u00a0x", "\u00a0x"),  # ... but not a no-break space
    ],
)
def test_canonical(key: ConfigKey | None, value: str, expected: str) -> None:
    assert canonical(key, value) == expected


@pytest.mark.parametrize(
    ("d", "expected"),
    [
        (0.5, "0.5"),
        (50.0, "50.0"),
        (100.0, "100.0"),
        (-1.5, "-1.5"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1e-5, "1.0E-5"),
        (1e7, "1.0E7"),
        (9999999.0, "9999999.0"),
        (0.001, "0.001"),
        (0.0009, "9.0E-4"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1e23, "1.0E23"),
        (2147483647.0, "2.147483647E9"),
        (9.223372036854776e18, "9.223372036854776E18"),
        (1.7976931348623157e308, "1.7976931348623157E308"),  # Double.MAX_VALUE
        (5e-324, "4.9E-324"),  # Double.MIN_VALUE: Java picks the closer 2-digit decimal
        (1e-323, "9.9E-324"),
        (math.nan, "NaN"),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
    ],
)
def test_java_double_to_string(d: float, expected: str) -> None:
    assert java_double_to_string(d) == expected


def test_java_trim() -> None:
    assert java_trim("\t\n x y \r\x0b\x0c\x00") == "x y"
    assert java_trim("\u2003x") == "\u2003x"


# --- equal -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "a", "b", "expected"),
    [
        (plain("DOUBLE"), "0.5", "5e-1", True),
        (plain("DOUBLE"), "50", "50.0", True),
        (plain("DOUBLE"), "0", "-0.0", True),
        (plain("DOUBLE"), "NaN", "NaN", True),
        (plain("DOUBLE"), "0.1", "0.10000000000000001", True),  # the same double
        (plain("DOUBLE"), "1", "2", False),
        (plain("DOUBLE"), "abc", " abc", True),
        (plain("DOUBLE"), "abc", "1", False),
        (plain("INT"), "007", "7", True),
        (plain("INT"), "7", "8", False),
        (plain("LONG"), "604800000", " +604800000 ", True),
        (plain("BOOLEAN"), "TRUE", "true", True),
        (plain("BOOLEAN"), "true", "false", False),
        (plain("LIST"), "a,b", "a, b", True),
        (plain("LIST"), "a,b", "b,a", False),  # order is part of a list
        (plain("STRING"), "gzip", "GZIP", False),
        (plain("STRING"), "gzip", " gzip", True),
        (None, "x", " x", True),
        (None, "x", "y", False),
    ],
)
def test_equal(key: ConfigKey | None, a: str, b: str, expected: bool) -> None:
    assert equal(key, a, b) is expected
    assert equal(key, b, a) is expected


# --- properties ------------------------------------------------------------------------------------------

NUMBERISH = st.from_regex(r"\A[ \t]?[+-]?[0-9\u0663]{0,22}(\.[0-9]{0,5})?([eE][+-]?[0-9]{1,3})?[dDfF]?[ ]?\Z")
LISTISH = st.lists(st.sampled_from(["a", " b", "c ", "", " ", "\t", "*", "0:1"]), max_size=5).map(",".join)
VALUES = st.one_of(st.text(), NUMBERISH, LISTISH, st.sampled_from(["TRUE", " false ", "NaN", "-0", "1e400"]))
KEYS = st.one_of(st.none(), st.sampled_from(TYPES).map(plain))


@given(KEYS, VALUES)
def test_canonical_is_idempotent(key: ConfigKey | None, value: str) -> None:
    once = canonical(key, value)
    assert canonical(key, once) == once


@given(KEYS, VALUES)
def test_canonical_keeps_meaning(key: ConfigKey | None, value: str) -> None:
    once = canonical(key, value)
    assert equal(key, value, once)
    if key is not None and check(key, value) is None:
        assert check(key, once) is None


@given(st.floats())
def test_double_string_round_trips(d: float) -> None:
    text = to_kafka_string(d)
    assert check(plain("DOUBLE"), text) is None
    assert canonical(plain("DOUBLE"), text) == text
    assert not math.isfinite(d) or equal(plain("DOUBLE"), text, repr(d))  # repr: "1e-05", Java-parseable
    assert math.isnan(d) or float(text.replace("Infinity", "inf")) == d


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_long_round_trips(n: int) -> None:
    written = f" +0{n} " if n >= 0 else f" -0{-n} "
    assert check(plain("LONG"), written) is None
    assert canonical(plain("LONG"), written) == str(n)
    assert (check(plain("INT"), written) is None) is (-(2**31) <= n < 2**31)
    assert (check(plain("SHORT"), written) is None) is (-(2**15) <= n < 2**15)


@pytest.mark.parametrize("n", [2**63, -(2**63) - 1, 2**64])
def test_long_overflow(n: int) -> None:
    assert check(plain("LONG"), str(n)) == "Not a number of type LONG"
    assert canonical(plain("LONG"), str(n)) == str(n)
