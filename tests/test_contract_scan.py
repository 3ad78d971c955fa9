"""Contract: unsigned row order and scans (start/stop/prefix/reverse/limit/columns/paging, §6)."""

import pytest
from contract_helpers import all_rows, delete, now_ms, put, spec

from socorro_store.backends.base import RowMutation
from socorro_store.errors import InvalidArgument

# Deliberately awkward keys: signed-byte order would put \x80..\xff before \x00..\x7f.
KEYS = [b"\x00", b"\x01", b"\x7f", b"\x7f\xff", b"\x80", b"\xfe", b"\xff", b"\xff\x00", b"\xff\xff",
        b"\xff\xff\xff", b"a", b"ab", b"ab\x00", b"ab\xff", b"ac", b"b"]


@pytest.fixture
def t(backend):
    backend.create_table(spec())
    # each row: cf:k = its own key; rows whose key starts with "a" also get one:x
    backend.mutate_rows("t", [RowMutation(k, {b"cf:k": k, **({b"one:x": b"x"} if k.startswith(b"a") else {})})
                              for k in reversed(KEYS)])
    return "t"


def keys(results):
    return [row for row, _cells in results]


def scan_keys(backend, **kwargs):
    return keys(backend.scan("t", **kwargs))


def test_full_scan_in_unsigned_byte_order(backend, t):
    results = all_rows(backend, t)
    assert keys(results) == sorted(KEYS)
    assert all(cells[b"cf:k"] == row for row, cells in results)
    assert keys(results).index(b"\x80") == keys(results).index(b"\x7f\xff") + 1


def test_high_bit_rows_by_get(backend, t):
    assert list(backend.get_rows(t, [b"\xff", b"\x80", b"\xff\xff\xff"])) == [b"\xff", b"\x80", b"\xff\xff\xff"]
    assert backend.get_row(t, b"\xff\x00") == {b"cf:k": b"\xff\x00"}


@pytest.mark.parametrize("start, stop", [
    (b"\x7f", b"\xff"), (b"\x80", None), (None, b"\x80"), (b"ab", b"ac"), (b"\x00", b"\x01"),
    (b"0", b"1"), (b"\xff", b"\xff\xff\xff"),
])
def test_start_inclusive_stop_exclusive(backend, t, start, stop):
    expected = [k for k in sorted(KEYS) if (start is None or k >= start) and (stop is None or k < stop)]
    assert scan_keys(backend, start=start, stop=stop) == expected


@pytest.mark.parametrize("prefix", [b"a", b"ab", b"\xff", b"\xff\xff", b"\x7f", b"zz", b"\xff\xff\xff\xff"])
def test_prefix_scan(backend, t, prefix):
    assert scan_keys(backend, prefix=prefix) == [k for k in sorted(KEYS) if k.startswith(prefix)]


@pytest.mark.parametrize("prefix", [b"ab", b"\xff", b"\x7f", b"a"])
def test_reverse_prefix_scan_is_exactly_the_prefix(backend, backend_kind, t, prefix):
    # b"ac" (the key right after prefix b"ab") must not appear, unlike happybase's own row_prefix
    expected = [k for k in sorted(KEYS, reverse=True) if k.startswith(prefix)]
    assert scan_keys(backend, prefix=prefix, reverse=True) == expected


def test_reverse_scan(backend, backend_kind, t):
    assert scan_keys(backend, reverse=True) == sorted(KEYS, reverse=True)
    # reverse: start is the highest row (inclusive), stop the lowest (exclusive)
    assert scan_keys(backend, reverse=True, start=b"\xff", stop=b"\x7f") == [
        b"\xff", b"\xfe", b"\x80", b"\x7f\xff"]
    assert scan_keys(backend, reverse=True, start=b"ab") == [b"ab", b"a", b"\x01", b"\x00"]
    assert scan_keys(backend, reverse=True, stop=b"\xff\x00") == [b"\xff\xff\xff", b"\xff\xff"]
    assert scan_keys(backend, reverse=True, limit=3) == sorted(KEYS, reverse=True)[:3]


def test_limit(backend, t):
    assert scan_keys(backend, limit=1) == [b"\x00"]
    assert scan_keys(backend, limit=5, start=b"\x80") == [b"\x80", b"\xfe", b"\xff", b"\xff\x00", b"\xff\xff"]
    assert scan_keys(backend, limit=100) == sorted(KEYS)
    assert scan_keys(backend, prefix=b"a", limit=2) == [b"a", b"ab"]


