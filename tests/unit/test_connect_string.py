"""Issue 28, findings 3 and 8: a ZooKeeper connect string is parsed once, as kazoo's client reads it, and the
operator's allow-list matches exactly the hosts kazoo will dial.

The property test is the heart: on random strings (built from the characters URL parsing cares about), either
`parse_connect` refuses, or kazoo's own reading of the string (`KazooClient(hosts=…).hosts` and `.chroot`)
equals ours exactly, and so does kazoo's reading of the string we rebuild and hand it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kazoo.client import KazooClient

from reconciler.allowlist import ALLOWED_HOSTS_ENV, ALLOWED_HOSTS_FILE_ENV, NotAllowedError, checked_connect
from reconciler.rules.cluster import ConnectString, parse_connect


def kazoo_reading(connect: str) -> tuple[list[tuple[str, int]], str] | None:
    """What kazoo's client will dial and its chroot, or None when kazoo refuses the string."""
    try:
        client = KazooClient(hosts=connect)
    except Exception:  # kazoo's own refusal, whatever it raises
        return None
    return [(str(h), int(p)) for h, p in client.hosts], client.chroot or ""


def ours(parsed: ConnectString) -> tuple[list[tuple[str, int]], str]:
    return list(parsed.hosts), parsed.chroot


# Pieces that make URL parsers disagree: userinfo, brackets, ports, query and fragment, percent, spaces,
# control characters, non-ASCII digits and letters, IPv4 shorthands.
FRAGMENTS = st.sampled_from([
    "zk1", "ZK2", "a.b", "10.1.2.3", "127.0.0.1", "127.1", "0x7f", "2130706433", "010", "[fd00::1]", "[::1]",
    "fd00::1", "[fd00::1%eth0]", "[v1.x]", "@", ":", ":2181", ":0", ":65536", ":02181", ",", "/", "//", "/kafka",
    "/.", "/..", "?", "#", "%", "%40", " ", "\t", "\n", "\r", "\x00", "\u0663", "\uff10", "é", "\u212a", "-",
    "_", ".", "*", "[", "]", "\\", ";",
])
ENTRY = st.tuples(st.sampled_from(["zk1", "ZK2", "a.b", "x-y.example", "10.1.2.3", "[fd00::1]", "[::1]", "127.1"]),
                  st.sampled_from(["", ":2181", ":1", ":02181", ":0", ":65535", ":65536"])).map("".join)
WELL_FORMED = st.tuples(st.lists(ENTRY, min_size=1, max_size=3).map(",".join),
                        st.sampled_from(["", "/", "/kafka", "/Kafka//x/", "//", "/a/./b"])).map("".join)
CONNECT = WELL_FORMED | st.lists(FRAGMENTS, min_size=1, max_size=8).map("".join) | st.text(
    alphabet=st.sampled_from("az09.:,/@[]?#% \t-_\u0663\\"), max_size=24)


@settings(max_examples=3000, deadline=None)
@given(CONNECT)
def test_we_refuse_or_read_exactly_what_kazoo_dials(connect: str) -> None:
    try:
        parsed = parse_connect(connect)
    except ValueError:
        return
    assert kazoo_reading(connect) == ours(parsed), connect
    assert kazoo_reading(parsed.text) == ours(parsed), parsed.text  # and what kazoo is given reads the same


@pytest.mark.parametrize("connect", [
    "10.1.2.3@127.0.0.1:2181/kafka/prod",  # the finding: userinfo; kazoo dials 127.0.0.1
    "zk1:2181?x=1@evil:2181",  # a query
    "zk1#@evil:2181",  # a fragment
    "zk1%40evil:2181",  # percent-encoding
    "zk1 :2181", " zk1:2181", "zk1:2181\n", "zk1\t:2181",  # whitespace kazoo would strip or urllib drop
    "zk1:2181,,zk2:2181", ",zk1", "zk1,", "",  # empty hosts
    "fd00::1:2181", "[fd00::1%eth0]:2181", "[zk1]:2181",  # bare or zoned IPv6, a bracketed name
    "zk1:0", "zk1:", "zk1:65536", "zk1:+1",  # kazoo dials 2181 for :0 and :, refuses 65536
    "127.1:2181", "2130706433:2181", "0x7f.0.0.1:2181", "010.0.0.1:2181",  # inet_aton reads these otherwise
    "zk1:2181/kafka/../x", "zk1:2181/./x", "zk1//", "zk1:2181///",  # refused by kazoo, or read as "/"
    "zk\u0663:2181", "zk1:\u0663", "\u212aafka:2181",  # non-ASCII digits and letters
])
def test_ambiguous_connect_strings_are_refused(connect: str) -> None:
    with pytest.raises(ValueError):
        parse_connect(connect)


