"""The embedded search engine (socorro_store/search/embedded.py): one focused test per rule of the
contract's docstring on hand-built documents, plus what the engine itself promises (upserts,
deletes, persistence, concurrent readers, where its file lives, hostile queries end)."""

import os
import stat
import threading
from datetime import datetime, timedelta, timezone

import pytest

from socorro_store.errors import InvalidArgument, SearchParameterError
from socorro_store.search.contract import Cardinality, Condition, FieldFilter, Histogram, Query, Terms
from socorro_store.search.embedded import EmbeddedSearch
from socorro_store.search.fields import document_of

T0 = datetime(2026, 11, 20, tzinfo=timezone.utc)


def at(hours):
    return (T0 + timedelta(hours=hours)).isoformat()


DOCS = [
    {"uuid": "a", "date": at(1), "signature": "OOM | small", "product": "Firefox", "version": "120.0",
     "build_id": 20261101000000, "uptime": 10, "startup_crash": True,
     "app_notes": "AdapterVendorID: 0x10de\nD3D11 Layers+", "moz_crash_reason": "MOZ_CRASH(oom)"},
    {"uuid": "b", "date": at(2), "signature": "js::RunScript | OOM", "product": "firefox", "version": "121.0",
     "build_id": 20261110000000, "uptime": 100, "startup_crash": False, "url": "https://a%b_c.example/"},
    {"uuid": "c", "date": at(25), "signature": "mozilla::dom::Element::Destroy", "product": "Fenix",
     "version": "120.0", "build_id": 20261110000000},
    {"uuid": "d", "date": at(26), "product": "Firefox", "version": "121.0b1", "uptime": 5, "email": "x@y.z"},
]


def cond(field, operator, value=None, negated=False, pattern=None):
    return Condition(field, operator, value, negated, pattern)


def where(field, *conditions):
    return FieldFilter(field, conditions)


def query(*filters, **controls):
    controls.setdefault("columns", ("uuid",))
    return Query(filters=filters, start=T0 - timedelta(days=1), end=T0 + timedelta(days=2), **controls)


@pytest.fixture
def engine(tmp_path):
    with EmbeddedSearch(tmp_path / "search.sqlite3") as engine:
        engine.index(DOCS)
        yield engine


def uuids(engine, *filters, **controls):
    return [hit["uuid"] for hit in engine.search(query(*filters, **controls))["hits"]]


# --- matching ----------------------------------------------------------------------------------

def test_filters_on_different_fields_are_and_ed(engine):
    assert uuids(engine, where("product", cond("product", "=", "Firefox")),
                 where("version", cond("version", "=", "121.0b1"))) == ["d"]


def test_non_range_conditions_on_one_field_are_or_ed(engine):
    assert uuids(engine, where("version", cond("version", "=", "120.0"), cond("version", "=", "121.0"))) == ["a", "b", "c"]


def test_range_conditions_on_one_field_are_and_ed(engine):
    assert uuids(engine, where("uptime", cond("uptime", ">=", 5), cond("uptime", "<", 100))) == ["a", "d"]


def test_range_conditions_and_others_on_one_field(engine):
    # every range condition and at least one of the others
    assert uuids(engine, where("uptime", cond("uptime", ">=", 10), cond("uptime", "=", 5),
                               cond("uptime", "=", 100))) == ["b"]


def test_match_on_a_text_field_shares_a_token(engine):
    assert uuids(engine, where("signature", cond("signature", "match", "oom"))) == ["a", "b"]
    assert uuids(engine, where("signature", cond("signature", "match", "RUNSCRIPT nothing"))) == ["b"]


def test_match_with_no_token_matches_nothing(engine):
    assert uuids(engine, where("signature", cond("signature", "match", ":: | _"))) == []
    assert uuids(engine, where("signature", cond("signature", "match", "::", negated=True))) == ["a", "b", "c", "d"]


