"""The engine's fast paths against its general ones: reads in one query, increments without a prune.

``direct_reads.py`` answers reads of one-version families in one query and no per-cell Python;
``reads.DIRECT = False`` sends every read the general way (keys, read rules in Python, values by
rowid), the reference here.  ``Engine.increment`` and ``append`` write a counter in one statement
when the column's cells say what a prune would drop (``engine._write_over``); the reference is the
insert plus prune of every other write (``engine._insert_and_prune``).

The engine's clock is fixed (``now_ms`` patched), so TTLs and "a later millisecond" are exact.
Statements are observed with SQLite's trace callback; nothing here is timed.
"""

import contextlib
import json
import os
import random
import sqlite3
import zlib

import pytest

from socorro_store.engine import Engine, codec, reads
from socorro_store.engine import engine as engine_module
from socorro_store.engine.direct_reads import CELLS, VALUES, VALUES_TS
from socorro_store.errors import NotACounter
from socorro_store.schema.specs import FamilySpec

NOW = 1_700_000_000_000
SHAPES = (CELLS, VALUES, VALUES_TS)


@pytest.fixture
def clock(monkeypatch):
    """The engine's ``now_ms``: ``clock[0]``."""
    now = [NOW]
    monkeypatch.setattr(engine_module, "now_ms", lambda: now[0])
    return now


@pytest.fixture
def store_dir(tmp_path):
    return str(tmp_path / "store")


@pytest.fixture
def engine(store_dir, clock):
    opened = Engine(store_dir)
    yield opened
    opened.close()


def put(engine, table, row, cells, ts=None):
    engine.mutate(table, [(row, [(f, q, v) for (f, q), v in cells.items()], [], False)], ts)


def raw(engine, table, sql, args=()):
    """Run ``sql`` on the table's SQLite file, bypassing the engine (committed)."""
    conn = sqlite3.connect(engine.catalog.path_of(engine.catalog.get(table)))
    try:
        rows = conn.execute(sql, args).fetchall()
        conn.commit()
        return rows
    finally:
        conn.close()


def cells_of(engine, table):
    return raw(engine, table, "SELECT row, fam, qual, ts, codec, value FROM cells ORDER BY row, fam, qual, ts")


def alter_family(directory, table, family, **attributes):
    """Change a family's attributes in the catalog, as an operator altering a table would."""
    conn = sqlite3.connect(os.path.join(directory, "catalog.sqlite"))
    try:
        (attrs,) = conn.execute("SELECT attrs FROM families WHERE tbl=? AND name=?",
                                (table.encode(), family.encode())).fetchone()
        conn.execute("UPDATE families SET attrs=? WHERE tbl=? AND name=?",
                     (json.dumps({**json.loads(attrs), **attributes}), table.encode(), family.encode()))
        conn.commit()
    finally:
        conn.close()


@contextlib.contextmanager
def traced(conn):
    """The statements ``conn`` runs inside the block."""
    statements = []
    conn.set_trace_callback(statements.append)
    try:
        yield statements
    finally:
        conn.set_trace_callback(None)


def reader_statements(engine, table, read):
    """``(result, statements)`` of ``read()`` on the reader the next read borrows."""
    with traced(engine._table(table)[1].reader()) as statements:
        result = read()
    return result, statements


def is_direct(statement):
    return "cell_value(codec, value)" in statement


def is_general(statement):
    return "ts, rowid FROM" in statement or "ts, codec, value FROM" in statement


def direct_and_general(read):
    """``read()`` the direct way (where it applies) and the general way."""
    try:
        reads.DIRECT = False
        general = read()
    finally:
        reads.DIRECT = True
    return read(), general


