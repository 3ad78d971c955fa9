"""Contract: increments, check-and-put, invalid arguments and call counting (§5, §7, §9)."""

import threading

import pytest
from contract_helpers import HOUR_MS, all_rows, counter, now_ms, put, skip_if, spec

from socorro_store.backends.base import MAX_CELL_BYTES, MAX_ROW_KEY, Increment, RowMutation
from socorro_store.errors import InvalidArgument, NotACounter


@pytest.fixture
def t(backend):
    backend.create_table(spec())
    return "t"


# -- increments -------------------------------------------------------------------------------

def test_increment_missing_cell_starts_at_zero(backend, t):
    assert backend.increment(t, b"r", b"one:n") == 1
    assert backend.increment(t, b"r", b"one:n", 41) == 42
    assert backend.increment(t, b"r", b"cf:m", 5) == 5
    assert backend.get_row(t, b"r") == {b"one:n": counter(42), b"cf:m": counter(5)}
    assert len(backend.get_row(t, b"r")[b"one:n"]) == 8


def test_increment_negative_and_zero(backend, t):
    assert backend.increment(t, b"r", b"one:n", -5) == -5
    assert backend.get_row(t, b"r") == {b"one:n": b"\xff\xff\xff\xff\xff\xff\xff\xfb"}
    assert backend.increment(t, b"r", b"one:n", 7) == 2
    assert backend.increment(t, b"r", b"one:n", 0) == 2
    assert backend.increment(t, b"r", b"one:n", -2) == 0
    assert backend.get_row(t, b"r") == {b"one:n": counter(0)}


def test_increment_continues_a_put_counter_and_wraps(backend, t):
    put(backend, t, b"r", {b"one:n": counter(2**63 - 1)})
    assert backend.increment(t, b"r", b"one:n") == -(2**63)
    put(backend, t, b"r", {b"one:m": counter(1000)})
    assert backend.increment(t, b"r", b"one:m", 24) == 1024


def test_increment_of_bare_family_uses_empty_qualifier(backend, t):
    assert backend.increment(t, b"r", b"one", 3) == 3
    assert backend.get_row(t, b"r") == {b"one:": counter(3)}


def test_increment_keeps_one_visible_cell_in_a_one_version_family(backend, t):
    for _ in range(5):
        backend.increment(t, b"r", b"one:n")
    assert [v for v, _ts in backend.get_cells(t, b"r", b"one:n")] == [counter(5)]


def test_increment_of_expired_counter_starts_at_zero(backend, backend_kind, t):
    put(backend, t, b"r", {b"ttl:n": counter(100)}, timestamp=now_ms() - 60_000)
    assert backend.increment(t, b"r", b"ttl:n", 1) == 1


# -- the equal-timestamp rule (issue 15) --------------------------------------------------------
# An increment is a read plus a put at max(old ts, now).  A cell stamped an hour ahead stands for
# "the same millisecond" deterministically: every write below lands on that one timestamp.

REAL_HBASE = ("hbase-docker", "hbase-real", "hbase-real-thrift2")
_HBASE2_STAMPS = ("HBase 2 stamps an increment max(old ts + 1, now) (reference §5), so it adds a "
                  "version after the stored one instead of replacing it")


def test_increment_in_the_stored_millisecond_replaces_the_version(backend, backend_kind, t):
    ts = now_ms() + HOUR_MS
    put(backend, t, b"r", {b"cf:n": counter(5)}, timestamp=ts)
    assert backend.increment(t, b"r", b"cf:n") == 6
    if backend_kind in REAL_HBASE:  # _HBASE2_STAMPS: a second version, one ms later
        assert backend.get_cells(t, b"r", b"cf:n") == [(counter(6), ts + 1), (counter(5), ts)]
    else:
        assert backend.get_cells(t, b"r", b"cf:n") == [(counter(6), ts)]  # 3-version family: one cell