def test_match_on_a_keyword_field_is_equality_and_case_sensitive(engine):
    assert uuids(engine, where("product", cond("product", "match", "Firefox"))) == ["a", "d"]
    assert uuids(engine, where("product", cond("product", "match", "Fire"))) == []


def test_equality_on_a_text_field_is_the_whole_value(engine):
    assert uuids(engine, where("signature", cond("signature", "=", "OOM"))) == []
    assert uuids(engine, where("signature", cond("signature", "=", "OOM | small"))) == ["a"]


def test_contains_is_case_sensitive_and_literal(engine):
    assert uuids(engine, where("signature", cond("signature", "~", "OOM"))) == ["a", "b"]
    assert uuids(engine, where("signature", cond("signature", "~", "oom"))) == []
    assert uuids(engine, where("signature", cond("signature", "~", "O?M"))) == []
    assert uuids(engine, where("signature", cond("signature", "~", "O*"))) == []
    assert uuids(engine, where("url", cond("url", "~", "a%b_c"))) == ["b"]
    assert uuids(engine, where("url", cond("url", "~", "a_b"))) == []  # not LIKE's wildcards


def test_starts_and_ends_with(engine):
    assert uuids(engine, where("signature", cond("signature", "^", "js::"))) == ["b"]
    assert uuids(engine, where("signature", cond("signature", "^", "JS::"))) == []
    assert uuids(engine, where("signature", cond("signature", "$", "small"))) == ["a"]
    assert uuids(engine, where("signature", cond("signature", "$", "OOM | small | more"))) == []


def test_regex_is_anchored_at_both_ends_and_dot_matches_newlines(engine):
    assert uuids(engine, where("signature", cond("signature", "@", "OOM.*", pattern="OOM.*"))) == ["a"]
    assert uuids(engine, where("signature", cond("signature", "@", ".*OOM", pattern=".*OOM"))) == ["b"]
    assert uuids(engine, where("signature", cond("signature", "@", "OOM", pattern="OOM"))) == []
    assert uuids(engine, where("app_notes", cond("app_notes", "@", "Adapter.*Layers\\+",
                                                 pattern="Adapter.*Layers\\+"))) == ["a"]


def test_regex_on_uuid(engine):
    assert uuids(engine, where("uuid", cond("uuid", "@", "[bc]", pattern="[bc]"))) == ["b", "c"]


def test_integer_and_date_ranges(engine):
    assert uuids(engine, where("build_id", cond("build_id", ">", 20261101000000))) == ["b", "c"]
    assert uuids(engine, where("date", cond("date", ">=", T0 + timedelta(hours=25)))) == ["c", "d"]
    assert uuids(engine, where("date", cond("date", "<", T0 + timedelta(hours=2)))) == ["a"]
    assert uuids(engine, where("date", cond("date", "<=", T0 + timedelta(hours=2)))) == ["a", "b"]


def test_null_is_a_missing_field(engine):
    assert uuids(engine, where("signature", cond("signature", "__null__"))) == ["d"]
    assert uuids(engine, where("signature", cond("signature", "__null__", negated=True))) == ["a", "b", "c"]
    assert uuids(engine, where("uptime", cond("uptime", "__null__"))) == ["c"]


def test_true_is_a_true_boolean(engine):
    assert uuids(engine, where("startup_crash", cond("startup_crash", "__true__"))) == ["a"]
    assert uuids(engine, where("startup_crash", cond("startup_crash", "__true__", negated=True))) == ["b", "c", "d"]


def test_a_negated_condition_is_true_on_a_missing_field(engine):
    assert uuids(engine, where("signature", cond("signature", "=", "OOM | small", negated=True))) == ["b", "c", "d"]
    assert uuids(engine, where("signature", cond("signature", "~", "OOM", negated=True))) == ["c", "d"]
    assert uuids(engine, where("uptime", cond("uptime", ">", 5, negated=True))) == ["c", "d"]


