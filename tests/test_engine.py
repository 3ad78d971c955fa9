"""The embedded engine on disk: files, durability, codecs, names, integrity, compaction, threads.

These look inside the engine's directory with sqlite3 (the tests may; the library layers above
the engine may not), so they check what is really on disk rather than what the API reports.
"""

import json
import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
import threading

import pytest

from socorro_store.backends import RowMutation, open_backend
from socorro_store.engine import Engine, codec
from socorro_store.errors import FamilyNotFound, TableExists
from socorro_store.schema.specs import FamilySpec, TableSpec


def put(engine, table, row, cells, timestamp=None):
    """``cells``: ``{(family, qualifier): value}``."""
    engine.mutate(table, [(row, [(f, q, v) for (f, q), v in cells.items()], [], False)], timestamp)


def get(engine, table, row, **kwargs):
    found = engine.get(table, [row], **kwargs)
    return {(f, q): v for f, q, _ts, v in found[0][1]} if found else {}


def raw(engine, table, sql, args=()):
    """Run ``sql`` on the table's own SQLite file, bypassing the engine."""
    info = engine.catalog.get(table)
    conn = sqlite3.connect(engine.catalog.path_of(info))
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def alter_family(directory, table, family, **attributes):
    """Change a family's attributes in the catalog, as an operator altering a table would."""
    conn = sqlite3.connect(os.path.join(directory, "catalog.sqlite"))
    try:
        (attrs,) = conn.execute("SELECT attrs FROM families WHERE tbl=? AND name=?",
                                (table.encode(), family.encode())).fetchone()
        data = json.loads(attrs)
        data.update(attributes)
        conn.execute("UPDATE families SET attrs=? WHERE tbl=? AND name=?",
                     (json.dumps(data), table.encode(), family.encode()))
        conn.commit()
    finally:
        conn.close()


class _closing:
    """``with _closing(Engine(dir)) as engine``: the engine is closed on exit."""

    def __init__(self, engine):
        self.engine = engine

    def __enter__(self):
        return self.engine

    def __exit__(self, *exc):
        self.engine.close()


@pytest.fixture
def store_dir(tmp_path):
    return str(tmp_path / "store")


@pytest.fixture
def engine(store_dir):
    opened = Engine(store_dir)
    yield opened
    opened.close()


# -- files, modes, WAL ------------------------------------------------------------------------

def test_directory_layout_and_private_modes(engine, store_dir):
    engine.create_table("t", [FamilySpec("f")])
    put(engine, "t", b"r", {(b"f", b"q"): b"v"})
    assert stat.S_IMODE(os.stat(store_dir).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(os.path.join(store_dir, "tables")).st_mode) == 0o700
    paths = engine.file_paths()
    assert paths[0] == os.path.join(store_dir, "catalog.sqlite")
    assert len(paths) == 2 and os.path.dirname(paths[1]) == os.path.join(store_dir, "tables")
    for path in paths:
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                assert stat.S_IMODE(os.stat(path + suffix).st_mode) == 0o600, path + suffix


def test_every_file_is_in_wal_mode(engine, store_dir):
    engine.create_table("t", [FamilySpec("f")])
    put(engine, "t", b"r", {(b"f", b"q"): b"v"})
    for path in engine.file_paths():
        conn = sqlite3.connect(path)
        try:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal", path
        finally:
            conn.close()


def test_data_survives_reopen(store_dir):
    with _closing(Engine(store_dir)) as engine:
        engine.create_table("t", [FamilySpec("f", versions=2)])
        put(engine, "t", b"r", {(b"f", b"q"): b"v1"}, timestamp=1)
        put(engine, "t", b"r", {(b"f", b"q"): b"v2"}, timestamp=2)
    with _closing(Engine(store_dir)) as engine:
        assert engine.table_names() == ["t"]
        assert engine.families("t")[b"f"].versions == 2
        assert [c[2:] for c in engine.get("t", [b"r"], versions=5)[0][1]] == [(2, b"v2"), (1, b"v1")]