def check_every_read(engine, table, rows, columns, **kwargs):
    """Gets and scans (both directions, every shape) agree with the general way; returns the
    CELLS get, and whether a direct query ran."""
    direct_ran = False
    for shape in SHAPES:
        (fast, statements), (slow, _) = direct_and_general(lambda: reader_statements(
            engine, table, lambda: engine.get(table, rows, columns, shape=shape, **kwargs)))
        assert fast == slow, (shape, columns, kwargs)
        direct_ran |= any(map(is_direct, statements))
        if shape == CELLS:
            result = fast
        for reverse in (False, True):
            for page_size in (1, 2, 1000):
                fast, slow = direct_and_general(lambda: list(engine.scan(
                    table, columns=columns, reverse=reverse, page_size=page_size, shape=shape, **kwargs)))
                assert fast == slow, (shape, columns, kwargs, reverse, page_size)
    return result, direct_ran


# -- reads ---------------------------------------------------------------------------------------

def test_a_lowered_versions_never_returns_a_stale_version(store_dir, clock):
    """Columns holding three versions in a family now keeping one (an operator lowered VERSIONS):
    the one query sees each column three times, and the read must still be the newest visible
    version.  A fast path trusting the pruning would return every version (or, building dicts in
    query order, the oldest)."""
    with contextlib.closing(Engine(store_dir)) as engine:
        engine.create_table("t", [FamilySpec("d", versions=3), FamilySpec("z", versions=3, compression="GZ")])
        for ts in (100, 200, 300):
            put(engine, "t", b"r", {(b"d", b"q"): b"v%d" % ts, (b"z", b"q"): b"z%d" % ts * 100}, ts)
        put(engine, "t", b"r", {(b"d", b"single"): b"s"}, 100)
        put(engine, "t", b"r2", {(b"d", b"q"): b"only"}, 100)
    alter_family(store_dir, "t", "d", versions=1)
    alter_family(store_dir, "t", "z", versions=1)
    with contextlib.closing(Engine(store_dir)) as engine:
        rows = [b"r", b"r2", b"missing"]
        for columns in (None, [(b"d", None)], [(b"d", b"q")], [(b"d", b"q"), (b"z", None)]):
            for timestamp in (None, 301, 300, 250, 150, 100):
                check_every_read(engine, "t", rows, columns, timestamp=timestamp)
        assert dict(engine.get("t", [b"r"], shape=VALUES)) == {
            b"r": {b"d:q": b"v300", b"d:single": b"s", b"z:q": b"z300" * 100}}
        assert dict(engine.get("t", [b"r"], [(b"d", b"q")], timestamp=250, shape=VALUES_TS)) == {
            b"r": {b"d:q": (b"v200", 200)}}
        assert engine.get("t", [b"r"], [(b"d", b"q")], timestamp=250) == [(b"r", [(b"d", b"q", 200, b"v200")])]
        # the other row, whose columns hold one cell, is still read in one query
        _, statements = reader_statements(engine, "t", lambda: engine.get("t", [b"r2"], shape=VALUES))
        assert any(map(is_direct, statements)) and not any(map(is_general, statements))


def test_deleted_cells_stay_deleted(engine):
    engine.create_table("t", [FamilySpec("d"), FamilySpec("e")])
    put(engine, "t", b"r", {(b"d", b"q"): b"old", (b"d", b"keep"): b"k", (b"e", b"x"): b"x"}, 100)
    engine.mutate("t", [(b"r", [], [(b"d", b"q"), (b"e", None)], False)], 200)
    put(engine, "t", b"r", {(b"d", b"q"): b"masked", (b"e", b"x"): b"masked"}, 150)  # under the markers
    put(engine, "t", b"gone", {(b"d", b"q"): b"v"}, 100)
    engine.mutate("t", [(b"gone", [], [], True)], 100)
    rows = [b"r", b"gone"]
    for columns in (None, [(b"d", None)], [(b"d", b"q")], [(b"e", b"x"), (b"d", b"keep")]):
        check_every_read(engine, "t", rows, columns)
    assert engine.get("t", rows, shape=VALUES) == [(b"r", {b"d:keep": b"k"})]
    put(engine, "t", b"r", {(b"d", b"q"): b"new"}, 300)
    found, direct_ran = check_every_read(engine, "t", rows, [(b"d", b"q")])
    assert found == [(b"r", [(b"d", b"q", 300, b"new")])] and direct_ran


