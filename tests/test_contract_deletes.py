"""Contract: deletes of columns, families and rows; delete markers; puts before deletes (§4, §8)."""

import pytest
from contract_helpers import HOUR_MS, NO_DELETE_MARKERS, all_rows, delete, now_ms, put, skip_if, spec

from socorro_store.backends.base import RowMutation


@pytest.fixture
def t(backend):
    backend.create_table(spec())
    return "t"


def three_versions(backend, t, row=b"r"):
    """cf:a at 10/20/30, cf:b at 20, one:c at 20."""
    for ts in (10, 20, 30):
        put(backend, t, row, {b"cf:a": b"a%d" % ts}, timestamp=ts)
    put(backend, t, row, {b"cf:b": b"b20", b"one:c": b"c20"}, timestamp=20)


# -- deletes without a timestamp (server "now") ----------------------------------------------

def test_delete_column_removes_every_version(backend, t):
    three_versions(backend, t)
    delete(backend, t, b"r", [b"cf:a"])
    assert backend.get_cells(t, b"r", b"cf:a") == []
    assert backend.get_row(t, b"r") == {b"cf:b": b"b20", b"one:c": b"c20"}


def test_delete_family(backend, t):
    three_versions(backend, t)
    delete(backend, t, b"r", [b"cf"])
    assert backend.get_row(t, b"r") == {b"one:c": b"c20"}


def test_delete_empty_qualifier_column_only(backend, t):
    put(backend, t, b"r", {b"cf:": b"e", b"cf:a": b"a"})
    delete(backend, t, b"r", [b"cf:"])
    assert backend.get_row(t, b"r") == {b"cf:a": b"a"}


def test_delete_row(backend, t):
    three_versions(backend, t)
    put(backend, t, b"other", {b"cf:a": b"kept"})
    delete(backend, t, b"r", delete_row=True)
    assert backend.get_row(t, b"r") == {}
    assert backend.get_rows(t, [b"r", b"other"]) == {b"other": {b"cf:a": b"kept"}}
    assert all_rows(backend, t) == [(b"other", {b"cf:a": b"kept"})]


def test_delete_of_absent_things_is_a_no_op(backend, t):
    delete(backend, t, b"nothing", [b"cf:a", b"one"])
    delete(backend, t, b"nothing", delete_row=True)
    assert all_rows(backend, t) == []


def test_several_rows_in_one_call(backend, t):
    backend.mutate_rows(t, [RowMutation(b"r%d" % i, {b"cf:a": b"x", b"one:b": b"y"}) for i in range(5)])
    backend.mutate_rows(t, [RowMutation(b"r1", delete_row=True), RowMutation(b"r2", deletes=[b"cf"]),
                            RowMutation(b"r3", deletes=[b"one:b"], puts={b"cf:c": b"z"})])
    assert dict(all_rows(backend, t)) == {
        b"r0": {b"cf:a": b"x", b"one:b": b"y"},
        b"r2": {b"one:b": b"y"},
        b"r3": {b"cf:a": b"x", b"cf:c": b"z"},
        b"r4": {b"cf:a": b"x", b"one:b": b"y"},
    }


def test_future_cells_survive_delete_without_timestamp(backend, t):
    future = now_ms() + HOUR_MS
    put(backend, t, b"r", {b"cf:a": b"future", b"one:c": b"future"}, timestamp=future)
    put(backend, t, b"r", {b"cf:b": b"past", b"one:d": b"past"}, timestamp=100)
    delete(backend, t, b"r", [b"cf:a", b"cf:b"])
    assert backend.get_row(t, b"r") == {b"cf:a": b"future", b"one:c": b"future", b"one:d": b"past"}
    delete(backend, t, b"r", delete_row=True)
    assert backend.get_row(t, b"r", include_timestamp=True) == {
        b"cf:a": (b"future", future), b"one:c": (b"future", future)}


# -- deletes with a timestamp (inclusive) ----------------------------------------------------

def test_delete_column_up_to_timestamp_is_inclusive(backend, t):
    three_versions(backend, t)
    delete(backend, t, b"r", [b"cf:a"], timestamp=20)
    assert backend.get_cells(t, b"r", b"cf:a") == [(b"a30", 30)]
    assert backend.get_row(t, b"r") == {b"cf:a": b"a30", b"cf:b": b"b20", b"one:c": b"c20"}


def test_delete_family_up_to_timestamp(backend, t):
    three_versions(backend, t)
    delete(backend, t, b"r", [b"cf"], timestamp=20)
    assert backend.get_row(t, b"r") == {b"cf:a": b"a30", b"one:c": b"c20"}