def test_the_rebuilt_string_is_canonical() -> None:
    parsed = parse_connect("ZK1.Prod,zk2:02182,[FD00::1]/Kafka//Prod/")
    assert parsed.hosts == (("zk1.prod", 2181), ("zk2", 2182), ("fd00::1", 2181))
    assert parsed.chroot == "/Kafka/Prod"  # znode names are case-sensitive
    assert parsed.text == "zk1.prod:2181,zk2:2182,[fd00::1]:2181/Kafka/Prod"


# --- the allow-list matches the parsed hosts ----------------------------------------------------------------


@pytest.fixture(autouse=True)
def no_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ALLOWED_HOSTS_ENV, raising=False)
    monkeypatch.delenv(ALLOWED_HOSTS_FILE_ENV, raising=False)


@pytest.mark.parametrize(("patterns", "connect", "allowed"), [
    ("10.1.2.*", "10.1.2.3@127.0.0.1:2181/kafka/prod", False),  # the finding
    ("10.1.2.*", "10.1.2.3.attacker.example:2181", False),  # `*` is one octet or label, never a dot
    ("*.zk.prod.internal", "a.b.zk.prod.internal:2181", False),
    ("*.zk.prod.internal", "a.zk.prod.internal:2181", True),
    ("10.1.2.*:2181", "10.1.2.7:2181/k", True),
    ("10.1.2.*", "10.1.2.7:2182", True),  # no port in the pattern: every port
    ("[fd00::*]", "[fd00::1]:2181", True),
    ("*", "[fd00::1]:2181", False),  # IPv6 hosts match only bracketed patterns
    ("[fd00::1]", "fd00::1:2181", False),  # ambiguous: refused whatever the list says
    ("127.0.0.1", "127.1:2181", False),  # inet_aton's shorthand for 127.0.0.1 is refused, not matched
    ("zk1:2181", "zk1:02181", True),  # the same port
    ("zk1:2181", "zk1:0", False),  # kazoo would dial 2181 for :0, so it is refused
])
def test_the_allow_list_matches_what_kazoo_dials(
    monkeypatch: pytest.MonkeyPatch, patterns: str, connect: str, allowed: bool
) -> None:
    monkeypatch.setenv(ALLOWED_HOSTS_ENV, patterns)
    if allowed:
        assert kazoo_reading(checked_connect(connect).text) == kazoo_reading(connect)
    else:
        with pytest.raises(NotAllowedError):
            checked_connect(connect)


def test_ambiguous_connect_strings_are_refused_without_an_allow_list_too() -> None:
    assert checked_connect("zk1:2181/k").text == "zk1:2181/k"  # unset: every unambiguous host is allowed
    with pytest.raises(NotAllowedError):
        checked_connect("10.1.2.3@127.0.0.1:2181/k")


@pytest.mark.parametrize("value", ["", " ", ",", " , \t,", "\n"])
def test_a_set_but_empty_allow_list_refuses_every_host(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """Finding 8: `RECONCILER_ZK_ALLOWED_HOSTS=""` is what an undefined CI variable gives; it means "none"."""
    checked_connect("anything:2181")  # unset: allowed (docs/security.md)
    monkeypatch.setenv(ALLOWED_HOSTS_ENV, value)
    with pytest.raises(NotAllowedError) as refused:
        checked_connect("anything:2181")
    assert ALLOWED_HOSTS_ENV in refused.value.message and "names no host" in refused.value.message


@pytest.mark.parametrize("content", [None, "", "# nothing approved yet\n", " , \n\n"])
def test_a_set_but_empty_allow_list_file_refuses_every_host(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, content: str | None
) -> None:
    """The file variable set to "" (None here) or naming a file with no pattern: nothing is allowed either."""
    if content is None:
        monkeypatch.setenv(ALLOWED_HOSTS_FILE_ENV, "")
    else:
        (tmp_path / "hosts").write_text(content)
        monkeypatch.setenv(ALLOWED_HOSTS_FILE_ENV, str(tmp_path / "hosts"))
    with pytest.raises(NotAllowedError, match="names no host"):
        checked_connect("anything:2181")


def test_an_invalid_pattern_is_an_error_not_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOWED_HOSTS_ENV, "zk1:2181 user@zk2")
    with pytest.raises(Exception, match="allow-list pattern") as refused:
        checked_connect("zk1:2181")
    assert not isinstance(refused.value, NotAllowedError) or "user@zk2" in str(refused.value)