def test_ttl_hides_expired_cells_in_the_query(engine):
    """One whole-row query over a family with a TTL and one without: the TTL applies to its
    family only."""
    engine.create_table("t", [FamilySpec("p"), FamilySpec("t", ttl=3600)])
    put(engine, "t", b"r", {(b"t", b"old"): b"1", (b"p", b"old"): b"2"}, NOW - 2 * 3600 * 1000)
    put(engine, "t", b"r", {(b"t", b"new"): b"3"}, NOW - 60 * 1000)
    put(engine, "t", b"r", {(b"t", b"edge"): b"4"}, NOW - 3600 * 1000)  # exactly TTL old: expired
    put(engine, "t", b"expired", {(b"t", b"q"): b"5"}, NOW - 2 * 3600 * 1000)
    rows = [b"r", b"expired"]
    for columns in (None, [(b"t", None)], [(b"t", b"old"), (b"t", b"new")], [(b"p", None), (b"t", b"edge")]):
        for timestamp in (None, NOW, NOW - 60 * 1000):
            check_every_read(engine, "t", rows, columns, timestamp=timestamp)
    found, direct_ran = check_every_read(engine, "t", rows, None)
    assert direct_ran
    assert [(f, q) for f, q, _ts, _v in found[0][1]] == [(b"p", b"old"), (b"t", b"new")]
    assert len(found) == 1


def test_one_qualifier_in_two_families_is_no_repeat(engine):
    """Adjacent equal qualifiers of two families are two columns: read in one query, both kept."""
    engine.create_table("t", [FamilySpec("a"), FamilySpec("b")])
    put(engine, "t", b"r", {(b"a", b"x"): b"1", (b"b", b"x"): b"2", (b"b", b"y"): b"3"}, 100)
    put(engine, "t", b"s", {(b"a", b"x"): b"4"}, 100)
    for shape in SHAPES:
        found, statements = reader_statements(engine, "t", lambda: engine.get("t", [b"r", b"s"], shape=shape))
        assert not any(map(is_general, statements)), statements
        assert len(found[0][1]) == 3 and len(found[1][1]) == 1
    scanned, statements = reader_statements(engine, "t", lambda: list(engine.scan("t")))
    assert not any(map(is_general, statements))
    assert [len(cells) for _row, cells in scanned] == [3, 1]


def test_a_get_is_one_query_per_family_whatever_its_rows(engine):
    engine.create_table("t", [FamilySpec("d"), FamilySpec("e")])
    for row in (b"r1", b"r2", b"r3"):
        put(engine, "t", row, {(b"d", b"q%04d" % i): b"%d" % i for i in range(300)})
    rows = [b"r3", b"r1", b"nope", b"r2", b"r1"]  # request order, a row asked twice
    for columns, per_get in ((None, 1), ([(b"d", None)], 1), ([(b"d", b"q0001"), (b"e", None)], 2)):
        found, statements = reader_statements(engine, "t", lambda: engine.get("t", rows, columns, shape=VALUES))
        selects = [s for s in statements if s.startswith("SELECT")]
        assert len(selects) == per_get and all(map(is_direct, selects)), selects
        assert [row for row, _cells in found] == [b"r3", b"r1", b"r2", b"r1"]
        single = [engine.get("t", [row], columns, shape=VALUES) for row in rows]
        assert found == [answer[0] for answer in single if answer]  # the same cells as row by row
    found, statements = reader_statements(engine, "t", lambda: list(engine.scan("t", page_size=10)))
    assert sum(len(cells) for _row, cells in found) == 900
    assert not any(map(is_general, statements))