def test_delete_row_up_to_timestamp(backend, t):
    three_versions(backend, t)
    delete(backend, t, b"r", delete_row=True, timestamp=19)
    assert backend.get_cells(t, b"r", b"cf:a") == [(b"a30", 30), (b"a20", 20)]
    assert backend.get_row(t, b"r") == {b"cf:a": b"a30", b"cf:b": b"b20", b"one:c": b"c20"}
    delete(backend, t, b"r", delete_row=True, timestamp=30)
    assert backend.get_row(t, b"r") == {}


# -- delete markers mask later puts with ts <= marker -----------------------------------------

def test_column_marker_masks_later_older_puts(backend, backend_kind, t):
    skip_if(backend_kind, "bigtable-emulator", NO_DELETE_MARKERS)
    delete(backend, t, b"r", [b"cf:a"], timestamp=100)
    put(backend, t, b"r", {b"cf:a": b"at50"}, timestamp=50)
    put(backend, t, b"r", {b"cf:a": b"at100"}, timestamp=100)
    put(backend, t, b"r", {b"cf:b": b"other column"}, timestamp=50)
    assert backend.get_row(t, b"r") == {b"cf:b": b"other column"}
    put(backend, t, b"r", {b"cf:a": b"at101"}, timestamp=101)
    assert backend.get_cells(t, b"r", b"cf:a") == [(b"at101", 101)]


def test_family_and_row_markers_mask_later_older_puts(backend, backend_kind, t):
    skip_if(backend_kind, "bigtable-emulator", NO_DELETE_MARKERS)
    delete(backend, t, b"r", [b"cf"], timestamp=100)
    delete(backend, t, b"s", delete_row=True, timestamp=100)
    for row in (b"r", b"s"):
        put(backend, t, row, {b"cf:a": b"masked", b"cf:": b"masked"}, timestamp=90)
    put(backend, t, b"r", {b"one:c": b"other family"}, timestamp=90)
    put(backend, t, b"s", {b"one:c": b"masked by the row marker"}, timestamp=90)
    assert backend.get_rows(t, [b"r", b"s"]) == {b"r": {b"one:c": b"other family"}}


def test_marker_without_timestamp_masks_older_explicit_puts(backend, backend_kind, t):
    skip_if(backend_kind, "bigtable-emulator", NO_DELETE_MARKERS)
    put(backend, t, b"r", {b"cf:a": b"v"})
    delete(backend, t, b"r", delete_row=True)
    put(backend, t, b"r", {b"cf:a": b"back-dated"}, timestamp=now_ms() - HOUR_MS)
    assert backend.get_row(t, b"r") == {}
    future = now_ms() + HOUR_MS
    put(backend, t, b"r", {b"cf:a": b"future"}, timestamp=future)
    assert backend.get_row(t, b"r") == {b"cf:a": b"future"}


# -- puts before deletes within one mutate_rows -----------------------------------------------

def test_puts_apply_before_deletes_in_one_call(backend, t):
    put(backend, t, b"r", {b"cf:a": b"old", b"one:c": b"old"}, timestamp=10)
    backend.mutate_rows(t, [
        RowMutation(b"r", puts={b"cf:a": b"new", b"cf:b": b"new"}, deletes=[b"cf:a"]),
        RowMutation(b"s", puts={b"cf:a": b"new"}, delete_row=True),
        RowMutation(b"u", puts={b"cf:a": b"new", b"one:c": b"new"}, deletes=[b"one"]),
    ])
    assert backend.get_rows(t, [b"r", b"s", b"u"]) == {
        b"r": {b"cf:b": b"new", b"one:c": b"old"},
        b"u": {b"cf:a": b"new"},
    }


def test_puts_before_deletes_with_explicit_timestamp(backend, t):
    backend.mutate_rows(t, [RowMutation(b"r", puts={b"cf:a": b"x", b"one:c": b"y"},
                                        deletes=[b"cf:a"])], timestamp=50)
    assert backend.get_row(t, b"r", include_timestamp=True) == {b"one:c": (b"y", 50)}


def test_compact_keeps_visible_data(backend, t):
    three_versions(backend, t)
    delete(backend, t, b"r", [b"cf:b"])
    backend.compact(t)
    assert backend.get_cells(t, b"r", b"cf:a") == [(b"a30", 30), (b"a20", 20), (b"a10", 10)]
    assert backend.get_row(t, b"r") == {b"cf:a": b"a30", b"one:c": b"c20"}
