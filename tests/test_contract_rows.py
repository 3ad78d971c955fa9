"""Contract: puts and gets, column selection, timestamps, versions and TTL (reference §0, §3, §8)."""

import time

import pytest
from contract_helpers import HOUR_MS, all_rows, counter, now_ms, put, skip_if, spec

from socorro_store.backends.base import RowMutation
from socorro_store.schema.specs import FamilySpec


@pytest.fixture
def t(backend):
    backend.create_table(spec())
    return "t"


# -- puts and gets ----------------------------------------------------------------------------

def test_put_then_get(backend, t):
    put(backend, t, b"r1", {b"cf:a": b"1", b"one:b": b"2", b"z:c": b"3" * 1000})
    assert backend.get_row(t, b"r1") == {b"cf:a": b"1", b"one:b": b"2", b"z:c": b"3" * 1000}
    assert backend.get_row(t, b"missing") == {}


def test_get_rows_in_request_order_missing_omitted(backend, t):
    backend.mutate_rows(t, [RowMutation(r, {b"cf:q": r.upper()}) for r in (b"a", b"b", b"c", b"d")])
    found = backend.get_rows(t, [b"d", b"x", b"b", b"a", b"zz"])
    assert list(found) == [b"d", b"b", b"a"]
    assert found == {b"d": {b"cf:q": b"D"}, b"b": {b"cf:q": b"B"}, b"a": {b"cf:q": b"A"}}
    assert backend.get_rows(t, []) == {}


def test_get_rows_columns_reads_each_rows_own_columns(backend, t):
    backend.mutate_rows(t, [RowMutation(r, {b"cf:a": r + b"a", b"cf:b": r + b"b", b"one:c": r + b"c"})
                            for r in (b"r1", b"r2", b"r3")])
    found = backend.get_rows_columns(t, {b"r1": [b"cf:a"], b"r2": [b"cf:b", b"one:c", b"cf:zz"],
                                         b"r3": [b"cf:zz"], b"missing": [b"cf:a"]})
    assert found == {b"r1": {b"cf:a": b"r1a"}, b"r2": {b"cf:b": b"r2b", b"one:c": b"r2c"}}
    assert backend.get_rows_columns(t, {}) == {}


@pytest.mark.parametrize("columns_by_row", [[b"r1"], {b"r1": []}, {b"r1": [b"cf"]}, {b"": [b"cf:a"]},
                                            {b"r1": b"cf:a"}])
def test_get_rows_columns_refuses_what_names_no_cells(backend, t, columns_by_row):
    from socorro_store.errors import InvalidArgument  # noqa: PLC0415

    with pytest.raises(InvalidArgument):
        backend.get_rows_columns(t, columns_by_row)


def test_values_are_bytes_exactly(backend, t):
    values = {b"cf:empty": b"", b"cf:nul": b"\x00\x00", b"cf:high": bytes(range(256)),
              b"z:big": bytes(range(256)) * 4000}
    put(backend, t, b"r", values)
    assert backend.get_row(t, b"r") == values


def test_empty_qualifier_and_colons_in_qualifiers(backend, t):
    put(backend, t, b"r", {b"cf:": b"empty", b"cf:a": b"a", b"cf:a:b": b"a:b", b"cf::": b"colon",
                           b"one:x": b"x"})
    row = backend.get_row(t, b"r")
    assert row == {b"cf:": b"empty", b"cf:a": b"a", b"cf:a:b": b"a:b", b"cf::": b"colon",
                   b"one:x": b"x"}


@pytest.mark.parametrize("columns, expected", [
    ([b"cf"], {b"cf:": b"empty", b"cf:a": b"a", b"cf:a:b": b"a:b"}),   # bare family: all of it
    ([b"cf:"], {b"cf:": b"empty"}),                                     # empty qualifier only
    ([b"cf:a"], {b"cf:a": b"a"}),                                       # not cf:a:b
    ([b"cf:a:b"], {b"cf:a:b": b"a:b"}),                                 # split at the first ':'
    ([b"cf:a", b"one"], {b"cf:a": b"a", b"one:x": b"x", b"one:y": b"y"}),
    ([b"one:y", b"cf:", b"cf:zzz"], {b"one:y": b"y", b"cf:": b"empty"}),
    ([], {b"cf:": b"empty", b"cf:a": b"a", b"cf:a:b": b"a:b", b"one:x": b"x", b"one:y": b"y"}),
])
def test_column_selection(backend, t, columns, expected):
    put(backend, t, b"r", {b"cf:": b"empty", b"cf:a": b"a", b"cf:a:b": b"a:b", b"one:x": b"x",
                           b"one:y": b"y"})
    assert backend.get_row(t, b"r", columns=columns) == expected
    assert backend.get_rows(t, [b"r"], columns=columns) == {b"r": expected}
    assert all_rows(backend, t, columns=columns) == [(b"r", expected)]