def test_a_wide_sparse_get_first_finds_the_rows_that_exist(engine):
    """Rows x qualifiers at or over PROBES_WORTH_A_CHECK: one query finds the rows that exist,
    and the cells query names only those (its seeks go to rows that are there)."""
    engine.create_table("t", [FamilySpec("d")])
    for n in range(0, 300, 3):  # a row in three exists
        put(engine, "t", b"r%03d" % n, {(b"d", b"q%02d" % (n % 40)): b"%d" % n, (b"d", b"zz"): b"z"})
    rows = [b"r%03d" % n for n in range(300)]
    columns = [(b"d", b"q%02d" % i) for i in range(40)]  # 12,000 seeks without the check
    found, statements = reader_statements(engine, "t", lambda: engine.get("t", rows, columns, shape=VALUES))
    selects = [s for s in statements if s.startswith("SELECT")]
    assert len(selects) == 2 and "EXISTS" in selects[0], selects
    assert selects[1].count("?") < 100 + 40 + 10  # the 100 rows that exist, not 300
    assert found == [(b"r%03d" % n, {b"d:q%02d" % (n % 40): b"%d" % n}) for n in range(0, 300, 3)]
    small, statements = reader_statements(engine, "t", lambda: engine.get("t", rows[:30], columns[:2], shape=VALUES))
    assert not any("EXISTS" in s for s in statements)  # 60 seeks: no check
    assert small == [(b"r000", {b"d:q00": b"0"})]


def test_compressed_values_decode_and_count_their_stored_bytes(engine):
    engine.create_table("t", [FamilySpec("z", compression="GZ"), FamilySpec("d")])
    big = json.dumps([{"frame": i, "module": "xul.dll"} for i in range(300)]).encode()
    put(engine, "t", b"r", {(b"z", b"big"): big, (b"z", b"small"): b"tiny", (b"d", b"q"): b"plain"}, 100)
    stored = sum(len(v) for (v,) in raw(engine, "t", "SELECT value FROM cells"))
    assert stored < len(big)  # the big value is compressed on disk
    for shape in SHAPES:
        counted = []
        for direct in (True, False):
            reads.DIRECT = direct
            try:
                before = engine.read_stats.snapshot()
                found = engine.get("t", [b"r"], shape=shape)
                after = engine.read_stats.snapshot()
            finally:
                reads.DIRECT = True
            counted.append((found, after["values_loaded"] - before["values_loaded"],
                            after["value_bytes"] - before["value_bytes"]))
        assert counted[0] == counted[1] == (counted[0][0], 3, stored)
    assert dict(engine.get("t", [b"r"], shape=VALUES))[b"r"][b"z:big"] == big


def test_an_unknown_codec_raises_the_same_error_both_ways(engine):
    engine.create_table("t", [FamilySpec("d")])
    put(engine, "t", b"r", {(b"d", b"q"): b"v"}, 100)
    raw(engine, "t", "UPDATE cells SET codec=7")
    for shape in SHAPES:
        for direct in (True, False):
            reads.DIRECT = direct
            try:
                with pytest.raises(ValueError, match="unknown cell codec 7"):
                    engine.get("t", [b"r"], shape=shape)
                with pytest.raises(ValueError, match="unknown cell codec 7"):
                    list(engine.scan("t", shape=shape))
            finally:
                reads.DIRECT = True
    raw(engine, "t", "UPDATE cells SET codec=?, value=?", (codec.ZLIB, zlib.compress(b"fine")))
    assert engine.get("t", [b"r"], shape=VALUES) == [(b"r", {b"d:q": b"fine"})]


def test_hostile_qualifier_bytes_make_exact_keys(engine):
    engine.create_table("t", [FamilySpec("d")])
    quals = [b"", b"\x00", b"\x00\x00", b"a:b", b"\xff\xfe", b"\xc3", b"caf\xc3\xa9", b"\x80" * 40]
    put(engine, "t", b"\x00row\xff", {(b"d", q): q + b"!" for q in quals}, 100)
    check_every_read(engine, "t", [b"\x00row\xff"], None)
    found = dict(engine.get("t", [b"\x00row\xff"], shape=VALUES))[b"\x00row\xff"]
    assert found == {b"d:" + q: q + b"!" for q in sorted(quals)}
    assert list(found) == [b"d:" + q for q in sorted(quals)]