def test_values_beyond_64_bits_compare_as_numbers(engine):
    assert uuids(engine, where("uptime", cond("uptime", "<", 2 ** 70))) == ["a", "b", "d"]
    assert uuids(engine, where("uptime", cond("uptime", ">", -(2 ** 70)), cond("uptime", "<", 11))) == ["a", "d"]
    assert uuids(engine, where("uptime", cond("uptime", "=", 2 ** 70))) == []


# --- hits --------------------------------------------------------------------------------------

def test_hits_sort_missing_last_both_ways_then_uuid(engine):
    assert uuids(engine, sort=(("uptime", False),)) == ["d", "a", "b", "c"]
    assert uuids(engine, sort=(("uptime", True),)) == ["b", "a", "d", "c"]
    assert uuids(engine, sort=(("version", False),)) == ["a", "c", "b", "d"]  # ties by uuid
    assert uuids(engine, sort=(("version", True), ("uuid", True))) == ["d", "b", "c", "a"]
    assert uuids(engine, sort=(("signature", False),)) == ["a", "b", "c", "d"]  # code point order: "O" < "j" < "m"
    assert uuids(engine, sort=(("startup_crash", False),)) == ["b", "a", "c", "d"]


def test_paging_and_an_offset_past_the_end(engine):
    assert uuids(engine, results_number=2, results_offset=1) == ["b", "c"]
    answer = engine.search(query(results_number=5, results_offset=10))
    assert (answer["hits"], answer["total"]) == ([], 4)
    assert engine.search(query(results_number=0))["hits"] == []


def test_a_page_size_past_64_bits_is_every_hit(engine):
    assert uuids(engine, results_number=2 ** 64, results_offset=3) == ["d"]


def test_hits_have_every_column_typed_none_where_missing(engine):
    hits = engine.search(query(where("uuid", cond("uuid", "=", "a"), cond("uuid", "=", "c")),
                               columns=("uuid", "date", "uptime", "startup_crash", "email", "signature")))["hits"]
    assert hits == [
        {"uuid": "a", "date": at(1), "uptime": 10, "startup_crash": True, "email": None, "signature": "OOM | small"},
        {"uuid": "c", "date": at(25), "uptime": None, "startup_crash": None, "email": None,
         "signature": "mozilla::dom::Element::Destroy"},
    ]


def test_a_date_is_returned_as_the_document_holds_it(tmp_path):
    with EmbeddedSearch(tmp_path / "s.sqlite3") as engine:
        engine.index([{"uuid": "x", "date": "2026-11-20T01:00:00.500000+00:00"},
                      {"uuid": "y", "date": "2026-11-20T01:00:00Z"}])
        hits = engine.search(query(columns=("uuid", "date")))["hits"]
    assert hits == [{"uuid": "x", "date": "2026-11-20T01:00:00.500000+00:00"},
                    {"uuid": "y", "date": "2026-11-20T01:00:00Z"}]


def test_total_is_exact(engine):
    assert engine.search(query(where("product", cond("product", "=", "Firefox")), results_number=1))["total"] == 2


# --- facets ------------------------------------------------------------------------------------

def test_terms_by_count_then_term_missing_not_counted(engine):
    facets = engine.search(query(facets=(Terms("version"), Terms("signature"))))["facets"]
    assert facets["version"] == [{"term": "120.0", "count": 2}, {"term": "121.0", "count": 1},
                                 {"term": "121.0b1", "count": 1}]
    assert [t["count"] for t in facets["signature"]] == [1, 1, 1]


def test_terms_keep_facets_size_by_code_point_order(tmp_path):
    with EmbeddedSearch(tmp_path / "s.sqlite3") as engine:
        engine.index([{"uuid": str(i), "date": at(1), "product": p} for i, p in enumerate(["é", "a", "B", "B", "b"])])
        facets = engine.search(query(facets=(Terms("product"),), facets_size=3))["facets"]
    assert facets["product"] == [{"term": "B", "count": 2}, {"term": "a", "count": 1}, {"term": "b", "count": 1}]


