"""Helpers shared by the backend contract suites (``test_contract_*.py``).

The suites run against the ``backend`` fixture of ``conftest.py``, so every backend kind must
pass them.  Each test gets an isolated namespace, so tables are simply called ``t``/``u``.
"""

import struct
import time

import pytest

from socorro_store.backends.base import RowMutation
from socorro_store.schema.specs import FamilySpec, TableSpec

HOUR_MS = 3600 * 1000

# The standard test table: a 3-version family, a 1-version family, a 2-second-TTL family and a
# compressed family.
STANDARD_FAMILIES = (
    FamilySpec("cf", versions=3),
    FamilySpec("one", versions=1),
    FamilySpec("ttl", versions=3, ttl=2),
    FamilySpec("z", compression="GZ", versions=1),
)


def spec(name="t", families=STANDARD_FAMILIES, **kwargs):
    return TableSpec(name=name, families=tuple(families), **kwargs)


def now_ms():
    return int(time.time() * 1000)


def counter(value):
    """A counter cell as HBase stores it: 8 bytes, big-endian, signed."""
    return struct.pack(">q", value)


def put(backend, table, row, cells, timestamp=None):
    """Write ``{column: value}`` to one row."""
    backend.mutate_rows(table, [RowMutation(row, puts=dict(cells))], timestamp=timestamp)


def delete(backend, table, row, columns=(), delete_row=False, timestamp=None):
    backend.mutate_rows(table, [RowMutation(row, deletes=list(columns), delete_row=delete_row)],
                        timestamp=timestamp)


def all_rows(backend, table, **scan_kwargs):
    """Every visible row as a list of ``(row, cells)``."""
    return list(backend.scan(table, **scan_kwargs))


def skip_if(backend_kind, kind, why):
    """Skip on a backend where the behaviour differs inherently (the reason says how)."""
    if backend_kind == kind:
        pytest.skip(f"{kind}: {why}")


NO_DELETE_MARKERS = ("Bigtable has no delete markers: a put older than an earlier delete "
                     "reappears (bigtable-emulator.md, difference 5)")
NO_REVERSE_SCANS = "the Bigtable emulator answers UNIMPLEMENTED to reversed scans (bigtable-emulator.md, difference 7)"
