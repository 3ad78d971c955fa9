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
    """``{table: [row, …]}`` of every non-empty table: "nothing written anywhere" checks.  The
    one row creating the tables writes (``~rank/since``, a new store's rankings) and the search
    feed's and the deriver's leases (taken by a thread at any time) and the cut-over mark are left out."""
    from socorro_store.schema import change_keys as C  # noqa: PLC0415 - helpers stay import-light
    from socorro_store.schema import derived_keys as D  # noqa: PLC0415
    from socorro_store.schema import ranking_keys as RK  # noqa: PLC0415

    out = {}
    for table in backend.list_tables():
        rows = [row for row, _cells in backend.scan(table)
                if row not in (RK.SINCE_ROW, C.FEED_LEASE_ROW, D.SINCE_ROW, D.LEASE_ROW)]
        if rows:
            out[table] = rows
    return out


def claim_history(backend, queue_row):
    """The claim records of a queue row (read from the minute's claim row)."""
    from socorro_store.crashstore.claims import decode_claims  # noqa: PLC0415 - helpers stay import-light
    from socorro_store.schema import keys as K  # noqa: PLC0415
    from socorro_store.schema.queue_keys import claim_cell  # noqa: PLC0415

    row, column = claim_cell(queue_row)
    return decode_claims(backend.get_row(K.UNPROCESSED_FLAG, row, columns=[column]).get(column))


def queue_table_left(backend, prefix=None):
    """The rows left in the unprocessed_flag table besides the claim rows, and whether every claim
    history left there is done (processed crashes leave one ``done`` record each)."""
    from socorro_store.crashstore.claims import decode_claims, lease_of  # noqa: PLC0415
    from socorro_store.schema import keys as K  # noqa: PLC0415
    from socorro_store.schema.queue_keys import CLAIMS_PREFIX  # noqa: PLC0415

    rows, all_done = [], True
    for row, cells in backend.scan(K.UNPROCESSED_FLAG, prefix=prefix):
        if row.startswith(CLAIMS_PREFIX):
            all_done = all_done and all(lease_of(decode_claims(v)).done for v in cells.values())
        else:
            rows.append(row)
    return rows, all_done


def counted_live(store):
    """Make ``store`` one written by an older version: no cut-over mark, so its saves increment
    its counters live and ``rollup`` repairs them (what tests of that path need)."""
    from socorro_store.backends import RowMutation  # noqa: PLC0415
    from socorro_store.crashstore import cut_over  # noqa: PLC0415
    from socorro_store.schema import derived_keys as D  # noqa: PLC0415
    from socorro_store.schema import keys as K  # noqa: PLC0415

    store.backend.mutate_rows(K.DERIVED, [RowMutation(D.SINCE_ROW, delete_row=True)])
    cut_over.forget(store.backend)
    assert not cut_over.enabled(store.backend)
    return store
