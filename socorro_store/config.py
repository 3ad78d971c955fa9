"""Store URLs: where the data is.

Accepted forms::

    embedded://PATH                       (embedded://./socorro-data is the default)
    hbase://HOST[:PORT][,HOST[:PORT]...]?api=thrift1|thrift2&transport=buffered|framed&protocol=binary|compact
                        &table_prefix=P&pool_size=N&timeout_ms=T&retries=N&max_frame_mb=M
    bigtable://PROJECT/INSTANCE[?app_profile=ID]

Several ``HOST:PORT`` name several Thrift servers of one cluster (one per region server host):
clients spread over them and fail over (:mod:`socorro_store.backends.hbase.servers`).
``api`` says which of HBase's two Thrift servers each HOST:PORT is: ``thrift1`` (the default; HBase's
``org.apache.hadoop.hbase.thrift.ThriftServer``, spoken through happybase) or ``thrift2``
(``org.apache.hadoop.hbase.thrift2.ThriftServer``, spoken through thriftpy2: pre-split tables,
every family attribute, atomic multi-cell check-and-put, one-call scans).  The other options mean
the same for both.

``max_frame_mb`` is the Thrift server's frame limit
(``hbase.regionserver.thrift.framed.max_frame_size_in_mb``); it applies only to
``transport=framed``, where it defaults to HBase's 2.

The URL comes from an explicit argument, then ``SOCORRO_STORE_URL``, then the default.
"""

import os
import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit

from .errors import ConfigError

DEFAULT_URL = "embedded://./socorro-data"
#: hbase.regionserver.thrift.framed.max_frame_size_in_mb's default
DEFAULT_MAX_FRAME_MB = 2
#: a Thrift frame's length is a signed 32-bit int
MAX_FRAME_MB = 2047
ENV_VAR = "SOCORRO_STORE_URL"
#: the port of HBase's Thrift servers when a URL names none
DEFAULT_HBASE_PORT = 9090
# ASCII only: int() and float() also take "9_090", "+90", " 90" and other scripts' digits
_DIGITS = re.compile(r"[0-9]+")
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")

_OPTIONS = {
    "embedded": {"sync": ("normal", "full")},
    "hbase": {
        "api": ("thrift1", "thrift2"),
        "transport": ("buffered", "framed"),
        "protocol": ("binary", "compact"),
        "table_prefix": str,
        "pool_size": int,
        "timeout_ms": int,
        "retries": int,
        "max_frame_mb": float,
    },
    "bigtable": {"app_profile": str},
}
_DEFAULTS = {
    "embedded": {"sync": "normal"},
    "hbase": {"api": "thrift1", "transport": "buffered", "protocol": "binary", "table_prefix": None,
              "pool_size": 4, "timeout_ms": 30000, "retries": 3, "max_frame_mb": None},
    "bigtable": {"app_profile": None},
}


@dataclass(frozen=True)
class StoreURL:
    """A parsed store URL.  ``options`` holds every option with its default filled in;
    ``servers`` every ``(host, port)`` of an hbase URL (``host``/``port``: the first)."""

    scheme: str
    path: str = ""
    host: str = ""
    port: int = 0
    options: dict = field(default_factory=dict)
    text: str = ""
    servers: tuple = ()


def resolve_url(url=None):
    """Return the URL text to use: ``url``, else ``$SOCORRO_STORE_URL``, else the default."""
    return url or os.environ.get(ENV_VAR) or DEFAULT_URL


def parse_url(url=None):
    """Parse a store URL (resolved as by :func:`resolve_url`) into a :class:`StoreURL`.

    Raises :class:`ConfigError` for an unknown scheme, a bad port or an unknown or bad option.
    """
    text = resolve_url(url)
    if not isinstance(text, str):
        raise ConfigError(f"store URL must be a string, not {type(text).__name__}")
    if text.lower().startswith("embedded://"):
        # a directory, not a host: urlsplit would take "run[2]" in embedded://run[2]/x for an IPv6 host
        parts = urlsplit("embedded://?" + text.partition("?")[2])
    else:
        parts = _split(text)
    scheme = parts.scheme
    if scheme not in _OPTIONS or "://" not in text:
        raise ConfigError(f"unknown store URL scheme in {text!r}: expected embedded://, hbase:// or bigtable://")
    options = dict(_DEFAULTS[scheme])
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        options[key] = _parse_option(scheme, key, value, text)
    if scheme == "embedded":
        path = text.split("://", 1)[1].split("?", 1)[0]
        if not path:
            raise ConfigError(f"embedded URL needs a directory: {text!r}")
        return StoreURL(scheme, path=path, options=options, text=text)
    if scheme == "hbase":
        servers = parse_servers(text)
        if parts.path not in ("", "/"):
            raise ConfigError(f"hbase URL takes no path: {text!r}")
        if options["transport"] == "framed":
            if options["max_frame_mb"] is None:
                options["max_frame_mb"] = DEFAULT_MAX_FRAME_MB
        elif options["max_frame_mb"] is not None:
            raise ConfigError(f"option max_frame_mb applies only to transport=framed in {text!r}")
        return StoreURL(scheme, host=servers[0][0], port=servers[0][1], options=options, text=text,
                        servers=tuple(servers))
    project, instance = parts.netloc, parts.path.strip("/")
    if not project or not instance or "/" in instance:
        raise ConfigError(f"bigtable URL must be bigtable://PROJECT/INSTANCE: {text!r}")
    return StoreURL(scheme, host=project, path=instance, options=options, text=text)


