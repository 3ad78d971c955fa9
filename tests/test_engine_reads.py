"""Column-selective reads of the engine (issue 12): what a get or scan takes from SQLite.

Costs are measured, never timed: SQLite virtual-machine steps (its progress handler on the
reading connection) and the engine's own :class:`ReadStats` (keys examined, values loaded).
Every read is also checked against the same read without selection, so selection changes what
is loaded, never what is returned.
"""

import os
import random
import threading
import time
import tracemalloc

import happybase
import pytest

from socorro_store.engine import Engine
from socorro_store.gateway.server import GatewayServer
from socorro_store.schema.specs import FamilySpec


@pytest.fixture
def engine(tmp_path):
    eng = Engine(str(tmp_path / "store"))
    yield eng
    eng.close()


def _put_row(engine, table, row, family, count, timestamp=None):
    puts = [(family, b"q%06d" % i, b"v%d" % i) for i in range(count)]
    engine.mutate(table, [(row, puts, [], False)], timestamp)


def _vm_steps(engine, table, read):
    """SQLite VM instructions (in units of 10) that ``read()`` runs on this thread's reader."""
    conn = engine._table(table)[1].reader()
    steps = [0]

    def count():
        steps[0] += 1
        return 0

    conn.set_progress_handler(count, 10)
    try:
        result = read()
    finally:
        conn.set_progress_handler(None, 10)
    return steps[0], result


def test_two_column_get_costs_the_same_from_a_wide_row(engine):
    engine.create_table("t", [FamilySpec("d", versions=1), FamilySpec("e", versions=3)])
    _put_row(engine, "t", b"wide", b"d", 80_000, timestamp=1000)
    _put_row(engine, "t", b"narrow", b"d", 100, timestamp=1000)
    columns = [(b"d", b"q000010"), (b"d", b"q000050")]
    wide_steps, wide = _vm_steps(engine, "t", lambda: engine.get("t", [b"wide"], columns))
    narrow_steps, narrow = _vm_steps(engine, "t", lambda: engine.get("t", [b"narrow"], columns))
    assert wide[0][1] == narrow[0][1] == [(b"d", b"q000010", 1000, b"v10"), (b"d", b"q000050", 1000, b"v50")]
    assert wide_steps <= 5 * max(narrow_steps, 1), (wide_steps, narrow_steps)
    before = engine.read_stats.snapshot()
    engine.get("t", [b"wide"], columns)
    after = engine.read_stats.snapshot()
    assert after["keys_examined"] - before["keys_examined"] == 2
    assert after["values_loaded"] - before["values_loaded"] == 2


def test_family_get_costs_the_same_beside_a_wide_family(engine):
    engine.create_table("t", [FamilySpec("d", versions=1), FamilySpec("e", versions=1)])
    _put_row(engine, "t", b"wide", b"d", 50_000)
    _put_row(engine, "t", b"wide", b"e", 3)
    _put_row(engine, "t", b"narrow", b"e", 3)
    wide_steps, found = _vm_steps(engine, "t", lambda: engine.get("t", [b"wide"], [(b"e", None)]))
    narrow_steps, _ = _vm_steps(engine, "t", lambda: engine.get("t", [b"narrow"], [(b"e", None)]))
    assert [c[1] for c in found[0][1]] == [b"q000000", b"q000001", b"q000002"]
    assert wide_steps <= 5 * max(narrow_steps, 1), (wide_steps, narrow_steps)


def test_scan_of_one_column_never_loads_the_dumps(engine):
    """Rows of a small id and a 1 MB dump (and old versions of the id): scanning ``ids:ooid``
    loads the newest id of each row and nothing else."""
    engine.create_table("c", [FamilySpec("ids", versions=3), FamilySpec("raw", versions=1),
                              FamilySpec("zraw", versions=1, compression="GZ")])
    dump = os.urandom(1 << 20)
    rows = 24
    for i in range(rows):
        row = b"row%03d" % i
        for ts in (1000, 2000):  # older versions of the id: not returned, so not loaded
            engine.mutate("c", [(row, [(b"ids", b"ooid", b"old-%d" % i)], [], False)], ts)
        engine.mutate("c", [(row, [(b"ids", b"ooid", b"ooid-%03d" % i), (b"raw", b"dump", dump),
                                   (b"zraw", b"dump", dump)], [], False)])
    before = engine.read_stats.snapshot()
    tracemalloc.start()
    try:
        found = list(engine.scan("c", columns=[(b"ids", b"ooid")], page_size=10))
        reversed_found = list(engine.scan("c", columns=[(b"ids", None)], reverse=True, page_size=7))
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    after = engine.read_stats.snapshot()
    expected = [(b"row%03d" % i, [(b"ids", b"ooid", b"ooid-%03d" % i)]) for i in range(rows)]
    assert [(r, [c[:2] + c[3:] for c in cells]) for r, cells in found] == expected
    assert [(r, [c[:2] + c[3:] for c in cells]) for r, cells in reversed_found] == expected[::-1]
    assert after["values_loaded"] - before["values_loaded"] == 2 * rows
    assert after["value_bytes"] - before["value_bytes"] == 2 * sum(len(b"ooid-000") for _ in range(rows))
    assert peak < len(dump), peak  # not even one dump was held


