"""The embedded engine: a SQLite-backed wide-column store with HBase's data semantics."""

from .engine import Engine

__all__ = ["Engine"]
