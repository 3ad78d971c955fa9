"""The per-backend memo behind the kept ranking heads and cells (crashstore/process_memo.py)."""

import gc

import pytest

from socorro_store.crashstore.process_memo import BackendMemo


class FakeBackend:
    """Only its identity matters to the memo."""


def test_the_least_recently_used_go_first():
    memo, backend = BackendMemo(2), FakeBackend()
    memo.update(backend, [("a", 1), ("b", 2)])
    assert memo.get_many(backend, ["a"]) == {"a": 1}  # a is now the most recently used
    memo.update(backend, [("c", 3)])
    assert memo.get_many(backend, ["a", "b", "c"]) == {"a": 1, "c": 3}


def test_dropped_and_none_values_are_not_kept_and_backends_are_apart():
    memo, one, two = BackendMemo(8), FakeBackend(), FakeBackend()
    memo.update(one, [("a", 1), ("b", None)])
    memo.update(two, [("a", 2)])
    memo.update(one, [("c", 3)], dropped=["a"])
    assert memo.get_many(one, ["a", "b", "c"]) == {"c": 3}
    assert memo.get_many(two, ["a"]) == {"a": 2}
    memo.forget(two)
    assert memo.get_many(two, ["a"]) == {}


def test_a_backend_gone_takes_its_keys():
    memo, backend = BackendMemo(8), FakeBackend()
    memo.update(backend, [("a", 1)])
    del backend
    gc.collect()
    assert len(memo._kept) == 0


@pytest.mark.parametrize("limit", [0, -1, 1.5, None])
def test_the_limit_is_a_positive_int(limit):
    with pytest.raises(ValueError, match="positive int"):
        BackendMemo(limit)