def test_terms_of_booleans_and_integers(engine):
    facets = engine.search(query(facets=(Terms("startup_crash"), Terms("build_id"))))["facets"]
    assert facets["startup_crash"] == [{"term": False, "count": 1}, {"term": True, "count": 1}]
    assert facets["build_id"] == [{"term": 20261110000000, "count": 2}, {"term": 20261101000000, "count": 1}]


def test_terms_with_sub_aggregations(engine):
    facets = engine.search(query(facets=(Terms("version", sub=(Terms("product"), Cardinality("uptime"))),)))["facets"]
    assert facets["version"][0] == {"term": "120.0", "count": 2, "facets": {
        "product": [{"term": "Fenix", "count": 1}, {"term": "Firefox", "count": 1}],
        "cardinality_uptime": {"value": 1}}}
    assert facets["version"][2] == {"term": "121.0b1", "count": 1, "facets": {
        "product": [{"term": "Firefox", "count": 1}], "cardinality_uptime": {"value": 1}}}


def test_facets_count_every_match_not_the_page(engine):
    answer = engine.search(query(results_number=1, facets=(Terms("product"),)))
    assert sum(t["count"] for t in answer["facets"]["product"]) == 4


def test_cardinality_is_exact(engine):
    facets = engine.search(query(facets=(Cardinality("version"), Cardinality("email"))))["facets"]
    assert facets == {"cardinality_version": {"value": 3}, "cardinality_email": {"value": 1}}


def test_date_histogram_buckets_aligned_on_the_epoch(engine):
    facets = engine.search(query(facets=(Histogram("date", 86400, sub=(Terms("product"),)),)))["facets"]
    assert facets["histogram_date"] == [
        {"term": "2026-11-20T00:00:00Z", "count": 2, "facets": {"product": [{"term": "Firefox", "count": 1},
                                                                             {"term": "firefox", "count": 1}]}},
        {"term": "2026-11-21T00:00:00Z", "count": 2, "facets": {"product": [{"term": "Fenix", "count": 1},
                                                                             {"term": "Firefox", "count": 1}]}},
    ]


def test_histogram_leaves_empty_buckets_out_and_floors_negative_numbers(tmp_path):
    with EmbeddedSearch(tmp_path / "s.sqlite3") as engine:
        engine.index([{"uuid": str(v), "date": at(1), "uptime": v} for v in (-61, -60, -1, 0, 59, 300)])
        facets = engine.search(query(facets=(Histogram("uptime", 60),)))["facets"]
    assert facets["histogram_uptime"] == [{"term": -120, "count": 1}, {"term": -60, "count": 2},
                                          {"term": 0, "count": 2}, {"term": 300, "count": 1}]