def test_counter_set_then_increment_in_one_millisecond_counts_from_the_set(backend, backend_kind, t):
    """happybase's counter_set is a put: in the increment's millisecond it replaces the counter,
    so the next increment returns 1, not old + 1."""
    ts = now_ms() + HOUR_MS
    put(backend, t, b"r", {b"one:n": counter(0), b"cf:n": counter(0)}, timestamp=ts)
    if backend_kind in REAL_HBASE:
        # _HBASE2_STAMPS: each increment lands one ms after the newest version, so a set at the
        # stored timestamp is hidden behind them and the increments keep counting
        for step in range(1, 4):
            assert backend.increment(t, b"r", b"one:n", 7) == 7 * step
            put(backend, t, b"r", {b"one:n": counter(0)}, timestamp=ts)
        assert backend.get_cells(t, b"r", b"one:n") == [(counter(21), ts + 3)]
        return
    for _ in range(3):
        assert backend.increment(t, b"r", b"one:n", 7) == 7
        assert backend.increment(t, b"r", b"cf:n", 7) == 7
        put(backend, t, b"r", {b"one:n": counter(0), b"cf:n": counter(0)}, timestamp=ts)  # counter_set
    assert backend.increment(t, b"r", b"one:n") == 1
    assert backend.increment(t, b"r", b"cf:n") == 1
    assert backend.get_cells(t, b"r", b"cf:n") == [(counter(1), ts)]


def test_server_time_counter_set_then_increment_returns_one(backend, backend_kind, t):
    """The same at server time: a set right after increments (often in their millisecond) is
    never hidden behind them."""
    for kind in REAL_HBASE:
        skip_if(backend_kind, kind, _HBASE2_STAMPS + "; a set in the ms after two increments is hidden")
    for _ in range(50):
        backend.increment(t, b"r", b"one:n")
        backend.increment(t, b"r", b"one:n")
        put(backend, t, b"r", {b"one:n": counter(0)})
        assert backend.increment(t, b"r", b"one:n") == 1


@pytest.mark.parametrize("value", [b"", b"abc", b"1234567", b"123456789", b"\x00" * 16])
def test_not_a_counter_changes_nothing(backend, t, value):
    put(backend, t, b"r", {b"one:n": value}, timestamp=10)
    with pytest.raises(NotACounter):
        backend.increment(t, b"r", b"one:n")
    assert backend.get_row(t, b"r", include_timestamp=True) == {b"one:n": (value, 10)}


def test_increment_many_over_tables_and_rows(backend, t):
    backend.create_table(spec("u"))
    incs = [Increment("t", b"a", b"one:n", 1), Increment("t", b"a", b"one:n", 2),
            Increment("t", b"a", b"cf:m", -1), Increment("t", b"b", b"one:n", 10),
            Increment("u", b"a", b"one:n", 100), Increment("u", b"c", b"cf:", 5)]
    before = sum(backend.calls.values())
    assert backend.increment_many(incs) is None
    spent = sum(backend.calls.values()) - before
    assert 1 <= spent <= len(incs)
    backend.increment_many(incs[:1])
    backend.increment_many([])
    assert dict(all_rows(backend, "t")) == {
        b"a": {b"one:n": counter(4), b"cf:m": counter(-1)}, b"b": {b"one:n": counter(10)}}
    assert dict(all_rows(backend, "u")) == {
        b"a": {b"one:n": counter(100)}, b"c": {b"cf:": counter(5)}}


def test_concurrent_increments_are_exact(backend, t):
    def work():
        for _ in range(25):
            backend.increment(t, b"r", b"one:n")
        backend.increment_many([Increment(t, b"r", b"one:m", 2)] * 5)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert backend.get_row(t, b"r") == {b"one:n": counter(100), b"one:m": counter(40)}


# -- check-and-put ----------------------------------------------------------------------------

def test_check_and_put_expecting_absence(backend, t):
    assert backend.check_and_put(t, b"r", b"one:lock", None, {b"one:lock": b"me", b"cf:x": b"1"})
    assert backend.get_row(t, b"r") == {b"one:lock": b"me", b"cf:x": b"1"}
    assert not backend.check_and_put(t, b"r", b"one:lock", None, {b"one:lock": b"you", b"cf:x": b"2"})
    assert not backend.check_and_put(t, b"r", b"one:lock", b"", {b"one:lock": b"you"})
    assert backend.get_row(t, b"r") == {b"one:lock": b"me", b"cf:x": b"1"}