@pytest.mark.parametrize("seed", range(6))
def test_random_tables_read_the_same_both_ways(engine, clock, seed):
    """Puts at past, present and future timestamps, column/family/row deletes, expired cells and
    (written behind the engine) extra versions in one-version families."""
    rng = random.Random(seed)
    engine.create_table("r", [FamilySpec("a"), FamilySpec("b", ttl=3600), FamilySpec("c", versions=2),
                              FamilySpec("z", compression="GZ")])
    families = [b"a", b"b", b"c", b"z"]
    rows = [b"k%d" % i for i in range(8)]
    stamps = [100, 200, 300, NOW - 7_200_000, NOW - 1000, NOW, NOW + 5000]
    for _ in range(300):
        row, fam, qual = rng.choice(rows), rng.choice(families), b"q%d" % rng.randrange(5)
        ts, dice = rng.choice(stamps), rng.random()
        if dice < 0.1:
            engine.mutate("r", [(row, [], [(fam, qual if rng.random() < 0.5 else None)], False)], ts)
        elif dice < 0.12:
            engine.mutate("r", [(row, [], [], True)], ts)
        elif dice < 0.17:  # a second version the engine's pruning would never leave
            raw(engine, "r", "INSERT OR REPLACE INTO cells VALUES (?,?,?,?,0,?)",
                (row, fam, qual, ts + rng.randrange(1, 50), os.urandom(5)))
        else:
            value = os.urandom(rng.randrange(1, 40)) * rng.choice([1, 20])
            put(engine, "r", row, {(fam, qual): value}, ts)
    direct_ran = False
    for _ in range(25):
        columns = rng.choice([None, None, rng.sample([(b"a", None), (b"a", b"q1"), (b"b", None), (b"b", b"q2"),
                                                      (b"c", b"q0"), (b"z", None), (b"a", b"none")],
                                                     rng.randrange(1, 4))])
        kwargs = {"timestamp": rng.choice([None, 150, 250, NOW, NOW + 1]), "versions": rng.choice([1, 1, 2])}
        direct_ran |= check_every_read(engine, "r", rows + [b"nope"], columns, **kwargs)[1]
    assert direct_ran


# -- increments and appends -----------------------------------------------------------------------

@contextlib.contextmanager
def reference_writes():
    """Every increment and append writes with an insert and a prune."""
    fast = engine_module._write_over

    def general(conn, _column, *args):
        engine_module._insert_and_prune(conn, *args)

    engine_module._write_over = general
    try:
        yield
    finally:
        engine_module._write_over = fast


def _apply(engine, op):
    kind, args = op
    try:
        if kind == "increment":
            return engine.increment("t", args)
        if kind == "append":
            return engine.append("t", *args)
        if kind == "put":
            return engine.mutate("t", [(args[0], [args[1]], [], False)], args[2])
        return engine.mutate("t", [(args[0], [], [args[1]], False)], args[2])
    except NotACounter as exc:
        return repr(exc)


