"""Value codecs for families whose spec asks for compression.

The codec is recorded with every cell, so files written with another codec (or none) stay
readable when a spec changes.  zlib at level 1 is the fastest standard-library codec that still
shrinks minidumps and JSON several-fold.
"""

import zlib

RAW = 0
ZLIB = 1
_MIN_SIZE = 128  # below this, compression rarely pays for its header


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
