"""socorro-store: Socorro's HBase crash storage, on HBase, Bigtable or an embedded engine.

    from socorro_store import open_store
    with open_store() as store:            # embedded://./socorro-data unless told otherwise
        store.create_tables()
        store.save_raw_crash(raw_crash, {"upload_file_minidump": dump}, crash_id)
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

__all__ = ["open_store", "CrashStore", "SocorroStoreError", "CrashIDNotFound", "InvalidCrashID",
           "InvalidArgument", "RequestTooLarge", "BackendUnavailable", "CrashConflict"]