def test_check_and_put_empty_matches_empty_value(backend, t):
    put(backend, t, b"r", {b"one:lock": b""})
    assert backend.check_and_put(t, b"r", b"one:lock", b"", {b"cf:x": b"a"})
    assert backend.check_and_put(t, b"r", b"one:lock", None, {b"cf:y": b"b"})
    assert not backend.check_and_put(t, b"r", b"one:lock", b"x", {b"cf:z": b"c"})
    assert backend.get_row(t, b"r") == {b"one:lock": b"", b"cf:x": b"a", b"cf:y": b"b"}


def test_check_and_put_empty_matches_missing_cell(backend, t):
    assert backend.check_and_put(t, b"r", b"one:lock", b"", {b"one:lock": b"mine"})
    assert backend.get_row(t, b"r") == {b"one:lock": b"mine"}


def test_check_and_put_writes_at_or_after_the_checked_cell(backend, backend_kind, t):
    skip_if(backend_kind, "bigtable-emulator", "Bigtable's check-and-mutate writes at server time; it "
            "cannot stamp the put with the checked cell's (future) timestamp as HBase does (§7)")
    future = now_ms() + 3600 * 1000
    put(backend, t, b"r", {b"one:lock": b""}, timestamp=future)
    assert backend.check_and_put(t, b"r", b"one:lock", b"", {b"one:lock": b"mine"})
    assert backend.get_row(t, b"r") == {b"one:lock": b"mine"}


def test_check_and_put_expecting_a_value(backend, t):
    put(backend, t, b"r", {b"one:state": b"queued"})
    assert not backend.check_and_put(t, b"r", b"one:state", b"done", {b"one:state": b"x"})
    assert not backend.check_and_put(t, b"r", b"one:state", b"queue", {b"one:state": b"x"})
    assert not backend.check_and_put(t, b"missing", b"one:state", b"queued", {b"one:state": b"x"})
    assert backend.check_and_put(t, b"r", b"one:state", b"queued", {b"one:state": b"claimed"})
    assert backend.get_row(t, b"r") == {b"one:state": b"claimed"}
    assert backend.get_row(t, b"missing") == {}


def test_check_and_put_compares_only_the_latest_version(backend, t):
    put(backend, t, b"r", {b"cf:state": b"old"}, timestamp=10)
    put(backend, t, b"r", {b"cf:state": b"new"}, timestamp=20)
    assert not backend.check_and_put(t, b"r", b"cf:state", b"old", {b"cf:x": b"1"})
    assert backend.check_and_put(t, b"r", b"cf:state", b"new", {b"cf:x": b"2"})
    assert backend.get_row(t, b"r", columns=[b"cf:x"]) == {b"cf:x": b"2"}


def test_check_and_put_after_delete_sees_absence(backend, t):
    put(backend, t, b"r", {b"one:lock": b"held"})
    backend.mutate_rows(t, [RowMutation(b"r", deletes=[b"one:lock"])])
    assert backend.check_and_put(t, b"r", b"one:lock", None, {b"cf:x": b"free"})
    assert backend.get_row(t, b"r") == {b"cf:x": b"free"}


