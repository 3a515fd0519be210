"""Spark Connect: which server `impact`/`snapshot` may use, chosen by the operator alone, and its session.

The server is named the way pyspark names it: `SPARK_REMOTE=sc://host:port` in the environment, or the
`--remote sc://...` option (never a manifest: a pull request cannot choose where the job runs). Without
either, Spark runs in-process (`--master`, default `local[*]`).

What is dialled is what was checked: the URL is parsed once, strictly (as pyspark's `DefaultChannelBuilder`
reads it, refusing anything it could read another way: userinfo, a path, a query, a fragment, a parameter
that is not `key=value`, spaces), and its host and port must match the operator's allow-list of Connect
servers, `RECONCILER_SPARK_ALLOWED_REMOTES` (comma- or space-separated) and/or
`RECONCILER_SPARK_ALLOWED_REMOTES_FILE` (one pattern a line, `#` comments): the patterns and rules of the
ZooKeeper allow-list (`allowlist`): `HOST[:PORT]`, a `*` is one DNS label or IPv4 octet; neither set:
any server; set but naming none: every server refused. The URL's `;token=` (pyspark's bearer token; or
`SPARK_CONNECT_AUTHENTICATE_TOKEN`) is never shown (`shown_master`).

The server's UI (its REST API gives the stage progress, `uistatus`) is `RECONCILER_SPARK_UI_URL` when set
(scripts/spark-connect.sh writes it beside SPARK_REMOTE), else port 4040 of the Connect host; its host is
checked against the same allow-list.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from dataclasses import dataclass, field

from reconciler.allowlist import NotAllowedError, Pattern, host_allowed
from reconciler.allowlist import allowed_patterns as zk_allowed_patterns
from reconciler.errors import ReconcilerError, clip, printable

REMOTE_ENV = "SPARK_REMOTE"  # pyspark's own convention
ALLOWED_ENV = "RECONCILER_SPARK_ALLOWED_REMOTES"
ALLOWED_FILE_ENV = "RECONCILER_SPARK_ALLOWED_REMOTES_FILE"
UI_ENV = "RECONCILER_SPARK_UI_URL"
DEFAULT_PORT = 15002  # pyspark's DefaultChannelBuilder.default_port()
DEFAULT_UI_PORT = 4040
_HOST = re.compile(r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\]")
_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*=[^=;]*")
_SECRET_PARAM = re.compile(r";(token|[^;=]*(?:secret|password)[^;=]*)=([^;]*)", re.IGNORECASE)


def shown_master(master: str) -> str:
    """The master URL as it may be shown: a Spark Connect URL's `;token=` (and any secret parameter) masked."""
    return _SECRET_PARAM.sub(lambda m: f";{m.group(1)}=***", master)


def redacted(text: str, master: str) -> str:
    """`text` (an error message) without the secret parameters of `master`."""
    for m in _SECRET_PARAM.finditer(master):
        if m.group(2):
            text = text.replace(m.group(2), "***")
    return text.replace(master, shown_master(master))


@dataclass(frozen=True)
class Remote:
    """A checked Spark Connect URL: its host (IPv6 without brackets), port and `;key=value` parameters."""

    url: str
    host: str
    port: int
    params: dict[str, str] = field(default_factory=dict)


def is_remote(master: str) -> bool:
    return master.startswith("sc://")


def chosen_master(master: str | None, remote: str | None) -> str:
    """The Spark to run on: `--remote`, else `--master`, else `SPARK_REMOTE`, else in-process `local[*]`.
    `--master` and `--remote` together are refused (which one wins would be a guess)."""
    if master is not None and remote is not None:
        raise ReconcilerError("--master and --remote are exclusive: --remote sc://host:port runs on a Spark Connect "
                              "server, --master on a Spark started by this process")
    if remote is not None:
        if not is_remote(remote):
            raise NotAllowedError(f"--remote {printable(clip(remote, 100))!r} is not a Spark Connect URL "
                                  "(sc://host:port); refusing to connect")
        return remote
    if master is not None:
        return master
    from_env = os.environ.get(REMOTE_ENV, "").strip()
    if from_env:
        if not is_remote(from_env):
            raise NotAllowedError(f"{REMOTE_ENV} is not a Spark Connect URL (sc://host:port); refusing to connect")
        return from_env
    return "local[*]"