def test_selection_matching_nothing_omits_row(backend, t):
    put(backend, t, b"r", {b"cf:a": b"a"})
    assert backend.get_row(t, b"r", columns=[b"one"]) == {}
    assert backend.get_rows(t, [b"r"], columns=[b"cf:b"]) == {}
    assert all_rows(backend, t, columns=[b"cf:b"]) == []


def test_include_timestamp(backend, t):
    put(backend, t, b"r", {b"cf:a": b"1", b"one:b": b"2"}, timestamp=1234)
    assert backend.get_row(t, b"r", include_timestamp=True) == {b"cf:a": (b"1", 1234),
                                                                b"one:b": (b"2", 1234)}
    assert all_rows(backend, t, include_timestamp=True) == [
        (b"r", {b"cf:a": (b"1", 1234), b"one:b": (b"2", 1234)})]


def test_server_time_when_no_timestamp(backend, t):
    before = now_ms()
    put(backend, t, b"r", {b"cf:a": b"1", b"one:b": b"2", b"cf:c": b"3"})
    after = now_ms()
    row = backend.get_row(t, b"r", include_timestamp=True)
    stamps = {ts for _value, ts in row.values()}
    assert len(stamps) == 1, "one mutation's cells share one server time"
    # a server clock, so allow a little skew, but it must be "now", not 0 or the far future
    assert before - 5000 <= stamps.pop() <= after + 5000


def test_one_server_time_for_a_whole_call(backend, backend_kind, t):
    skip_if(backend_kind, "hbase-docker", "HBase stamps each mutateRows mini-batch separately; "
            "one time across rows is not guaranteed (reference §4)")
    backend.mutate_rows(t, [RowMutation(b"r%d" % i, {b"cf:a": b"x", b"one:b": b"y"}) for i in range(20)])
    stamps = {ts for _row, cells in all_rows(backend, t, include_timestamp=True)
              for _value, ts in cells.values()}
    assert len(stamps) == 1


# -- versions ---------------------------------------------------------------------------------

def test_versions_newest_first_capped_by_family(backend, t):
    for ts in (10, 20, 30):
        put(backend, t, b"r", {b"cf:q": b"v%d" % ts, b"one:q": b"v%d" % ts}, timestamp=ts)
    assert backend.get_cells(t, b"r", b"cf:q") == [(b"v30", 30), (b"v20", 20), (b"v10", 10)]
    assert backend.get_cells(t, b"r", b"cf:q", versions=2) == [(b"v30", 30), (b"v20", 20)]
    assert backend.get_cells(t, b"r", b"cf:q", versions=1) == [(b"v30", 30)]
    assert backend.get_cells(t, b"r", b"one:q") == [(b"v30", 30)]
    assert backend.get_cells(t, b"r", b"one:q", versions=10) == [(b"v30", 30)]
    assert backend.get_row(t, b"r") == {b"cf:q": b"v30", b"one:q": b"v30"}
    assert backend.get_cells(t, b"r", b"cf:missing") == []
    assert backend.get_cells(t, b"missing", b"cf:q") == []


def test_more_versions_than_family_keeps_newest(backend, t):
    for ts in (10, 20, 30, 40, 50):
        put(backend, t, b"r", {b"cf:q": b"v%d" % ts}, timestamp=ts)
    assert backend.get_cells(t, b"r", b"cf:q") == [(b"v50", 50), (b"v40", 40), (b"v30", 30)]


def test_older_than_versions_write_is_invisible(backend, t):
    for ts in (100, 200, 300):
        put(backend, t, b"r", {b"cf:q": b"v%d" % ts, b"one:q": b"v%d" % ts}, timestamp=ts)
    put(backend, t, b"r", {b"cf:q": b"old", b"one:q": b"old"}, timestamp=50)
    assert backend.get_cells(t, b"r", b"cf:q") == [(b"v300", 300), (b"v200", 200), (b"v100", 100)]
    assert backend.get_cells(t, b"r", b"one:q") == [(b"v300", 300)]
    assert backend.get_row(t, b"r") == {b"cf:q": b"v300", b"one:q": b"v300"}


def test_same_timestamp_rewrite_last_wins(backend, t):
    put(backend, t, b"r", {b"cf:q": b"first"}, timestamp=10)
    put(backend, t, b"r", {b"cf:q": b"second"}, timestamp=10)
    assert backend.get_cells(t, b"r", b"cf:q") == [(b"second", 10)]