def test_concurrent_check_and_put_claims_exactly_once(backend, t):
    rows = [b"job%02d" % i for i in range(20)]
    wins = {}
    lock = threading.Lock()
    barrier = threading.Barrier(6)

    def claimer(me):
        barrier.wait()
        for row in rows:
            if backend.check_and_put(t, row, b"one:owner", None, {b"one:owner": me}):
                with lock:
                    wins.setdefault(row, []).append(me)

    threads = [threading.Thread(target=claimer, args=(b"w%d" % i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(wins) == rows
    assert all(len(owners) == 1 for owners in wins.values())
    assert backend.get_rows(t, rows) == {row: {b"one:owner": wins[row][0]} for row in rows}


# -- invalid arguments: InvalidArgument, and nothing written --------------------------------

GOOD = RowMutation(b"good", {b"cf:q": b"v"})

BAD_MUTATIONS = {
    "empty row key": RowMutation(b"", {b"cf:q": b"v"}),
    "32768-byte row key": RowMutation(b"r" * (MAX_ROW_KEY + 1), {b"cf:q": b"v"}),
    "str row key": RowMutation("r", {b"cf:q": b"v"}),
    "bare family put": RowMutation(b"r", {b"cf": b"v"}),
    "empty family": RowMutation(b"r", {b":q": b"v"}),
    "str value": RowMutation(b"r", {b"cf:q": "v"}),
    "str column": RowMutation(b"r", {"cf:q": b"v"}),
    "cell over 10 MiB": RowMutation(b"r", {b"cf:q": b"x" * MAX_CELL_BYTES}),
    "str delete column": RowMutation(b"r", deletes=["cf:q"]),
}


@pytest.mark.parametrize("what", sorted(BAD_MUTATIONS))
def test_bad_mutation_writes_nothing(backend, t, what):
    with pytest.raises(InvalidArgument):
        backend.mutate_rows(t, [GOOD, BAD_MUTATIONS[what]])
    assert all_rows(backend, t) == []


@pytest.mark.parametrize("timestamp", [-1, "10", 1.5, 2**63])
def test_bad_timestamp_writes_nothing(backend, t, timestamp):
    with pytest.raises(InvalidArgument):
        backend.mutate_rows(t, [GOOD], timestamp=timestamp)
    assert all_rows(backend, t) == []


def test_longest_row_key_is_accepted(backend, backend_kind, t):
    skip_if(backend_kind, "bigtable-emulator", "Bigtable's row keys are limited to 4 KiB, not HBase's "
            "32767 bytes (bigtable-emulator.md, difference 10)")
    longest = b"k" * MAX_ROW_KEY
    if backend_kind in REAL_HBASE:
        # HBase's client finds a row's region in hbase:meta under "TABLE,ROW,99999999999999", a key
        # that must itself fit 32767 bytes: on a cold region cache a row within 16 + len(TABLE)
        # bytes of the limit is refused.  Once the location is cached, the longest is accepted.
        # Each Thrift server has its own cache: on a cluster, every one of them is warmed (the
        # calls go to the servers in turn).
        near_limit = b"k" * (MAX_ROW_KEY - len(backend._name(t)) - 15)
        with pytest.raises(InvalidArgument):
            put(backend, t, near_limit, {b"cf:q": b"v"})
        for _server in range(len(backend.servers)):
            put(backend, t, near_limit[:-1], {b"cf:q": b"v"})
        backend.mutate_rows(t, [RowMutation(near_limit[:-1], delete_row=True)])
    put(backend, t, longest, {b"cf:q": b"v"})
    assert backend.get_row(t, longest) == {b"cf:q": b"v"}
    assert [row for row, _ in backend.scan(t)] == [longest]


def test_big_cell_is_accepted(backend, t):
    big = bytes(range(256)) * (4 * 1024 * 4)  # 4 MiB, well under the limit
    put(backend, t, b"big", {b"z:q": big})
    assert backend.get_row(t, b"big") == {b"z:q": big}


@pytest.mark.parametrize("call", [
    lambda b, t: b.get_rows(t, [b"ok", b""]),
    lambda b, t: b.get_row(t, b"r" * (MAX_ROW_KEY + 1)),
    lambda b, t: b.get_row(t, b"r", timestamp=-5),
    lambda b, t: b.get_cells(t, b"", b"cf:q"),
    lambda b, t: b.get_cells(t, b"r", b"cf:q", versions=0),
    lambda b, t: b.get_rows(t, [b"r"], columns=["cf"]),
])
def test_bad_read_arguments(backend, t, call):
    with pytest.raises(InvalidArgument):
        call(backend, t)


def test_bad_increments_write_nothing(backend, t):
    for row, column, amount in [(b"", b"one:n", 1), (b"r", b"one:n", 2**63), (b"r", b"one:n", 1.0),
                                (b"r", b":n", 1), (b"r" * (MAX_ROW_KEY + 1), b"one:n", 1)]:
        with pytest.raises(InvalidArgument):
            backend.increment(t, row, column, amount)
        with pytest.raises(InvalidArgument):
            backend.increment_many([Increment(t, b"good", b"one:n", 1), Increment(t, row, column, amount)])
    assert all_rows(backend, t) == []


@pytest.mark.parametrize("args", [
    (b"", b"one:lock", None, {b"one:lock": b"v"}),
    (b"r", b"one", None, {b"one:lock": b"v"}),               # checked column needs a qualifier
    (b"r", b"one:lock", "v", {b"one:lock": b"v"}),
    (b"r", b"one:lock", None, {b"one": b"v"}),               # bare family put
    (b"r", b"one:lock", None, {b"one:lock": "v"}),
    (b"r", b"one:lock", None, {b"z:big": b"x" * MAX_CELL_BYTES}),
])
def test_bad_check_and_put_writes_nothing(backend, t, args):
    with pytest.raises(InvalidArgument):
        backend.check_and_put(t, *args)
    assert all_rows(backend, t) == []


# -- call counting ----------------------------------------------------------------------------

def delta(backend, action):
    before = backend.calls.copy()
    action()
    after = backend.calls.copy()
    after.subtract(before)
    return {kind: n for kind, n in after.items() if n}


def test_calls_are_counted_by_kind(backend, t):
    mutation = delta(backend, lambda: backend.mutate_rows(
        t, [RowMutation(b"r%02d" % i, {b"cf:q": b"v", b"one:q": b"w"}) for i in range(50)]))
    assert sum(mutation.values()) == 1, "50 rows in one mutate_rows is one round trip"
    read = delta(backend, lambda: backend.get_rows(t, [b"r%02d" % i for i in range(50)]))
    assert sum(read.values()) == 1, "50 rows in one get_rows is one round trip"
    assert set(read).isdisjoint(mutation), "reads and writes are counted under different kinds"
    inc = delta(backend, lambda: backend.increment(t, b"r00", b"one:n"))
    assert sum(inc.values()) == 1
    cap = delta(backend, lambda: backend.check_and_put(t, b"r00", b"one:x", None, {b"one:x": b"1"}))
    assert sum(cap.values()) == 1
    assert set(inc).isdisjoint(cap) and set(inc).isdisjoint(mutation)
    assert all(isinstance(kind, str) for kind in backend.calls)
    assert all(n > 0 for n in backend.calls.values())


def test_check_and_put_many_answers_each_item(backend, t):
    put(backend, t, b"b", {b"one:lock": b"held"})
    won = backend.check_and_put_many(t, [
        (b"a", b"one:lock", None, {b"one:lock": b"me"}),       # absent: applied
        (b"b", b"one:lock", None, {b"one:lock": b"me"}),       # present: refused
        (b"b", b"one:lock", b"held", {b"one:lock": b"mine"}),  # expected value: applied
        (b"a", b"one:lock", None, {b"one:lock": b"again"}),    # sees the first item's put
    ])
    assert won == [True, False, True, False]
    assert backend.get_rows(t, [b"a", b"b"]) == {b"a": {b"one:lock": b"me"}, b"b": {b"one:lock": b"mine"}}
    assert backend.check_and_put_many(t, []) == []


def test_check_and_put_many_bad_item_writes_nothing(backend, t):
    items = [(b"a", b"one:lock", None, {b"one:lock": b"me"}), (b"", b"one:lock", None, {b"one:lock": b"x"})]
    with pytest.raises(InvalidArgument):
        backend.check_and_put_many(t, items)
    with pytest.raises(InvalidArgument):
        backend.check_and_put_many(t, [(b"a", b"one:lock", None)])
    assert all_rows(backend, t) == []


def test_check_and_put_many_racing_threads_claim_each_row_once(backend, t):
    rows = [b"r%02d" % i for i in range(20)]
    wins = []
    lock = threading.Lock()

    def claimer(name):
        won = backend.check_and_put_many(t, [(r, b"one:claim", None, {b"one:claim": name}) for r in rows])
        with lock:
            wins.extend(r for r, ok in zip(rows, won) if ok)

    threads = [threading.Thread(target=claimer, args=(b"p%d" % i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(wins) == rows