def parse_remote(url: str) -> Remote:
    """`sc://host[:port][/][;key=value...]` read as pyspark reads it; anything ambiguous is refused."""
    def refuse(why: str) -> NotAllowedError:
        return NotAllowedError(f"Spark Connect URL {printable(clip(shown_master(url), 200))!r} is refused: {why}; "
                               "refusing to connect")

    if not is_remote(url):
        raise refuse("it does not start with sc://")
    if any(c.isspace() or not c.isprintable() for c in url):
        raise refuse("it holds spaces or control characters")
    try:
        parsed = urllib.parse.urlparse("http" + url[2:])
    except ValueError as exc:  # e.g. an unclosed IPv6 bracket
        raise refuse(str(exc)) from None
    if "@" in parsed.netloc:
        raise refuse("user information before the host")
    if parsed.path not in ("", "/") or parsed.query or parsed.fragment or "?" in url or "#" in url:
        raise refuse("only sc://host:port/;key=value... (no path, query or fragment)")
    netloc = parsed.netloc.lower()
    host_part, _, port_text = netloc.rpartition(":") if not netloc.endswith("]") else (netloc, "", "")
    if not host_part:  # no colon: a host without a port
        host_part, port_text = netloc, ""
    if not _HOST.fullmatch(host_part):
        raise refuse("the host is not a DNS name, an IPv4 address or a bracketed IPv6 address")
    if port_text and not (port_text.isdigit() and 0 < int(port_text) < 65536):
        raise refuse("the port is not 1-65535")
    params: dict[str, str] = {}
    for item in parsed.params.split(";") if parsed.params else []:
        if not _PARAM.fullmatch(item):
            raise refuse("a parameter is not key=value")
        key, value = item.split("=", 1)
        params[key] = urllib.parse.unquote(value)
    return Remote(url, host_part.strip("[]"), int(port_text) if port_text else DEFAULT_PORT, params)


def allowed_patterns() -> list[Pattern] | None:
    """The operator's patterns of Connect servers (the ZooKeeper allow-list's reader with this one's variables);
    None when no allow-list is set, [] when it names none."""
    return zk_allowed_patterns(ALLOWED_ENV, ALLOWED_FILE_ENV)


def _check(host: str, port: int, what: str) -> None:
    patterns = allowed_patterns()
    if patterns is None:
        return
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if not patterns:
        raise NotAllowedError(f"the operator's allow-list of Spark Connect servers ({ALLOWED_ENV} / "
                              f"{ALLOWED_FILE_ENV}) is set but names none, so {what} {printable(clip(shown, 100))} "
                              "is refused; list the allowed servers, or unset the variable to allow any")
    if not host_allowed(host, port, patterns):
        raise NotAllowedError(f"{what} {printable(clip(shown, 100))} is not in the operator's allow-list "
                              f"({ALLOWED_ENV} / {ALLOWED_FILE_ENV}); refusing to connect")


def checked_remote(url: str) -> Remote:
    """The URL parsed and its server allowed, or NotAllowedError. Connect with `result.url`."""
    remote = parse_remote(url)
    _check(remote.host, remote.port, "Spark Connect server")
    return remote


def ui_url(remote: Remote) -> str:
    """The base URL of the Connect server's UI (`http://host:port`), its host and port allowed."""
    text = os.environ.get(UI_ENV, "").strip().rstrip("/")
    if not text:
        host = f"[{remote.host}]" if ":" in remote.host else remote.host
        text = f"http://{host}:{DEFAULT_UI_PORT}"
    parsed = urllib.parse.urlparse(text)
    try:
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
    except ValueError:
        port = -1
    if parsed.scheme not in ("http", "https") or not parsed.hostname or port < 0 or parsed.path \
            or parsed.query or parsed.fragment or "@" in parsed.netloc:
        raise NotAllowedError(f"{UI_ENV} {printable(clip(text, 100))!r} is not http(s)://host:port; "
                              "refusing to connect")
    _check(parsed.hostname.lower(), port, "Spark UI")
    return text


def remote_session(remote: Remote, settings: dict[str, str]) -> object:
    """A Spark Connect session on `remote` with these SQL settings (one request), as pyspark's builder makes
    one for `SPARK_REMOTE`, without the classic builder (no py4j, no SparkContext module)."""
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"  # pyspark.sql.functions dispatch to the Connect ones
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    builder = RemoteSession.builder.remote(remote.url)
    session = builder.config(map=settings).getOrCreate()  # type: ignore[arg-type]
    return session
