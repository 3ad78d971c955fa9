"""``search verify``: the search index compared with the crash rows, each kind of difference
found and named, nothing written by a check, everything set right by a repair.

The ``store`` tests run on every backend kind with the embedded engine (the crash rows, the
records and the engine's documents all take part); the engine's own answer (``documents``) is
checked on OpenSearch too, and a store searching through it is verified and repaired there.
"""

import json

import pytest
from cli_helpers import fails, run
from fixtures_opensearch import engine_url, fresh_index
from store_helpers import BASE_TIME, all_rows, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.crashstore import search_verify
from socorro_store.errors import InvalidArgument, SearchNotConfigured
from socorro_store.search.engines import open_search_engine


@pytest.fixture
def store(backend_url, tmp_path):
    with open_store(backend_url, search_url=f"embedded://{tmp_path / 'search'}", search_feed=False) as s:
        s.create_tables()
        yield s


def _save(store, n, signature="OOM | small", processed_too=True):
    ids = [crash_id() for _ in range(n)]
    for cid in ids:
        store.save_raw_crash(raw_crash(cid), {}, cid)
    if processed_too:
        for cid in ids:
            store.save_processed(processed(cid, signature=signature, date_processed=BASE_TIME.isoformat(),
                                           product="Firefox", uptime=30))
    return ids


def _counts(report):
    return {kind: report[kind] for kind in ("missing", "stale", "orphaned", "pending")}


NONE = {"missing": 0, "stale": 0, "orphaned": 0, "pending": 0}


def _drift(store):
    """Break the index every way it can be broken: ``{kind: crash ids}``."""
    ids = _save(store, 6)
    (unprocessed,) = _save(store, 1, processed_too=False)
    assert store.settle()
    engine = store.search.engine()
    engine.delete([ids[0]])  # the feed lost a document
    held = engine.documents([ids[1]])[ids[1]]
    engine.index([{**held, "signature": "not what the row says"}])  # a document gone wrong
    engine.index([{"uuid": unprocessed, "date": BASE_TIME.isoformat(), "signature": "never processed"}])
    ghost = crash_id()  # a document whose crash never was, dated in the days read
    engine.index([{"uuid": ghost, "date": BASE_TIME.isoformat(), "signature": "ghost"}])
    # a reprocessing the feed has yet to index: the record waits, the document is the old one
    store.save_processed(processed(ids[2], signature="reprocessed", date_processed=BASE_TIME.isoformat()))
    return {"missing": [ids[0]], "stale": sorted([ids[1], unprocessed]), "orphaned": [ghost], "pending": [ids[2]]}


def test_an_index_equal_to_its_rows_verifies_clean(store):
    _save(store, 5)
    _save(store, 2, processed_too=False)
    assert store.settle()
    report = store.verify_search()
    assert _counts(report) == NONE and report["checked"] == 7 and report["documents"] == 5
    assert report["examples"] == {} and report["days"] is None


def test_verify_names_each_kind_and_a_check_writes_nothing(store):
    kinds = _drift(store)
    engine = store.search.engine()
    every = [cid for ids in kinds.values() for cid in ids]
    rows, documents = all_rows(store.backend), engine.documents(every)
    report = store.verify_search()
    assert _counts(report) == {kind: len(ids) for kind, ids in kinds.items()}
    assert {kind: sorted(ids) for kind, ids in report["examples"].items()} == kinds
    assert report["checked"] == 7 and report["repaired"] == 0
    assert all_rows(store.backend) == rows and engine.documents(every) == documents


def test_a_repair_sets_right_what_differs_and_leaves_the_pending_to_the_feed(store):
    kinds = _drift(store)
    report = store.verify_search(repair=True)
    assert report["repaired"] == 4 and report["pending"] == 1
    again = store.verify_search()
    assert _counts(again) == {**NONE, "pending": 1} and again["examples"] == {"pending": kinds["pending"]}
    engine = store.search.engine()
    assert kinds["orphaned"][0] not in engine.documents(kinds["orphaned"])
    assert store.settle()
    assert _counts(store.verify_search()) == NONE
    assert engine.documents(kinds["pending"])[kinds["pending"][0]]["signature"] == "reprocessed"


def test_what_differs_is_sorted_and_repaired_a_chunk_at_a_time(store, monkeypatch):
    monkeypatch.setattr(search_verify, "CHUNK", 2)
    monkeypatch.setattr(search_verify, "EXAMPLES", 1)
    kinds = _drift(store)
    report = store.verify_search(repair=True)
    assert _counts(report) == {kind: len(ids) for kind, ids in kinds.items()} and report["repaired"] == 4
    assert {kind: len(ids) for kind, ids in report["examples"].items()} == {kind: 1 for kind in kinds}
    assert _counts(store.verify_search()) == {**NONE, "pending": 1}


