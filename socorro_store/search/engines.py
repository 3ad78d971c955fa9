"""Which search engine a search URL names.

====================  ==========================================================================
search URL            engine
====================  ==========================================================================
``embedded://DIR``    the embedded engine (:mod:`.embedded`): one SQLite file, ``DIR/search.sqlite3``
``opensearch://H:P``  OpenSearch (:mod:`.opensearch`): ``opensearch://[USER:PASS@]HOST:PORT[,HOST:PORT...]``
                      ``[?index=NAME&tls=1&refresh=true|wait_for]``, every host tried in turn
``none``              no search: searching raises :class:`~socorro_store.errors.SearchNotConfigured`
====================  ==========================================================================

The search URL comes from ``search_url=`` (``--search-url``), then ``$SOCORRO_SEARCH_URL``; an
``embedded://`` store with neither searches with the embedded engine in its own directory, and
any other store has no search until one is named.
"""

import os
from pathlib import Path

from ..errors import ConfigError

ENV_VAR = "SOCORRO_SEARCH_URL"
#: the embedded engine's file in its directory (beside an embedded store's catalog.sqlite and tables/)
EMBEDDED_FILE = "search.sqlite3"
NONE = "none"


def resolve_search_url(search_url, store_directory=None):
    """The search URL in force: ``search_url``, else ``$SOCORRO_SEARCH_URL``, else
    ``embedded://<store_directory>`` for an embedded store (``store_directory`` given), else None."""
    if search_url is None:
        search_url = os.environ.get(ENV_VAR) or None
    if search_url is None and store_directory is not None:
        search_url = f"embedded://{store_directory}"
    if search_url is not None and not isinstance(search_url, str):
        raise ConfigError(f"search URL must be a string: {search_url!r}")
    if search_url is not None and search_url.strip().lower() == NONE:
        return None
    return search_url


def shown_url(search_url):
    """``search_url`` as it may be shown (status, pages, logs): credentials left out."""
    if search_url is None:
        return None
    text = search_url.strip()
    if text.lower().startswith("opensearch://"):
        rest = text[len("opensearch://"):]
        hosts, query = rest.partition("?")[0], rest.partition("?")[2]
        hosts = hosts.rpartition("@")[2]
        return f"opensearch://{hosts}" + (f"?{query}" if query else "")
    return text


def open_search_engine(search_url):
    """Open the engine ``search_url`` names (see the module docstring); ConfigError for a URL
    that names none."""
    text = search_url.strip()
    if text.lower().startswith("embedded://"):
        directory = text[len("embedded://"):]
        if not directory or "?" in directory:
            raise ConfigError(f"embedded search URL needs a directory (and takes no options): {search_url!r}")
        from .embedded import EmbeddedSearch

        try:
            Path(directory).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"search directory {directory!r}: {exc.strerror or exc}") from None
        return EmbeddedSearch(str(Path(directory) / EMBEDDED_FILE))
    if text.lower().startswith("opensearch://"):
        return _open_opensearch(text)
    scheme = text.partition("://")[0] if "://" in text else text
    raise ConfigError(f"unknown search URL scheme {scheme!r} in {search_url!r}: "
                      "expected embedded://DIR, opensearch://HOST:PORT or none")


_OPENSEARCH_OPTIONS = ("index", "tls", "refresh")


def _open_opensearch(text):
    """``opensearch://[USER:PASS@]HOST:PORT[,HOST:PORT...][?index=NAME&tls=1&refresh=...]``."""
    from urllib.parse import parse_qsl, unquote

    rest = text[len("opensearch://"):]
    rest, _, options_text = rest.partition("?")
    credentials, at, hosts_text = rest.rpartition("@")
    shown = f"opensearch://{hosts_text}"  # never the password, in any message
    username = password = None
    if at:
        username, colon, password = credentials.partition(":")
        if not colon or not username:
            raise ConfigError(f"OpenSearch credentials in {shown} must be USER:PASSWORD@")
        username, password = unquote(username), unquote(password)
    hosts = []
    for part in hosts_text.split(","):
        host, colon, port = part.strip().rpartition(":")
        if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(f"OpenSearch URL {shown}: expected HOST:PORT[,HOST:PORT...], not {part!r}")
        hosts.append(f"{host}:{port}")
    options = dict(parse_qsl(options_text, keep_blank_values=True))
    unknown = sorted(set(options) - set(_OPENSEARCH_OPTIONS))
    if unknown:
        raise ConfigError(f"OpenSearch URL {shown}: unknown option(s) {', '.join(unknown)} "
                          f"(known: {', '.join(_OPENSEARCH_OPTIONS)})")
    index = options.get("index", "socorro_search")
    if not index or index != index.lower() or any(c in index for c in ' "*\\<|,>/?#:') or index[0] in "-_+":
        raise ConfigError(f"OpenSearch URL {shown}: {index!r} is not an index name (lowercase, no \\/*?\"<>|, #:)")
    refresh = options.get("refresh", "true")
    if refresh not in ("true", "wait_for"):
        raise ConfigError(f"OpenSearch URL {shown}: refresh must be true or wait_for")
    tls = options.get("tls", "0")
    if tls not in ("0", "1"):
        raise ConfigError(f"OpenSearch URL {shown}: tls must be 0 or 1")
    try:
        from .opensearch import OpenSearchEngine
    except ImportError as exc:  # pragma: no cover
        raise ConfigError(f"OpenSearch search needs opensearch-py: {exc}") from None
    from ..errors import SearchUnavailable

    try:
        return OpenSearchEngine(hosts, index=index, username=username, password=password, tls=tls == "1",
                                refresh=refresh)
    except SearchUnavailable as exc:
        raise ConfigError(str(exc)) from None