def _random_table(engine, rng):
    engine.create_table("r", [FamilySpec("a", versions=3), FamilySpec("b", versions=1),
                              FamilySpec("t", versions=2, ttl=3600)])
    now = int(time.time() * 1000)
    for _ in range(400):
        row = b"k%d" % rng.randrange(12)
        fam = rng.choice([b"a", b"b", b"t"])
        qual = b"q%d" % rng.randrange(5)
        ts = rng.choice([100, 200, 300, now - 7_200_000, now + rng.randrange(1000)])
        if rng.random() < 0.15:
            engine.mutate("r", [(row, [], [(fam, qual if rng.random() < 0.5 else None)], False)], ts)
        else:
            engine.mutate("r", [(row, [(fam, qual, os.urandom(rng.randrange(1, 300)))], [], False)], ts)


def _selected(cells, columns):
    wanted = set(columns)
    return [c for c in cells if (c[0], None) in wanted or (c[0], c[1]) in wanted]


@pytest.mark.parametrize("seed", range(4))
def test_selection_returns_what_a_full_read_returns_for_those_columns(engine, seed):
    """Versions, read timestamps, TTL and delete markers give the same cells with or without
    pushing the selection into SQL (gets and scans, both directions)."""
    rng = random.Random(seed)
    _random_table(engine, rng)
    rows = [b"k%d" % i for i in range(12)]
    for _ in range(30):
        columns = rng.sample([(b"a", None), (b"a", b"q1"), (b"a", b"q3"), (b"b", b"q0"), (b"b", None),
                              (b"t", b"q2"), (b"t", None), (b"a", b"nope")], rng.randrange(1, 4))
        kwargs = {"timestamp": rng.choice([None, 150, 250, 10**15]), "versions": rng.choice([1, 2, 5])}
        full = {row: _selected(cells, columns) for row, cells in engine.get("r", rows, **kwargs)}
        full = {row: cells for row, cells in full.items() if cells}
        assert dict(engine.get("r", rows, columns, **kwargs)) == full
        reverse = rng.random() < 0.5
        scanned = list(engine.scan("r", columns=columns, reverse=reverse, page_size=rng.randrange(1, 5),
                                   **kwargs))
        assert scanned == sorted(full.items(), reverse=reverse)


def test_gateway_get_and_scan_read_only_the_requested_columns(engine):
    """happybase through a real gateway (in this process, so the engine's counters show)."""
    server = GatewayServer(engine, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        conn = happybase.Connection("127.0.0.1", server.port, autoconnect=True)
        conn.create_table("crash", {"ids": {"max_versions": 1}, "raw": {"max_versions": 1}})
        table = conn.table("crash")
        dump = os.urandom(256 * 1024)
        for i in range(8):
            table.put(b"r%d" % i, {b"ids:ooid": b"id%d" % i, b"raw:dump": dump})
        before = engine.read_stats.snapshot()
        assert table.row(b"r3", columns=[b"ids:ooid"]) == {b"ids:ooid": b"id3"}
        assert [key for key, _ in table.scan(columns=[b"ids"])] == [b"r%d" % i for i in range(8)]
        assert table.row(b"r3", columns=[b"raw"]) == {b"raw:dump": dump}
        after = engine.read_stats.snapshot()
        assert after["values_loaded"] - before["values_loaded"] == 1 + 8 + 1
        assert after["value_bytes"] - before["value_bytes"] == len(b"id3") + 8 * len(b"id0") + len(dump)
        conn.close()
    finally:
        server.stop()
        server.wait_stopped(10)