def test_a_document_the_engine_refuses_stays_a_problem_until_a_repair_indexes_it(store):
    ids = _save(store, 3)
    engine = store.search.feed().engine
    real_index = engine.index

    def refuse_one(documents):
        if any(doc["uuid"] == ids[1] for doc in documents):
            raise ValueError("this document cannot be indexed")
        return real_index(documents)

    engine.index = refuse_one
    assert store.settle()
    assert [d["crash_id"] for d in store.search_status()["dead_lettered"]] == [ids[1]]
    refused = store.verify_search(repair=True)
    assert refused["missing"] == 1 and refused["repaired"] == 0 and refused["dead_lettered"] == 1
    assert search_verify.problems_left(refused, repair=True) == 1
    engine.index = real_index  # fixed: the repair indexes it and takes it off the dead letters
    fixed = store.verify_search(repair=True)
    assert fixed["repaired"] == 1 and search_verify.problems_left(fixed, repair=True) == 0
    assert store.search_status()["dead_lettered"] == [] and _counts(store.verify_search()) == NONE


def test_a_day_range_reads_only_its_days(store):
    kinds = _drift(store)
    other_day = store.verify_search(since="2016-09-20", until="2016-09-22")
    assert other_day["checked"] == 0 and _counts(other_day) == NONE and other_day["days"] == 2
    day = store.verify_search(since="2016-09-18", until="2016-09-19")
    assert _counts(day) == {kind: len(ids) for kind, ids in kinds.items()} and day["days"] == 1


@pytest.mark.parametrize("since, until, words", [
    (None, "2016-09-19", "--until needs --since"),
    ("2016-09-19", "2016-09-18", "--until must be after --since"),
    ("2016-13-01", None, "since"),
])
def test_a_bad_range_is_refused_before_anything_is_read_or_written(store, since, until, words):
    _drift(store)
    rows = all_rows(store.backend)
    for repair in (False, True):
        with pytest.raises(InvalidArgument, match=words):
            store.verify_search(since=since, until=until, repair=repair)
    assert all_rows(store.backend) == rows


def test_the_command_exits_1_on_differences_and_0_once_repaired(tmp_path):
    url = f"embedded://{tmp_path / 'store'}"
    with open_store(url, search_feed=False) as store:
        store.create_tables()
        kinds = _drift(store)
    check = run(url, "search", "verify")
    assert check.exit_code == 1, check.output
    lines = check.stdout.splitlines()
    assert lines[0] == "checked 7 crash row(s), 6 document(s); every day read"
    assert lines[1] == f"missing   1  ({kinds['missing'][0]})"
    assert lines[3] == f"orphaned  1  ({kinds['orphaned'][0]})"
    repair = run(url, "search", "verify", "--repair", "--json")
    assert repair.exit_code == 0, repair.output
    assert json.loads(repair.stdout)["repaired"] == 4
    assert run(url, "search", "verify", "--since", "2016-09-18").exit_code == 0  # only the pending crash left
    line = fails(run(url, "search", "verify", "--until", "2016-09-18"), 2)
    assert "--until needs --since" in line
    assert "no search configured" in fails(run(url, "--search-url", "none", "search", "verify"), 1)


def test_a_store_without_search_says_so(tmp_path):
    with open_store(f"embedded://{tmp_path / 'store'}", search_url="none") as store:
        store.create_tables()
        with pytest.raises(SearchNotConfigured):
            store.verify_search()


# -- OpenSearch -------------------------------------------------------------------------------

def test_opensearch_gives_back_each_document_as_indexed(opensearch_url):
    engine = open_search_engine(opensearch_url)
    try:
        documents = [{"uuid": f"doc-{i:05d}", "date": f"2016-09-18T{i % 24:02d}:00:00.{i:06d}+00:00",
                      "signature": ["OOM | small", "日本語 | クラッシュ", "e\u0301t\u00e9"][i % 3], "uptime": i,
                      **({"product": "Firefox"} if i % 2 else {})} for i in range(1_205)]  # two pages of ids
        engine.index(documents)
        asked = [d["uuid"] for d in documents] + ["doc-missing"]
        assert engine.documents(asked) == {d["uuid"]: d for d in documents}
    finally:
        engine.close()


def test_a_store_searching_through_opensearch_is_verified_and_repaired(opensearch_real, tmp_path):
    base, index = opensearch_real[0], fresh_index("verify")
    try:
        with open_store(f"embedded://{tmp_path / 'store'}", search_url=engine_url(base, index),
                        search_feed=False) as store:
            store.create_tables()
            kinds = _drift(store)
            report = store.verify_search()
            assert _counts(report) == {kind: len(ids) for kind, ids in kinds.items()}
            assert store.verify_search(repair=True)["repaired"] == 4
            assert store.settle()
            assert _counts(store.verify_search()) == NONE
    finally:
        engine = open_search_engine(engine_url(base, index))
        engine.drop_index()
        engine.close()