@pytest.mark.parametrize("seed", range(6))
def test_increments_and_appends_write_what_an_insert_and_prune_writes(tmp_path, clock, seed):
    """Two stores take the same operations, one writing the general way; after every one their
    cells (ts, codec and value) and answers are the same.  The clock stays, steps forward, past
    a TTL, and back; puts land in the future and in the past."""
    rng = random.Random(seed)
    specs = [FamilySpec("c"), FamilySpec("v", versions=3), FamilySpec("t", ttl=2),
             FamilySpec("g", versions=2, compression="GZ"), FamilySpec("n", versions=0)]
    fast, slow = Engine(str(tmp_path / "fast")), Engine(str(tmp_path / "slow"))
    try:
        for engine in (fast, slow):
            engine.create_table("t", specs)
        families = [b"c", b"v", b"t", b"g", b"n"]
        for _ in range(400):
            clock[0] += rng.choice([0, 0, 1, 3, 2500, -2])
            row, fam = b"r%d" % rng.randrange(3), rng.choice(families)
            qual = b"q%d" % rng.randrange(3)
            dice = rng.random()
            if dice < 0.55:
                op = ("increment", [(row, fam, qual, rng.randrange(-3, 9))
                                    for _ in range(rng.randrange(1, 4))])
            elif dice < 0.7:
                op = ("append", (row, [(fam, qual, os.urandom(rng.randrange(1, 4)) * rng.choice([1, 80]))]))
            elif dice < 0.9:
                op = ("put", (row, (fam, qual, os.urandom(8)), clock[0] + rng.choice([-5000, -1, 0, 1, 5000])))
            else:
                op = ("delete", (row, (fam, qual), clock[0] + rng.choice([-1, 0, 3])))
            answer = _apply(fast, op)
            with reference_writes():
                expected = _apply(slow, op)
            assert answer == expected, op
            assert cells_of(fast, "t") == cells_of(slow, "t"), op
    finally:
        fast.close()
        slow.close()


def test_an_increment_in_a_later_millisecond_replaces_the_one_version(engine, clock):
    """A counter of a one-version family: one UPDATE, no prune, and still one cell."""
    engine.create_table("t", [FamilySpec("c"), FamilySpec("v", versions=3), FamilySpec("t", ttl=60)])
    assert engine.increment("t", [(b"r", b"c", b"n", 5)]) == [5]
    writer = engine._table("t")[1].writer
    for step in range(1, 4):
        clock[0] = NOW + step
        with traced(writer) as statements:
            counts = engine.increment("t", [(b"r", b"c", b"n", 1), (b"r", b"c", b"n", 1)])
        assert counts == [5 + 2 * step - 1, 5 + 2 * step]
        writes = [s.split()[0] for s in statements if not s.startswith(("BEGIN", "COMMIT", "SELECT"))]
        assert writes == ["UPDATE", "UPDATE"], statements
    assert raw(engine, "t", "SELECT ts, value FROM cells WHERE fam=?", (b"c",)) == [(NOW + 3, (11).to_bytes(8, "big"))]
    for step in range(5):  # three versions kept: the fourth increment overwrites the oldest
        clock[0] = NOW + 10 + step
        engine.increment("t", [(b"r", b"v", b"n", 1)])
    assert raw(engine, "t", "SELECT ts, value FROM cells WHERE fam=? ORDER BY ts", (b"v",)) == [
        (NOW + 10 + step, (step + 1).to_bytes(8, "big")) for step in (2, 3, 4)]
    assert engine.get("t", [b"r"], [(b"v", None)], versions=5)[0][1] == [
        (b"v", b"n", NOW + 10 + step, (step + 1).to_bytes(8, "big")) for step in (4, 3, 2)]
    engine.increment("t", [(b"r", b"t", b"n", 7)])
    clock[0] += 60_000  # expired: the counter starts again, and the expired cell is gone
    assert engine.increment("t", [(b"r", b"t", b"n", 1)]) == [1]
    assert raw(engine, "t", "SELECT ts, value FROM cells WHERE fam=?", (b"t",)) == [(clock[0], (1).to_bytes(8, "big"))]


def test_an_increment_over_a_lowered_versions_prunes_the_extra_versions(store_dir, clock):
    with contextlib.closing(Engine(store_dir)) as engine:
        engine.create_table("t", [FamilySpec("c", versions=3)])
        for ts in (100, 200, 300):
            put(engine, "t", b"r", {(b"c", b"n"): (ts).to_bytes(8, "big")}, ts)
    alter_family(store_dir, "t", "c", versions=1)
    with contextlib.closing(Engine(store_dir)) as engine:
        clock[0] = 300  # the newest cell's millisecond: its value is replaced, the others pruned
        assert engine.increment("t", [(b"r", b"c", b"n", 1)]) == [301]
        assert raw(engine, "t", "SELECT ts, value FROM cells") == [(300, (301).to_bytes(8, "big"))]
