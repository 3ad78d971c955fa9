"""The embedded backend's error classes: only what a retry can outlive is BackendUnavailable."""

import errno
import sqlite3

import pytest

from socorro_store.backends import RowMutation, open_backend
from socorro_store.backends.embedded import _typed
from socorro_store.errors import BackendError, BackendUnavailable
from socorro_store.schema.table_admin import create_tables


def _sqlite_error(message, code):
    exc = sqlite3.DatabaseError(message)
    exc.sqlite_errorcode = code
    return exc


@pytest.mark.parametrize("exc, expected", [
    (_sqlite_error("database is locked", 5), BackendUnavailable),
    (_sqlite_error("database table is locked", 6), BackendUnavailable),
    (_sqlite_error("disk I/O error", 10 | (1 << 8)), BackendUnavailable),   # SQLITE_IOERR_READ
    (_sqlite_error("unable to open database file", 14), BackendUnavailable),
    (_sqlite_error("database disk image is malformed", 11), BackendError),  # SQLITE_CORRUPT
    (_sqlite_error("file is not a database", 26), BackendError),            # SQLITE_NOTADB
    (_sqlite_error("database or disk is full", 13), BackendError),          # SQLITE_FULL
    (_sqlite_error("attempt to write a readonly database", 8), BackendError),
    (sqlite3.DatabaseError("database disk image is malformed"), BackendError),  # no code (Python < 3.11)
    (sqlite3.OperationalError("database is locked"), BackendUnavailable),
    (OSError(errno.ENOSPC, "No space left on device"), BackendError),
    (OSError(errno.EIO, "Input/output error"), BackendUnavailable),
])
def test_error_classes(exc, expected):
    typed = _typed(exc)
    assert type(typed) is expected
    assert str(exc) in str(typed)


def test_a_corrupt_table_file_is_a_backend_error_not_unavailable(tmp_path):
    url = f"embedded://{tmp_path / 'store'}"
    with open_backend(url) as backend:
        create_tables(backend)
        backend.mutate_rows("metrics", [RowMutation(b"2016", {b"counters:x": b"1" * 100})])
    table_files = sorted((tmp_path / "store" / "tables").glob("*.sqlite"))
    assert table_files
    for path in table_files:  # overwrite every page after the header: "malformed" on first read
        data = bytearray(path.read_bytes())
        data[100:] = b"\xff" * (len(data) - 100)
        path.write_bytes(bytes(data))
        for suffix in ("-wal", "-shm"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)
    with open_backend(url) as backend:
        with pytest.raises(BackendError) as raised:
            backend.get_row("metrics", b"2016")
        assert not isinstance(raised.value, BackendUnavailable)