def test_columns_select_cells_and_drop_rows_without_them(backend, t):
    results = all_rows(backend, t, columns=[b"one"])
    assert keys(results) == [b"a", b"ab", b"ab\x00", b"ab\xff", b"ac"]
    assert all(cells == {b"one:x": b"x"} for _row, cells in results)
    assert all_rows(backend, t, columns=[b"cf:k"], prefix=b"\xff\xff") == [
        (b"\xff\xff", {b"cf:k": b"\xff\xff"}), (b"\xff\xff\xff", {b"cf:k": b"\xff\xff\xff"})]


def test_scan_timestamp_and_include_timestamp(backend, t):
    put(backend, t, b"ts1", {b"cf:a": b"v10"}, timestamp=10)
    put(backend, t, b"ts1", {b"cf:a": b"v20"}, timestamp=20)
    put(backend, t, b"ts2", {b"cf:a": b"v30"}, timestamp=30)
    assert all_rows(backend, t, prefix=b"ts", timestamp=21, include_timestamp=True) == [
        (b"ts1", {b"cf:a": (b"v20", 20)})]
    assert all_rows(backend, t, prefix=b"ts", timestamp=20) == [(b"ts1", {b"cf:a": b"v10"})]


def test_deleted_rows_are_not_scanned(backend, t):
    delete(backend, t, b"ab", delete_row=True)
    delete(backend, t, b"\xff", [b"cf"])
    expected = [k for k in sorted(KEYS) if k not in (b"ab", b"\xff")]
    assert scan_keys(backend) == expected


# -- paging: page_size smaller than the result -------------------------------------------------

@pytest.fixture
def many(backend):
    backend.create_table(spec("m"))
    rows = [bytes([0xff, i]) for i in range(0, 256, 8)] + [b"\x00%03d" % i for i in range(30)]
    backend.mutate_rows("m", [RowMutation(r, {b"cf:q": r}) for r in rows])
    return sorted(rows)


@pytest.mark.parametrize("page_size", [1, 3, 7, 1000])
def test_paging_returns_every_row_once(backend, many, page_size):
    assert keys(backend.scan("m", page_size=page_size)) == many
    high = [r for r in many if r.startswith(b"\xff")]
    assert keys(backend.scan("m", prefix=b"\xff", page_size=page_size)) == high
    assert keys(backend.scan("m", prefix=b"\xff", page_size=page_size, limit=10)) == high[:10]


@pytest.mark.parametrize("page_size", [1, 4, 1000])
def test_reverse_paging(backend, backend_kind, many, page_size):
    assert keys(backend.scan("m", reverse=True, page_size=page_size)) == many[::-1]
    high = [r for r in many if r.startswith(b"\xff")]
    assert keys(backend.scan("m", prefix=b"\xff", reverse=True, page_size=page_size)) == high[::-1]


def test_paging_skips_pages_of_invisible_rows(backend):
    backend.create_table(spec("m"))
    old = now_ms() - 60_000
    # ten rows whose only cells have expired (TTL 2 s), between visible ones
    backend.mutate_rows("m", [RowMutation(b"e%02d" % i, {b"ttl:q": b"gone"}) for i in range(10)], timestamp=old)
    backend.mutate_rows("m", [RowMutation(r, {b"cf:q": r}) for r in (b"a", b"f1", b"f2")])
    assert keys(backend.scan("m", page_size=3)) == [b"a", b"f1", b"f2"]
    assert keys(backend.scan("m", page_size=2, start=b"b")) == [b"f1", b"f2"]


def test_paged_scan_counts_pages_not_rows(backend, many):
    before = sum(backend.calls.values())
    assert len(keys(backend.scan("m", page_size=8))) == len(many)  # 62 rows, 8 pages
    spent = sum(backend.calls.values()) - before
    assert 2 <= spent <= len(many) // 8 + 4


def test_write_behind_an_open_scan_does_not_disturb_it(backend, many):
    it = backend.scan("m", page_size=5)
    first = next(it)
    assert first[0] == many[0]
    put(backend, "m", b"\x00\x00late", {b"cf:q": b"late"})  # before the scanner's position
    rest = keys(it)
    assert rest == many[1:]


# -- bad arguments ----------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    {"prefix": b"a", "start": b"a"}, {"prefix": b"a", "stop": b"b"}, {"limit": 0}, {"limit": -1},
    {"page_size": 0}, {"start": "a"}, {"prefix": "a"}, {"columns": [b"cf:"], "timestamp": -1},
])
def test_bad_scan_arguments(backend, t, kwargs):
    with pytest.raises(InvalidArgument):
        list(backend.scan(t, **kwargs))