def parse_servers(url):
    """The ``(host, port)`` of every server an ``hbase://`` URL (or its ``H1:P1,H2:P2`` part) names.

    A server without a port gets :data:`DEFAULT_HBASE_PORT`; IPv6 hosts go in brackets
    (``[::1]:9090``).  Raises :class:`ConfigError` for an empty server, a bad or out-of-range
    port, user info, or a server named twice.
    """
    if not isinstance(url, str):
        raise ConfigError(f"hbase URL must be a string, not {type(url).__name__}")
    netloc = _split(url).netloc if "://" in url else url.split("?", 1)[0].split("/", 1)[0]
    if "@" in netloc:
        raise ConfigError(f"hbase URL takes no user info: {url!r}")
    if not netloc.strip():
        raise ConfigError(f"hbase URL needs a host: {url!r}")
    servers = []
    for item in netloc.split(","):
        item = item.strip()
        if not item:
            raise ConfigError(f"hbase URL names an empty server (HOST[:PORT],HOST[:PORT],…): {url!r}")
        if item.startswith("["):
            host, bracket, rest = item[1:].partition("]")
            if not bracket or (rest and not rest.startswith(":")):
                raise ConfigError(f"bad server {item!r} in hbase URL {url!r} (an IPv6 host is [ADDRESS]:PORT)")
            _sep, port_text = rest[:1], rest[1:]
        else:
            host, _sep, port_text = item.partition(":")
            if ":" in port_text:
                raise ConfigError(f"bad server {item!r} in hbase URL {url!r} (an IPv6 host goes in brackets)")
        if not host:
            raise ConfigError(f"hbase URL needs a host in {item!r}: {url!r}")
        if _sep and not port_text:
            raise ConfigError(f"bad port in store URL {url!r}: {item!r} has an empty port")
        if port_text and not _DIGITS.fullmatch(port_text):
            raise ConfigError(f"bad port in store URL {url!r}: {item!r} (a port is ASCII digits)")
        port = int(port_text) if port_text else DEFAULT_HBASE_PORT
        if not 0 < port < 65536:
            raise ConfigError(f"bad port in store URL {url!r}: {port} is not in 1..65535")
        if (host.lower(), port) in [(h.lower(), p) for h, p in servers]:
            raise ConfigError(f"hbase URL names the server {host}:{port} twice: {url!r}")
        servers.append((host, port))
    return servers


def with_options(url=None, **options):
    """The URL text (resolved as by :func:`resolve_url`) with ``options`` set in its query,
    replacing any given there; checked by :func:`parse_url`.  ``with_options(u, retries=0)``
    makes one attempt per call."""
    text = resolve_url(url)
    base, _sep, query = text.partition("?")
    pairs = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k not in options]
    pairs += [(k, str(v)) for k, v in options.items()]
    result = base + ("?" + urlencode(pairs) if pairs else "")
    parse_url(result)
    return result


def _split(text):
    # urlsplit raises a bare ValueError for an unclosed or invalid bracketed host ("hbase://[::1")
    try:
        return urlsplit(text)
    except ValueError as exc:
        raise ConfigError(f"malformed store URL {text!r}: {exc}") from None


def _parse_option(scheme, key, value, text):
    kind = _OPTIONS[scheme].get(key)
    if kind is None:
        known = ", ".join(sorted(_OPTIONS[scheme]))
        raise ConfigError(f"unknown option {key!r} in {scheme} URL {text!r} (known: {known})")
    if kind is int:
        if not _DIGITS.fullmatch(value):
            raise ConfigError(f"option {key} must be an integer (ASCII digits) in {text!r}")
        number = int(value)
        if number < (0 if key == "retries" else 1):
            raise ConfigError(f"option {key} out of range in {text!r}")
        return number
    if kind is float:
        if not _DECIMAL.fullmatch(value):
            raise ConfigError(f"option {key} must be a number (ASCII digits, a point) in {text!r}")
        number = float(value)
        if not 0 < number <= MAX_FRAME_MB:
            raise ConfigError(f"option {key} must be in (0, {MAX_FRAME_MB}] in {text!r}")
        return int(number) if number.is_integer() else number
    if isinstance(kind, tuple):
        if value not in kind:
            raise ConfigError(f"option {key} must be one of {', '.join(kind)} in {text!r}")
        return value
    return value
