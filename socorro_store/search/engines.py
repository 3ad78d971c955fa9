"""Which search engine a search URL names.

====================  ==========================================================================
search URL            engine
====================  ==========================================================================
``embedded://DIR``    the embedded engine (:mod:`.embedded`): one SQLite file, ``DIR/search.sqlite3``
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
    scheme = text.partition("://")[0] if "://" in text else text
    raise ConfigError(f"unknown search URL scheme {scheme!r} in {search_url!r}: expected embedded://DIR or none")