@pytest.mark.parametrize("interval", [2 ** 62, 2 ** 63, 2 ** 64])
def test_histogram_buckets_of_extreme_values_and_intervals(tmp_path, interval):
    values = (-(2 ** 63), -1, 0, 2 ** 63 - 1)
    with EmbeddedSearch(tmp_path / "s.sqlite3") as engine:
        engine.index([{"uuid": str(v), "date": at(1), "uptime": v} for v in values])
        facets = engine.search(query(facets=(Histogram("uptime", interval, sub=(Cardinality("uuid"),)),)))["facets"]
    expected = {}
    for v in values:
        expected[v // interval * interval] = expected.get(v // interval * interval, 0) + 1
    assert facets["histogram_uptime"] == [{"term": t, "count": n, "facets": {"cardinality_uuid": {"value": n}}}
                                          for t, n in sorted(expected.items())]


def test_a_later_facet_with_the_same_key_replaces_an_earlier_one(engine):
    facets = engine.search(query(facets=(Terms("product"), Cardinality("version"),
                                         Terms("product", sub=(Cardinality("version"),)))))["facets"]
    assert list(facets) == ["product", "cardinality_version"]
    assert "facets" in facets["product"][0]


def test_facets_of_no_match(engine):
    answer = engine.search(query(where("product", cond("product", "=", "none")),
                                 facets=(Terms("product"), Cardinality("uuid"), Histogram("date", 3600))))
    assert answer == {"hits": [], "total": 0, "errors": [], "facets": {
        "product": [], "cardinality_uuid": {"value": 0}, "histogram_date": []}}


# --- the engine --------------------------------------------------------------------------------

def test_indexing_a_held_uuid_replaces_the_document(engine):
    engine.index([{"uuid": "a", "date": at(1), "signature": "Reprocessed"}])
    assert engine.count() == 4
    assert uuids(engine, where("signature", cond("signature", "match", "small"))) == []
    assert uuids(engine, where("signature", cond("signature", "=", "Reprocessed"))) == ["a"]
    assert uuids(engine, where("uptime", cond("uptime", "=", 10))) == []  # fields it lost are gone


def test_delete_removes_and_ignores_ids_not_held(engine):
    engine.delete(["b", "nope"])
    assert engine.count() == 3
    assert uuids(engine, where("signature", cond("signature", "~", "OOM"))) == ["a"]


ODD = ["a\x00b", "a\x00", "\x00", "😀x", "e\u0301", "x\u2028y", "a"]


@pytest.mark.parametrize("name", ["uuid", "product", "signature"])
def test_odd_strings_match_whole(tmp_path, name):
    with EmbeddedSearch(tmp_path / "s.sqlite3") as engine:
        engine.index([{"uuid": value, name: value} if name != "uuid" else {"uuid": value} for value in ODD])
        for value in ODD:
            for operator in ("=", "match") if name != "signature" else ("=",):
                assert uuids(engine, where(name, cond(name, operator, value))) == [value], (value, operator)
        terms = engine.search(query(facets=(Terms("uuid", sub=(Terms(name),)),), facets_size=100))["facets"]["uuid"]
        assert sorted(t["term"] for t in terms) == sorted(ODD)


def test_deleting_an_id_with_a_nul_deletes_only_it(tmp_path):
    with EmbeddedSearch(tmp_path / "s.sqlite3") as engine:
        engine.index([{"uuid": "a"}, {"uuid": "a\x00b"}])
        engine.delete(["a\x00b"])
        assert uuids(engine) == ["a"]


def test_a_bad_document_writes_nothing(engine):
    with pytest.raises(InvalidArgument, match="uptime"):
        engine.index([{"uuid": "e", "date": at(1)}, {"uuid": "f", "uptime": "long"}])
    with pytest.raises(InvalidArgument, match="nonsense"):
        engine.index([{"uuid": "g", "nonsense": 1}])
    with pytest.raises(InvalidArgument, match="uuid"):
        engine.index([{"date": at(1)}])
    with pytest.raises(InvalidArgument, match="date"):
        engine.index([{"uuid": "h", "date": "0001-01-01T00:00:00+01:00"}])
    assert engine.count() == 4


@pytest.mark.parametrize("key, value", [
    ("build", "9" * 30), ("build", 2 ** 64), ("build", "9" * 5000), ("uptime", -(2 ** 63) - 1),
    ("signature", "OOM \ud800"), ("startup_crash", [1]), ("startup_crash", {"a": 1}),
    ("date_processed", "0001-01-01T00:00:00+01:00"), ("date_processed", "9999-12-31T23:59:59-01:00"),
])
def test_a_value_no_engine_can_hold_is_left_out_of_the_document(engine, key, value):
    # a processed crash's odd value must not make the feed's batch fail for ever
    doc = document_of({"uuid": "odd", key: value, "product": "Odd"})
    assert doc == {"uuid": "odd", "product": "Odd"}
    engine.index([doc])
    assert uuids(engine, where("product", cond("product", "=", "Odd"))) == ["odd"]


def test_64_bit_values_are_kept(engine):
    # beyond what document_of keeps (2**53), but an engine given them holds them exactly
    doc = {"uuid": "big", "build_id": 2 ** 63 - 1, "uptime": -(2 ** 63)}
    engine.index([doc])
    assert uuids(engine, where("build_id", cond("build_id", "=", 2 ** 63 - 1))) == ["big"]


def test_documents_persist_across_reopening(tmp_path):
    path = tmp_path / "search.sqlite3"
    with EmbeddedSearch(path) as engine:
        engine.index(DOCS)
    with EmbeddedSearch(path) as engine:
        assert engine.count() == 4
        assert uuids(engine, where("signature", cond("signature", "match", "oom"))) == ["a", "b"]
        engine.index([{"uuid": "e", "signature": "OOM | large"}])  # dictionary ids go on from the file
        assert uuids(engine, where("signature", cond("signature", "match", "oom"))) == ["a", "b", "e"]
        assert uuids(engine, where("signature", cond("signature", "match", "large"))) == ["e"]
        assert uuids(engine, where("signature", cond("signature", "=", "OOM | small"))) == ["a"]


def test_planner_statistics_follow_the_index_across_processes(tmp_path):
    import sqlite3

    path = tmp_path / "search.sqlite3"

    def analyzed():
        conn = sqlite3.connect(path)
        try:
            if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchone():
                return False
            return conn.execute("SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'docs'").fetchone()[0] > 0
        finally:
            conn.close()

    for part in range(3):  # three short-lived writers of 4,000 documents each
        with EmbeddedSearch(path) as engine:
            engine.index([{"uuid": f"{part}-{i}", "date": at(i % 48), "product": f"p{i % 3}"} for i in range(4000)])
    assert analyzed()


def test_tokens_follow_a_changed_analyzer(tmp_path, monkeypatch):
    from socorro_store.search import embedded, embedded_sql

    path = tmp_path / "search.sqlite3"
    with monkeypatch.context() as patched:
        for module in (embedded, embedded_sql):
            patched.setattr(module, "analyze", lambda text: ["older"])
        with EmbeddedSearch(path) as engine:
            engine.index(DOCS)
            assert uuids(engine, where("signature", cond("signature", "match", "older"))) == ["a", "b", "c"]
    with EmbeddedSearch(path) as engine:  # the analyzer of today: the tokens are rebuilt
        assert uuids(engine, where("signature", cond("signature", "match", "oom"))) == ["a", "b"]
        assert uuids(engine, where("signature", cond("signature", "match", "older"))) == []


def test_opening_needs_no_write_lock(tmp_path):
    import sqlite3

    path = tmp_path / "search.sqlite3"
    with EmbeddedSearch(path) as engine:
        engine.index(DOCS)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # a long write elsewhere (another process's reindex)
    try:
        with EmbeddedSearch(path) as engine:
            assert uuids(engine, where("product", cond("product", "=", "Firefox"))) == ["a", "d"]
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_the_file_lives_where_told_and_is_private(tmp_path):
    path = tmp_path / "store" / "deeper" / "search.sqlite3"
    with EmbeddedSearch(path) as engine:
        engine.index(DOCS)
        stats = engine.stats()
        assert engine.url == f"embedded://{path}"
    assert path.is_file() and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stats["documents"] == 4 and stats["bytes"] >= os.path.getsize(path) > 0
    assert sorted(p.name for p in path.parent.iterdir() if not p.name.startswith("search.sqlite3")) == []


def test_concurrent_readers_while_indexing(tmp_path):
    path = tmp_path / "search.sqlite3"
    errors, seen = [], []
    with EmbeddedSearch(path) as engine:
        done = threading.Event()

        def read():
            try:
                while not done.is_set():
                    answer = engine.search(query(where("product", cond("product", "=", "P")),
                                                 facets=(Terms("version"),), results_number=5))
                    # a search sees whole batches: the facet counts add up to the total
                    assert sum(t["count"] for t in answer["facets"]["version"]) == answer["total"]
                    assert answer["total"] % 50 == 0
                    seen.append(answer["total"])
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        readers = [threading.Thread(target=read) for _ in range(4)]
        for reader in readers:
            reader.start()
        for batch in range(20):
            engine.index([{"uuid": f"{batch}-{i}", "date": at(1), "product": "P", "version": str(i % 7)}
                          for i in range(50)])
        done.set()
        for reader in readers:
            reader.join()
        assert engine.count() == 1000
    assert errors == [] and seen


def test_a_thread_per_search_does_not_keep_a_connection_per_thread(engine):
    def open_files():
        return sum(1 for fd in os.listdir("/proc/self/fd")
                   if os.path.realpath(f"/proc/self/fd/{fd}") == os.path.realpath(engine.path))

    for _ in range(30):
        thread = threading.Thread(target=engine.search, args=(query(),))
        thread.start()
        thread.join()
    assert open_files() <= 9


def test_many_values_are_one_parameter(engine):
    values = [cond("version", "=", f"v{i}") for i in range(10_000)] + [cond("version", "=", "120.0")]
    assert uuids(engine, where("version", *values)) == ["a", "c"]
    negated = [cond("uptime", "=", i, negated=True) for i in range(10_000)]
    assert uuids(engine, where("uptime", *negated)) == ["a", "b", "c", "d"]


def test_a_query_past_its_budget_is_refused(tmp_path):
    with EmbeddedSearch(tmp_path / "s.sqlite3", budget_seconds=0.05) as engine:
        engine.index([{"uuid": str(i), "signature": f"sig {i}"} for i in range(2000)])
        contains = [cond("signature", "~", f"nothing {i}") for i in range(20_000)]
        with pytest.raises(SearchParameterError) as caught:
            engine.search(query(where("signature", *contains)))
        assert caught.value.parameter == "query" and "too expensive" in str(caught.value)
        assert engine.search(query(where("signature", cond("signature", "=", "sig 7"))))["total"] == 1


def test_a_runaway_regex_is_stopped(tmp_path):
    with EmbeddedSearch(tmp_path / "s.sqlite3", budget_seconds=0.5) as engine:
        engine.index([{"uuid": "x", "signature": "a" * 40}])
        with pytest.raises(SearchParameterError, match="too expensive"):
            engine.search(query(where("signature", cond("signature", "@", "(a+)+b", pattern="(a+)+b"))))
        assert uuids(engine, where("signature", cond("signature", "@", "a+", pattern="a+"))) == ["x"]


def _regex_in_a_daemon(path, out):
    try:
        with EmbeddedSearch(path) as engine:
            out.put(uuids(engine, where("signature", cond("signature", "@", "OOM.*", pattern="OOM.*"))))
    except BaseException as exc:  # noqa: BLE001 - reported to the test
        out.put(repr(exc))


def test_a_regex_search_works_in_a_daemonic_worker(tmp_path):
    import multiprocessing

    path = tmp_path / "search.sqlite3"
    with EmbeddedSearch(path) as engine:
        engine.index(DOCS)
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    worker = context.Process(target=_regex_in_a_daemon, args=(path, out), daemon=True)
    worker.start()
    try:
        assert out.get(timeout=60) == ["a"]
    finally:
        worker.join(5)


def test_an_expensive_sql_query_is_interrupted(tmp_path):
    with EmbeddedSearch(tmp_path / "s.sqlite3", budget_seconds=0) as engine:
        engine.index([{"uuid": f"{i:05d}", "uptime": i} for i in range(5000)])
        with pytest.raises(SearchParameterError, match="too expensive"):
            engine.search(query(facets=(Terms("uuid", sub=(Terms("uptime"),)), Cardinality("uuid")),
                                sort=(("uptime", True),)))


def test_a_bad_regex_names_its_field(engine):
    with pytest.raises(SearchParameterError) as caught:
        engine.search(query(where("signature", cond("signature", "@", "(", pattern="("))))
    assert caught.value.parameter == "signature"
