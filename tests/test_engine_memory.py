"""The engine's SQLite connections have bounded page caches (issue 23, item 3): a gateway serving
many tables opens up to ``max_readers`` read connections per table, and with SQLite's default
2 MB cache each they grew it toward 830 MB."""

from socorro_store import open_store
from socorro_store.engine.pool import READER_CACHE_KIB, WRITER_CACHE_KIB, ReaderPool
from socorro_store.schema import keys as K


def _cache_size(conn):
    return conn.execute("PRAGMA cache_size").fetchone()[0]


def test_every_connection_of_a_table_has_a_capped_page_cache(tmp_path):
    with open_store(f"embedded://{tmp_path / 'store'}") as store:
        store.create_tables()
        engine = store.backend.engine
        _info, table = engine._table(K.CRASH_REPORTS)
        assert _cache_size(table.writer) == -WRITER_CACHE_KIB
        with table.read() as first, table.read() as second:  # two distinct pooled connections
            assert first is not second
            assert _cache_size(first) == _cache_size(second) == -READER_CACHE_KIB
        table.checkpoint()  # opens the table's checkpoint connection
        assert _cache_size(table.checkpoint_conn) == -READER_CACHE_KIB
    assert READER_CACHE_KIB < 2000 and WRITER_CACHE_KIB <= 2048  # below or at SQLite's default


def test_a_pool_without_a_cap_keeps_sqlites_default(tmp_path):
    import sqlite3  # noqa: PLC0415

    path = str(tmp_path / "t.db")
    capped = ReaderPool(lambda: sqlite3.connect(path, check_same_thread=False), 2, cache_kib=256)
    default = ReaderPool(lambda: sqlite3.connect(path, check_same_thread=False), 2, cache_kib=None)
    with capped.connection() as conn:
        assert _cache_size(conn) == -256
    with default.connection() as conn:
        assert _cache_size(conn) == -2000  # SQLite's default: the cap is what changed it above
    capped.close()
    default.close()
