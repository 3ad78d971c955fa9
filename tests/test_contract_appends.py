"""Contract: appends, the atomic "was I first?" for many cells of a row in one call (§7)."""

import threading

import pytest
from contract_helpers import all_rows, put, spec

from socorro_store.errors import FamilyNotFound, InvalidArgument


@pytest.fixture
def t(backend):
    backend.create_table(spec())
    return "t"


def test_append_starts_from_empty_and_returns_each_result(backend, t):
    put(backend, t, b"r", {b"cf:a": b"old-"})
    assert backend.append(t, b"r", {b"cf:a": b"x", b"one:b": b"y", b"cf:": b"z"}) == \
        {b"cf:a": b"old-x", b"one:b": b"y", b"cf:": b"z"}
    assert backend.append(t, b"r", {b"one:b": b"yy"}) == {b"one:b": b"yyy"}
    assert backend.get_row(t, b"r") == {b"cf:a": b"old-x", b"one:b": b"yyy", b"cf:": b"z"}


def test_append_many_answers_each_row(backend, t):
    put(backend, t, b"b", {b"cf:m": b"1"})
    assert backend.append_many(t, [(b"a", {b"cf:m": b"1"}), (b"b", {b"cf:m": b"1", b"cf:n": b"1"})]) == \
        [{b"cf:m": b"1"}, {b"cf:m": b"11", b"cf:n": b"1"}]
    assert backend.append_many(t, []) == []


def test_racing_appends_each_see_a_different_result(backend, t):
    """Exactly one appender of each cell sees only its own byte: the first-seen primitive."""
    columns = [b"cf:s%02d" % i for i in range(10)]
    firsts, lock, barrier = [], threading.Lock(), threading.Barrier(5)

    def appender(me):
        barrier.wait()
        for answer in backend.append_many(t, [(b"row", {c: b"x" for c in columns}), (b"row2", {columns[0]: b"x"})]):
            with lock:
                firsts.extend((me, column) for column, value in answer.items() if value == b"x")

    threads = [threading.Thread(target=appender, args=(i,)) for i in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(column for _me, column in firsts) == sorted(columns + [columns[0]])
    assert backend.get_row(t, b"row") == {c: b"x" * 5 for c in columns}


@pytest.mark.parametrize("args", [
    (b"", {b"cf:a": b"x"}),              # empty row key
    ("r", {b"cf:a": b"x"}),              # str row key
    (b"r", {}),                          # nothing to append
    (b"r", {b"cf": b"x"}),               # bare family: no qualifier
    (b"r", {b"cf:a": "x"}),              # str value
    (b"r", [(b"cf:a", b"x")]),           # not a dict
])
def test_bad_append_writes_nothing(backend, t, args):
    with pytest.raises(InvalidArgument):
        backend.append(t, *args)
    with pytest.raises(InvalidArgument):
        backend.append_many(t, [(b"ok", {b"cf:a": b"x"}), args])
    assert all_rows(backend, t) == []


def test_append_to_a_missing_family_writes_nothing(backend, t):
    with pytest.raises(FamilyNotFound):
        backend.append(t, b"r", {b"cf:a": b"x", b"nope:a": b"x"})
    assert all_rows(backend, t) == []
