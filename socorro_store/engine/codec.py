"""Value codecs for families whose spec asks for compression.

The codec is recorded with every cell, so files written with another codec (or none) stay
readable when a spec changes.  zlib at level 1 is the fastest standard-library codec that still
shrinks minidumps and JSON several-fold.

Reads decode in SQL (:func:`register`): ``CASE codec WHEN 0 THEN value ELSE cell_value(codec,
value) END`` hands raw values (every value of an uncompressed family) over as stored, and calls
Python only for the others.
"""

import threading
import zlib

RAW = 0
ZLIB = 1
_MIN_SIZE = 128  # below this, compression rarely pays for its header

#: a read's value as SQL: raw values as stored, others through ``cell_value``
SQL_VALUE = f"CASE codec WHEN {RAW} THEN value ELSE cell_value(codec, value) END"


def encode(value, compressed):
    """Return ``(codec, stored bytes)`` for a value of a family that is ``compressed`` or not."""
    if compressed and len(value) >= _MIN_SIZE:
        packed = zlib.compress(value, 1)
        if len(packed) < len(value):
            return ZLIB, packed
    return RAW, value


def decode(codec, stored):
    if codec == RAW:
        return bytes(stored)
    if codec == ZLIB:
        return zlib.decompress(stored)
    raise ValueError(f"unknown cell codec {codec}")


class SqlDecodes(threading.local):
    """What ``cell_value`` did on this thread: ``shrink``, the stored bytes minus the decoded
    bytes (so a read can count stored bytes from the values it got), and ``error``, the
    exception it raised (SQLite reports only "user-defined function raised exception")."""

    shrink = 0
    error = None


SQL_DECODES = SqlDecodes()


def _cell_value(codec, stored):
    try:
        value = decode(codec, stored)
    except Exception as exc:
        SQL_DECODES.error = exc
        raise
    SQL_DECODES.shrink += len(stored) - len(value)
    return value


def register(conn):
    """Define ``cell_value(codec, stored)`` (the decoded value) on ``conn``; returns it."""
    conn.create_function("cell_value", 2, _cell_value, deterministic=True)
    return conn
