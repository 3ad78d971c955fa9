"""The embedded backend runs ``overlap()``'s calls and ``mutate_tables()``' tables on threads of
its own: SQLite reads and writes run without the GIL, and each table is a file with its own
write connection."""

import threading

import pytest

from socorro_store.backends import RowMutation, open_backend
from socorro_store.backends.embedded import EmbeddedBackend
from socorro_store.errors import InvalidArgument, TableNotFound
from socorro_store.schema.specs import FamilySpec, TableSpec


@pytest.fixture
def backend(tmp_path):
    b = open_backend(f"embedded://{tmp_path / 's'}")
    for name in ("a", "b", "c"):
        b.create_table(TableSpec(name, [FamilySpec("f")]))
    yield b
    b.close()


def test_overlapped_calls_run_at_once(backend):
    barrier = threading.Barrier(3, timeout=10)  # one call alone would wait out the timeout

    def call(n):
        return lambda: (barrier.wait(), n)[1]
    assert backend.overlap([call(1), call(2), call(3)]) == [1, 2, 3]


def test_an_overlap_inside_an_overlapped_call_runs_its_calls_one_after_another(backend):
    inner = [lambda n=n: n for n in range(10)]
    calls = [lambda: backend.overlap(inner) for _ in range(EmbeddedBackend.OVERLAP_THREADS + 2)]
    assert backend.overlap(calls) == [list(range(10))] * len(calls)


def test_every_call_runs_and_the_first_failure_is_raised(backend):
    ran = []

    def fail(message):
        def call():
            ran.append(message)
            raise InvalidArgument(message)
        return call
    with pytest.raises(InvalidArgument, match="first"):
        backend.overlap([lambda: ran.append("ok"), fail("first"), fail("second")])
    assert sorted(ran) == ["first", "ok", "second"]


def test_mutate_tables_writes_every_table(backend):
    backend.mutate_tables({name: [RowMutation(b"r", {b"f:q": name.encode()})] for name in ("a", "b", "c")})
    assert [backend.get_row(name, b"r") for name in ("a", "b", "c")] == [{b"f:q": b"a"}, {b"f:q": b"b"},
                                                                          {b"f:q": b"c"}]
    with pytest.raises(TableNotFound):
        backend.mutate_tables({"a": [RowMutation(b"s", {b"f:q": b"1"})], "missing": [RowMutation(b"s", {b"f:q": b"1"})]})
    assert backend.get_row("a", b"s") == {b"f:q": b"1"}  # the other table's write is not held back
