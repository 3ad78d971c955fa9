"""Backends: implementations of the contract in :mod:`socorro_store.backends.base`."""

from ..config import parse_url
from ..errors import ConfigError
from .base import Backend, Increment, RowMutation


def open_backend(url=None, create=True):
    """Open the backend a store URL names (see :mod:`socorro_store.config`).

    ``create=False``: an embedded directory that holds no store raises
    :class:`~socorro_store.errors.StoreNotFound` instead of becoming an empty store (servers
    create nothing on open, so it only matters for embedded URLs).
    """
    parsed = parse_url(url)
    if parsed.scheme == "embedded":
        from .embedded import EmbeddedBackend

        return EmbeddedBackend(parsed.path, sync=parsed.options["sync"], create=create)
    if parsed.scheme == "hbase" and parsed.options["api"] == "thrift2":
        from .hbase import HBaseThrift2Backend

        return HBaseThrift2Backend.from_url(parsed)
    if parsed.scheme == "hbase":
        from .hbase import HBaseBackend

        return HBaseBackend.from_url(parsed)
    if parsed.scheme == "bigtable":
        try:
            from .bigtable import BigtableBackend
        except ImportError as exc:
            raise ConfigError(f"bigtable:// needs the bigtable extra (pip install 'socorro-store[bigtable]'): {exc}") from None
        return BigtableBackend.from_url(parsed)
    raise ConfigError(f"unknown scheme {parsed.scheme}")


__all__ = ["Backend", "Increment", "RowMutation", "open_backend"]
