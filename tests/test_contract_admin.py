"""Contract: table admin from specs, and the typed errors of missing tables and families.

Every error test also checks that nothing was written (no table created, no cell stored).
"""

import pytest
from contract_helpers import all_rows, counter, put, spec

from socorro_store.backends.base import Increment, RowMutation
from socorro_store.errors import FamilyNotFound, TableExists, TableNotFound
from socorro_store.schema.specs import FOREVER, FamilySpec


def comparable(backend, family_spec):
    """A family's attributes without those the backend has no notion of."""
    return {k: v for k, v in family_spec.attributes().items()
            if k not in backend.not_applicable_attributes}


# -- create / list / describe / drop ------------------------------------------------------------

def test_create_list_describe(backend):
    families = (FamilySpec("a", versions=5, ttl=86400), FamilySpec("b", compression="GZ"),
                FamilySpec("c_2", in_memory=True, blocksize=8192))
    backend.create_table(spec("zeta", families))
    backend.create_table(spec("alpha", (FamilySpec("x"),)))
    assert backend.list_tables() == ["alpha", "zeta"]
    assert backend.table_exists("zeta") and not backend.table_exists("nope")
    live = backend.describe_table("zeta")
    assert set(live) == {"a", "b", "c_2"}
    for fam in families:
        assert live[fam.name].name == fam.name
        assert comparable(backend, live[fam.name]) == comparable(backend, fam)
    assert live["a"].versions == 5
    assert live["a"].ttl == 86400
    assert backend.describe_table("alpha")["x"].ttl == FOREVER


def test_new_table_is_empty_and_usable(backend):
    backend.create_table(spec())
    assert all_rows(backend, "t") == []
    assert backend.get_rows("t", [b"r"]) == {}
    put(backend, "t", b"r", {b"cf:q": b"v"})
    assert backend.get_row("t", b"r") == {b"cf:q": b"v"}


def test_create_existing_raises_and_keeps_table(backend):
    backend.create_table(spec())
    put(backend, "t", b"r", {b"cf:q": b"v"})
    with pytest.raises(TableExists):
        backend.create_table(spec(families=(FamilySpec("other"),)))
    assert set(backend.describe_table("t")) == {"cf", "one", "ttl", "z"}
    assert backend.get_row("t", b"r") == {b"cf:q": b"v"}
    assert backend.list_tables() == ["t"]


def test_drop_removes_table_and_data(backend):
    backend.create_table(spec())
    backend.create_table(spec("u"))
    put(backend, "t", b"r", {b"cf:q": b"v"})
    backend.drop_table("t")
    assert backend.list_tables() == ["u"]
    with pytest.raises(TableNotFound):
        backend.get_row("t", b"r")
    backend.create_table(spec())
    assert backend.get_row("t", b"r") == {}


def test_drop_and_describe_missing_table(backend):
    backend.create_table(spec())
    with pytest.raises(TableNotFound):
        backend.drop_table("missing")
    with pytest.raises(TableNotFound):
        backend.describe_table("missing")
    assert backend.list_tables() == ["t"]


# -- missing table: every data call raises TableNotFound and creates nothing -------------------

MISSING_TABLE_CALLS = {
    "mutate_rows": lambda b: b.mutate_rows("missing", [RowMutation(b"r", {b"cf:q": b"v"})]),
    "get_rows": lambda b: b.get_rows("missing", [b"r"]),
    "get_row": lambda b: b.get_row("missing", b"r"),
    "get_cells": lambda b: b.get_cells("missing", b"r", b"cf:q"),
    "scan": lambda b: list(b.scan("missing")),
    "increment": lambda b: b.increment("missing", b"r", b"cf:q"),
    "increment_many": lambda b: b.increment_many([Increment("missing", b"r", b"cf:q")]),
    "check_and_put": lambda b: b.check_and_put("missing", b"r", b"cf:q", None, {b"cf:q": b"v"}),
}


@pytest.mark.parametrize("call", sorted(MISSING_TABLE_CALLS))
def test_missing_table(backend, call):
    backend.create_table(spec())
    with pytest.raises(TableNotFound):
        MISSING_TABLE_CALLS[call](backend)
    assert backend.list_tables() == ["t"]


# -- unknown family: FamilyNotFound, and the valid parts of the call are not written -----------

def test_put_to_unknown_family_writes_nothing(backend):
    backend.create_table(spec())
    with pytest.raises(FamilyNotFound):
        backend.mutate_rows("t", [RowMutation(b"a", {b"cf:q": b"1"}),
                                  RowMutation(b"b", {b"cf:q": b"2", b"nope:q": b"3"})])
    assert all_rows(backend, "t") == []


def test_delete_of_unknown_family_writes_nothing(backend):
    backend.create_table(spec())
    put(backend, "t", b"a", {b"cf:q": b"old"}, timestamp=10)
    with pytest.raises(FamilyNotFound):
        backend.mutate_rows("t", [RowMutation(b"a", {b"cf:q": b"new"}, deletes=[b"nope"])],
                            timestamp=20)
    assert backend.get_row("t", b"a", include_timestamp=True) == {b"cf:q": (b"old", 10)}


@pytest.mark.parametrize("columns", [[b"nope"], [b"nope:q"], [b"cf:q", b"nope:q"]])
def test_read_of_unknown_family(backend, columns):
    backend.create_table(spec())
    put(backend, "t", b"a", {b"cf:q": b"v"})
    with pytest.raises(FamilyNotFound):
        backend.get_rows("t", [b"a"], columns=columns)
    with pytest.raises(FamilyNotFound):
        list(backend.scan("t", columns=columns))
    with pytest.raises(FamilyNotFound):
        backend.get_cells("t", b"a", columns[-1])


def test_increment_of_unknown_family_writes_nothing(backend):
    backend.create_table(spec())
    with pytest.raises(FamilyNotFound):
        backend.increment("t", b"a", b"nope:n")
    with pytest.raises(FamilyNotFound):
        backend.increment_many([Increment("t", b"a", b"cf:n", 5), Increment("t", b"a", b"nope:n")])
    assert all_rows(backend, "t") == []


def test_check_and_put_with_unknown_family_writes_nothing(backend):
    backend.create_table(spec())
    with pytest.raises(FamilyNotFound):
        backend.check_and_put("t", b"a", b"nope:q", None, {b"cf:q": b"v"})
    with pytest.raises(FamilyNotFound):
        backend.check_and_put("t", b"a", b"cf:q", None, {b"cf:x": b"v", b"nope:q": b"v"})
    assert all_rows(backend, "t") == []


def test_tables_are_independent(backend):
    backend.create_table(spec())
    backend.create_table(spec("u"))
    put(backend, "t", b"r", {b"cf:q": b"in t"})
    backend.increment("u", b"r", b"one:n", 3)
    assert backend.get_row("t", b"r") == {b"cf:q": b"in t"}
    assert backend.get_row("u", b"r") == {b"one:n": counter(3)}