KILLED_WRITER = textwrap.dedent("""
    import os, signal, sys
    from socorro_store.backends import RowMutation, open_backend
    from socorro_store.schema.specs import FamilySpec, TableSpec

    backend = open_backend(sys.argv[1])
    backend.create_table(TableSpec("t", (FamilySpec("f"),)))
    for batch in range(10):
        backend.mutate_rows("t", [RowMutation(b"r%04d" % (batch * 50 + i), {b"f:q": b"v" * 300})
                                  for i in range(50)])
    backend.increment("t", b"counter", b"f:n", 7)
    print("acknowledged", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # no close(), no checkpoint, no atexit
""")


@pytest.mark.parametrize("sync", ["normal", "full"])
def test_acknowledged_writes_survive_a_killed_process(tmp_path, sync):
    url = f"embedded://{tmp_path / 'store'}?sync={sync}"
    done = subprocess.run([sys.executable, "-c", KILLED_WRITER, url], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == -9, done.stderr
    assert done.stdout.strip() == "acknowledged"
    with open_backend(url) as backend:
        rows = list(backend.scan("t", columns=[b"f:q"]))
        assert len(rows) == 500
        assert backend.get_row("t", b"counter") == {b"f:n": (7).to_bytes(8, "big")}
        assert backend.engine.integrity_check() == []


# -- codecs and compression -------------------------------------------------------------------

JSON_VALUE = json.dumps([{"signature": "js::RunScript", "frame": i, "module": "xul.dll"}
                         for i in range(400)]).encode()


def test_codec_is_recorded_per_cell_and_survives_a_compression_change(engine, store_dir):
    engine.create_table("t", [FamilySpec("z", compression="GZ", versions=3)])
    put(engine, "t", b"r", {(b"z", b"q"): JSON_VALUE}, timestamp=1)
    put(engine, "t", b"r", {(b"z", b"small"): b"tiny"}, timestamp=1)
    engine.close()
    alter_family(store_dir, "t", "z", compression="NONE")
    with _closing(Engine(store_dir)) as reopened:
        put(reopened, "t", b"r", {(b"z", b"q"): JSON_VALUE + b" "}, timestamp=2)
        codecs = raw(reopened, "t", "SELECT qual, ts, codec FROM cells ORDER BY qual, ts")
        assert codecs == [(b"q", 1, codec.ZLIB), (b"q", 2, codec.RAW), (b"small", 1, codec.RAW)]
        cells = reopened.get("t", [b"r"], versions=3)[0][1]
        assert [(q, ts, v) for _f, q, ts, v in cells] == [
            (b"q", 2, JSON_VALUE + b" "), (b"q", 1, JSON_VALUE), (b"small", 1, b"tiny")]


def test_compression_shrinks_compressible_values_on_disk(engine):
    engine.create_table("packed", [FamilySpec("d", compression="GZ")])
    engine.create_table("plain", [FamilySpec("d")])
    for table in ("packed", "plain"):
        engine.mutate(table, [(b"r%03d" % i, [(b"d", b"json", JSON_VALUE)], [], False) for i in range(100)])
        engine.compact(table)  # checkpoints the WAL into the file
        assert get(engine, table, b"r042") == {(b"d", b"json"): JSON_VALUE}
    stored = {t: raw(engine, t, "SELECT sum(length(value)) FROM cells")[0][0] for t in ("packed", "plain")}
    assert stored["plain"] == 100 * len(JSON_VALUE)
    assert stored["packed"] * 5 < stored["plain"]
    sizes = {t: os.path.getsize(engine.catalog.path_of(engine.catalog.get(t))) for t in ("packed", "plain")}
    assert sizes["packed"] * 3 < sizes["plain"]


def test_incompressible_values_are_stored_raw(engine):
    engine.create_table("t", [FamilySpec("d", compression="GZ")])
    noise = os.urandom(4096)
    put(engine, "t", b"r", {(b"d", b"q"): noise})
    assert raw(engine, "t", "SELECT codec, value FROM cells") == [(codec.RAW, noise)]
    assert get(engine, "t", b"r") == {(b"d", b"q"): noise}


# -- hostile names ----------------------------------------------------------------------------

HOSTILE_TABLES = ["x'; DROP TABLE cells; --", "../../escape", "/etc/passwd", 'quo"te', "nul\x00byte",
                  "ünï cödé", "tables", "catalog.sqlite", "a" * 300]


def test_hostile_table_names_never_reach_sql_or_paths(tmp_path):
    store = tmp_path / "store"
    with open_backend(f"embedded://{store}") as backend:
        for i, name in enumerate(HOSTILE_TABLES):
            families = (FamilySpec("f"), FamilySpec("g'); DELETE FROM cells; --"), FamilySpec("h\x00\"x"))
            backend.create_table(TableSpec(name, families))
            backend.mutate_rows(name, [RowMutation(b"row", {b"f:q": b"%d" % i,
                                                            b"g'); DELETE FROM cells; --:q": b"g",
                                                            b"h\x00\"x:q": b"h"})])
        with pytest.raises(TableExists):
            backend.create_table(TableSpec(HOSTILE_TABLES[0], (FamilySpec("f"),)))
        assert backend.list_tables() == sorted(HOSTILE_TABLES)
        for i, name in enumerate(HOSTILE_TABLES):
            assert backend.get_row(name, b"row") == {b"f:q": b"%d" % i, b"g'); DELETE FROM cells; --:q": b"g",
                                                     b"h\x00\"x:q": b"h"}
            assert set(backend.describe_table(name)) == {"f", "g'); DELETE FROM cells; --", "h\x00\"x"}
        backend.drop_table("../../escape")
        assert "../../escape" not in backend.list_tables()
        assert backend.get_row("/etc/passwd", b"row")[b"f:q"] == b"%d" % HOSTILE_TABLES.index("/etc/passwd")
    # nothing outside the store directory, and only generated file names inside it
    assert sorted(os.listdir(tmp_path)) == ["store"]
    assert {n for n in os.listdir(store) if not n.endswith(("-wal", "-shm"))} == {"catalog.sqlite", "tables"}
    table_files = {n for n in os.listdir(store / "tables") if not n.endswith(("-wal", "-shm"))}
    assert len(table_files) == len(HOSTILE_TABLES) - 1
    assert all(n.startswith("t") and n[1:-7].isdigit() and n.endswith(".sqlite") for n in table_files)


def test_unknown_family_with_sql_text_is_just_unknown(engine):
    engine.create_table("t", [FamilySpec("f")])
    with pytest.raises(FamilyNotFound):
        put(engine, "t", b"r", {(b"f' OR '1'='1", b"q"): b"v"})
    assert raw(engine, "t", "SELECT count(*) FROM cells") == [(0,)]


# -- integrity_check --------------------------------------------------------------------------

def test_integrity_check_passes_then_finds_damage(store_dir):
    with _closing(Engine(store_dir)) as engine:
        engine.create_table("good", [FamilySpec("f")])
        engine.create_table("bad", [FamilySpec("f")])
        for table in ("good", "bad"):
            engine.mutate(table, [(b"r%05d" % i, [(b"f", b"q", os.urandom(200))], [], False)
                                  for i in range(2000)])
            engine.compact(table)
        assert engine.integrity_check() == []
        bad_path = engine.catalog.path_of(engine.catalog.get("bad"))
    with open(bad_path, "r+b") as damaged:  # overwrite b-tree pages in the middle of the file
        for page in (5, 40, 80):
            damaged.seek(4096 * page)
            damaged.write(b"\xde\xad\xbe\xef" * 1024)
    with _closing(Engine(store_dir)) as engine:
        problems = engine.integrity_check()
        assert len(problems) == 1 and problems[0].startswith("bad: ")


# -- compaction -------------------------------------------------------------------------------

def test_compact_purges_markers_expired_and_over_version_cells(engine, store_dir):
    engine.create_table("t", [FamilySpec("v", versions=3), FamilySpec("e", ttl=2)])
    old = 1_000
    for ts in (10, 20, 30):
        put(engine, "t", b"r", {(b"v", b"q"): b"v%d" % ts}, timestamp=ts)
    put(engine, "t", b"r", {(b"e", b"q"): b"expired"}, timestamp=old)
    engine.mutate("t", [(b"m", [], [(b"v", b"q")], False)], timestamp=100)
    put(engine, "t", b"m", {(b"v", b"q"): b"masked"}, timestamp=50)
    assert raw(engine, "t", "SELECT count(*) FROM cells WHERE fam=?", (b"v",)) == [(3,)]
    assert raw(engine, "t", "SELECT count(*) FROM cells WHERE fam=?", (b"e",)) == [(1,)]
    assert raw(engine, "t", "SELECT count(*) FROM markers") == [(1,)]
    assert get(engine, "t", b"m") == {}
    engine.close()
    alter_family(store_dir, "t", "v", versions=2)  # now one stored version is over VERSIONS
    with _closing(Engine(store_dir)) as engine:
        engine.compact("t")
        assert raw(engine, "t", "SELECT ts FROM cells WHERE fam=? ORDER BY ts", (b"v",)) == [(20,), (30,)]
        assert raw(engine, "t", "SELECT count(*) FROM cells WHERE fam=?", (b"e",)) == [(0,)]
        assert raw(engine, "t", "SELECT count(*) FROM markers") == [(0,)]
        # with the marker gone, a put older than the old delete is visible again (as after an
        # HBase major compaction)
        put(engine, "t", b"m", {(b"v", b"q"): b"back"}, timestamp=50)
        assert get(engine, "t", b"m") == {(b"v", b"q"): b"back"}
        assert get(engine, "t", b"r") == {(b"v", b"q"): b"v30"}


def test_writes_never_store_more_than_versions(engine):
    engine.create_table("t", [FamilySpec("v", versions=3), FamilySpec("one")])
    for ts in range(1, 11):
        put(engine, "t", b"r", {(b"v", b"q"): b"x", (b"one", b"q"): b"y"}, timestamp=ts)
    assert raw(engine, "t", "SELECT fam, count(*) FROM cells GROUP BY fam ORDER BY fam") == [
        (b"one", 1), (b"v", 3)]


# -- many threads -----------------------------------------------------------------------------

def test_many_threads_reading_and_writing(tmp_path):
    errors = []
    with open_backend(f"embedded://{tmp_path / 'store'}") as backend:
        backend.create_table(TableSpec("t", (FamilySpec("f", versions=2), FamilySpec("n"))))

        def worker(me):
            try:
                prefix = b"w%d:" % me
                for batch in range(10):
                    rows = [prefix + b"%03d" % (batch * 10 + i) for i in range(10)]
                    backend.mutate_rows("t", [RowMutation(r, {b"f:q": r}) for r in rows])
                    assert backend.get_rows("t", rows) == {r: {b"f:q": r} for r in rows}
                    backend.increment("t", b"shared", b"n:count")
                    seen = [row for row, _ in backend.scan("t", prefix=prefix, page_size=7)]
                    assert seen == sorted(seen) and len(seen) == (batch + 1) * 10
            except Exception as exc:  # reported below; an assert in a thread would be lost
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert len(list(backend.scan("t", columns=[b"f"]))) == 800
        assert backend.get_row("t", b"shared") == {b"n:count": (80).to_bytes(8, "big")}
        assert backend.engine.integrity_check() == []


PROCESS_INCREMENTER = textwrap.dedent("""
    import sys
    from socorro_store.backends import Increment, open_backend
    with open_backend(sys.argv[1]) as backend:
        for _ in range(100):
            backend.increment("t", b"c", b"n:a")
            backend.increment_many([Increment("t", b"c", b"n:b", 2)])
""")


def test_two_processes_share_a_directory(tmp_path):
    url = f"embedded://{tmp_path / 'store'}"
    with open_backend(url) as backend:
        backend.create_table(TableSpec("t", (FamilySpec("n"),)))
    procs = [subprocess.Popen([sys.executable, "-c", PROCESS_INCREMENTER, url]) for _ in range(2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    with open_backend(url) as backend:
        assert backend.get_row("t", b"c") == {b"n:a": (200).to_bytes(8, "big"),
                                               b"n:b": (400).to_bytes(8, "big")}
