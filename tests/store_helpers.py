"""Helpers shared by the crash-store tests (test_store_*.py)."""

import random
import uuid
from datetime import datetime, timedelta, timezone

BASE_TIME = datetime(2016, 9, 18, 12, 0, tzinfo=timezone.utc)


def crash_id(salt="d", day=BASE_TIME, rng=None):
    """A valid Socorro crash id starting with ``salt``, dated ``day``."""
    rng = rng or random
    text = str(uuid.UUID(int=rng.getrandbits(128)))
    return salt + text[1:-7] + "2" + day.strftime("%y%m%d")


def raw_crash(cid, submitted=BASE_TIME, **extra):
    raw = {"ProductName": "Firefox", "Version": "120.0", "BuildID": "20231120093012",
           "ReleaseChannel": "release", "submitted_timestamp": submitted.isoformat(), "uuid": cid,
           "legacy_processing": 1}
    raw.update(extra)
    return raw


def processed(cid, signature="sig", **extra):
    doc = {"uuid": cid, "completeddatetime": (BASE_TIME + timedelta(hours=1)).isoformat(),
           "signature": signature, "success": True}
    doc.update(extra)
    return doc


def all_rows(backend):
    """``{table: [row, …]}`` of every non-empty table: "nothing written anywhere" checks."""
    out = {}
    for table in backend.list_tables():
        rows = [row for row, _cells in backend.scan(table)]
        if rows:
            out[table] = rows
    return out
