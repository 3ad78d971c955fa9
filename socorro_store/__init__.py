"""socorro-store: Socorro's HBase crash storage, on HBase, Bigtable or an embedded engine.

    from socorro_store import open_store
    from socorro_store import new_crash_id, open_store
    with open_store() as store:            # embedded://./socorro-data unless told otherwise
        store.create_tables()              # only this (or `socorro-store tables create`) makes a store
        store.save_raw_crash(raw_crash, {"upload_file_minidump": dump}, new_crash_id())

:func:`new_crash_id` mints an id in Socorro's form; :func:`parse_crash_id` reads one as people
paste it (the bare id, ``bp-<id>``, a crash-stats report URL).
"""

from .crashstore.store import CrashStore, open_store
from .errors import (
    BackendUnavailable,
    CrashConflict,
    CrashIDNotFound,
    InvalidArgument,
    InvalidCrashID,
    RequestTooLarge,
    SocorroStoreError,
)
from .schema.crash_ids import new_crash_id, parse_crash_id

__all__ = ["open_store", "CrashStore", "new_crash_id", "parse_crash_id", "SocorroStoreError", "CrashIDNotFound",
           "InvalidCrashID", "InvalidArgument", "RequestTooLarge", "BackendUnavailable", "CrashConflict"]