def test_same_timestamp_rewrite_last_wins_in_every_family_kind(backend, t):
    """The equal-timestamp rule at server time too: a put in the millisecond of the stored
    version replaces it (one version, compressed or not), never sits beside or behind it."""
    ts = now_ms() + HOUR_MS  # explicit: both puts land in one millisecond, whatever the clock
    big = b"x" * 4096  # compressible: stored zlib'd in the compressed family
    put(backend, t, b"r", {b"cf:q": b"first", b"one:q": b"first", b"z:q": big}, timestamp=ts)
    put(backend, t, b"r", {b"cf:q": b"second", b"one:q": b"second", b"z:q": b"small"}, timestamp=ts)
    assert backend.get_cells(t, b"r", b"cf:q") == [(b"second", ts)]
    assert backend.get_row(t, b"r", include_timestamp=True) == {
        b"cf:q": (b"second", ts), b"one:q": (b"second", ts), b"z:q": (b"small", ts)}


def test_explicit_older_timestamp_does_not_replace_newer(backend, t):
    put(backend, t, b"r", {b"cf:q": b"new"}, timestamp=20)
    put(backend, t, b"r", {b"cf:q": b"older"}, timestamp=10)
    assert backend.get_row(t, b"r") == {b"cf:q": b"new"}
    assert backend.get_cells(t, b"r", b"cf:q") == [(b"new", 20), (b"older", 10)]


def test_read_timestamp_is_exclusive(backend, t):
    for ts in (10, 20, 30):
        put(backend, t, b"r", {b"cf:q": b"v%d" % ts}, timestamp=ts)
    put(backend, t, b"s", {b"cf:q": b"s30"}, timestamp=30)
    assert backend.get_row(t, b"r", timestamp=30) == {b"cf:q": b"v20"}
    assert backend.get_row(t, b"r", timestamp=31) == {b"cf:q": b"v30"}
    assert backend.get_row(t, b"r", timestamp=10) == {}
    assert backend.get_row(t, b"r", timestamp=11, include_timestamp=True) == {b"cf:q": (b"v10", 10)}
    assert backend.get_cells(t, b"r", b"cf:q", timestamp=30) == [(b"v20", 20), (b"v10", 10)]
    assert backend.get_rows(t, [b"r", b"s"], timestamp=30) == {b"r": {b"cf:q": b"v20"}}
    assert all_rows(backend, t, timestamp=30) == [(b"r", {b"cf:q": b"v20"})]


# -- TTL --------------------------------------------------------------------------------------

def test_ttl_hides_old_cells_everywhere(backend, t):
    old = now_ms() - 60_000
    put(backend, t, b"old", {b"ttl:q": b"expired", b"cf:q": b"kept"}, timestamp=old)
    put(backend, t, b"only_old", {b"ttl:q": b"expired"}, timestamp=old)
    put(backend, t, b"fresh", {b"ttl:q": b"fresh"})
    assert backend.get_row(t, b"old") == {b"cf:q": b"kept"}
    assert backend.get_row(t, b"only_old") == {}
    assert backend.get_rows(t, [b"only_old", b"fresh"]) == {b"fresh": {b"ttl:q": b"fresh"}}
    assert backend.get_cells(t, b"old", b"ttl:q") == []
    assert all_rows(backend, t) == [(b"fresh", {b"ttl:q": b"fresh"}), (b"old", {b"cf:q": b"kept"})]


def test_ttl_applies_to_every_version(backend, t):
    base = now_ms() - 60_000
    for i in range(3):
        put(backend, t, b"r", {b"ttl:q": b"v%d" % i}, timestamp=base + i)
    assert backend.get_cells(t, b"r", b"ttl:q") == []
    put(backend, t, b"r", {b"ttl:q": b"now"})
    assert [v for v, _ts in backend.get_cells(t, b"r", b"ttl:q")] == [b"now"]


def test_ttl_expires_a_fresh_cell(backend):
    backend.create_table(spec("short", families=(FamilySpec("s", ttl=1),)))
    put(backend, "short", b"r", {b"s:q": b"v"})
    written = backend.get_row("short", b"r", include_timestamp=True)
    assert written and written[b"s:q"][0] == b"v"
    # wait until the cell is older than the 1 s TTL by the cell's own timestamp
    while now_ms() <= written[b"s:q"][1] + 1500:
        time.sleep(0.1)
    assert backend.get_row("short", b"r") == {}
    assert all_rows(backend, "short") == []


def test_future_timestamps_are_visible(backend, t):
    future = now_ms() + HOUR_MS
    put(backend, t, b"r", {b"cf:q": b"future"}, timestamp=future)
    assert backend.get_row(t, b"r", include_timestamp=True) == {b"cf:q": (b"future", future)}


def test_counter_cells_read_back_as_bytes(backend, t):
    put(backend, t, b"r", {b"one:n": counter(7)})
    assert backend.increment(t, b"r", b"one:n", 1) == 8
    assert backend.get_row(t, b"r") == {b"one:n": counter(8)}
