"""The OpenSearch engine on a real node (kind ``opensearch-real``, ``fixtures_opensearch.py``).

The contract's semantics on random queries are the differential test's (``test_search_differential.py``
runs OpenSearch beside the embedded engine and the oracle); here: what only OpenSearch has (its
analyzer, its URL, failover and outages, the index it makes), a store searching through it
(feed and ``reindex_search`` agree), and a node killed mid-ingest.
"""

import random
import socket
import threading
import time
from datetime import timedelta

import pytest
from fixtures_opensearch import engine_url, fresh_index
from store_helpers import BASE_TIME, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.errors import ConfigError, InvalidArgument, SearchUnavailable
from socorro_store.search import opensearch_query
from socorro_store.search.contract import Cardinality, Condition, FieldFilter, Query, Terms
from socorro_store.search.engines import open_search_engine
from socorro_store.search.fields import DEFAULT_COLUMNS, analyze

#: strings whose tokens a careless lowercasing or tokenizing would change
TRICKY_TEXTS = [
    "OOM | small", "js::RunScript", "İSTANBUL | İstanbul", "ΣΑΣ ΟΔΟΣ", "ǅemal ß ẞ", "ＯＯＭ | ٣٤",
    "e\u0301t\u00e9", "💥 | 𝔘nicode", "a_b-c.d", "日本語 | クラッシュ", "MOZ_CRASH(OOM)", "",
]


@pytest.fixture
def engine(opensearch_url):
    opened = open_search_engine(opensearch_url)
    try:
        yield opened
    finally:
        opened.close()


def test_the_index_tokenizes_as_fields_analyze(engine):
    """The mapping's analyzer and :func:`fields.analyze` give the same tokens (a no-operator
    text filter means the same on every engine)."""
    engine.index([{"uuid": "probe"}])  # makes the index
    for text in TRICKY_TEXTS:
        reply = engine._client.indices.analyze(index=engine.index_name,
                                               body={"analyzer": "socorro_tokens", "text": text})
        assert [t["token"] for t in reply["tokens"]] == analyze(text), text


def _closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _query(*filters, columns=DEFAULT_COLUMNS, facets=(), **options):
    return Query(filters=tuple(filters), start=BASE_TIME - timedelta(days=3650), end=BASE_TIME + timedelta(days=3650),
                 columns=tuple(columns), facets=tuple(facets), **options)


# -- the URL ----------------------------------------------------------------------------------

def test_the_url_keeps_credentials_out_of_every_message():
    engine = open_search_engine(f"opensearch://ops:s3cr%40t@127.0.0.1:{_closed_port()}?index=crashes")
    try:
        assert "s3cr" not in engine.url and "ops" not in engine.url and engine.url.endswith("?index=crashes")
        with pytest.raises(SearchUnavailable) as caught:
            engine.count()
        assert "s3cr" not in str(caught.value) and "unreachable" in str(caught.value)
    finally:
        engine.close()


@pytest.mark.parametrize("url, words", [
    ("opensearch://", "HOST:PORT"),
    ("opensearch://host", "HOST:PORT"),
    ("opensearch://host:99999", "HOST:PORT"),
    ("opensearch://host:9200?shards=3", "unknown option"),
    ("opensearch://host:9200?index=Crashes", "not an index name"),
    ("opensearch://host:9200?refresh=false", "refresh"),
    ("opensearch://user@host:9200", "USER:PASSWORD"),
])
def test_a_bad_url_is_a_config_error_naming_the_problem(url, words):
    with pytest.raises(ConfigError, match=words):
        open_search_engine(url)


# -- failover and outages ---------------------------------------------------------------------

def test_a_dead_host_in_the_url_is_passed_over(opensearch_real):
    live = opensearch_real[0].removeprefix("opensearch://")
    index = fresh_index()
    engine = open_search_engine(f"opensearch://127.0.0.1:{_closed_port()},{live}?index={index}")
    try:
        for _ in range(3):  # each call may start on the dead host
            engine.index([{"uuid": "a", "signature": "OOM | small", "date": "2016-09-18T12:00:00+00:00"}])
            assert engine.search(_query())["total"] == 1
        assert list(engine.crash_ids()) == ["a"]
    finally:
        engine.drop_index()
        engine.close()


def test_no_host_answering_is_search_unavailable_for_every_call():
    engine = open_search_engine(f"opensearch://127.0.0.1:{_closed_port()},127.0.0.1:{_closed_port()}?index=x")
    try:
        for call in (lambda: engine.index([{"uuid": "a"}]), lambda: engine.delete(["a"]), engine.count,
                     lambda: engine.search(_query()), lambda: list(engine.crash_ids()), engine.stats):
            with pytest.raises(SearchUnavailable, match="unreachable"):
                call()
    finally:
        engine.close()


# -- the index --------------------------------------------------------------------------------

def test_an_index_of_another_mapping_version_is_refused_not_written(opensearch_real, engine):
    body = opensearch_query.index_body()
    body["mappings"]["_meta"]["socorro_search_mapping"] = opensearch_query.MAPPING_VERSION + 1
    engine._client.indices.create(index=engine.index_name, body=body)
    with pytest.raises(SearchUnavailable, match="mapping version"):
        engine.index([{"uuid": "a"}])
    assert engine._client.count(index=engine.index_name)["count"] == 0


def test_a_bad_document_is_refused_and_nothing_is_written(engine):
    with pytest.raises(InvalidArgument, match="uptime"):
        engine.index([{"uuid": "a"}, {"uuid": "b", "uptime": "soon"}])
    with pytest.raises(InvalidArgument, match="no field"):
        engine.index([{"uuid": "c", "nope": 1}])
    with pytest.raises(InvalidArgument, match="signature"):
        engine.index([{"uuid": "d", "signature": "lone \ud800 surrogate"}])
    assert engine.count() == 0


def test_values_opensearch_cannot_index_are_kept_and_returned(engine):
    """A date outside date_nanos' span and a string over Lucene's term limit do not stop the
    feed: the document is indexed, its values come back in hits, and it is searched as missing
    them (docs/search.md says so)."""
    long_comment = "x" * (opensearch_query.MAX_KEYWORD_CHARS + 1)
    engine.index([{"uuid": "old", "date": "1969-07-20T20:17:40+00:00", "user_comments": long_comment},
                  {"uuid": "new", "date": "2016-09-18T12:00:00.000123+00:00", "user_comments": "short"}])
    hits = engine.search(_query(columns=("uuid", "date", "user_comments")))["hits"]
    assert hits == [{"uuid": "new", "date": "2016-09-18T12:00:00.000123+00:00", "user_comments": "short"},
                    {"uuid": "old", "date": "1969-07-20T20:17:40+00:00", "user_comments": long_comment}]
    null = Condition("user_comments", "__null__")
    assert [h["uuid"] for h in engine.search(_query(FieldFilter("user_comments", (null,))))["hits"]] == ["old"]


def test_microseconds_decide_ranges_as_on_every_engine(engine):
    engine.index([{"uuid": "a", "date": "2016-09-18T12:00:00.000500+00:00"},
                  {"uuid": "b", "date": "2016-09-18T12:00:00.000499+00:00"}])
    edge = BASE_TIME.replace(microsecond=500)
    after = _query(FieldFilter("date", (Condition("date", ">=", edge),)))
    assert [h["uuid"] for h in engine.search(after)["hits"]] == ["a"]


def test_stats_count_the_documents_and_their_bytes(engine):
    engine.index([{"uuid": f"c{i}", "signature": f"sig {i}"} for i in range(50)])
    engine.delete(["c0", "c1", "never-held"])
    stats = engine.stats()
    assert stats["documents"] == 48 and stats["bytes"] > 0
    assert sorted(engine.crash_ids()) == sorted(f"c{i}" for i in range(2, 50))


# -- what only an estimate can answer ---------------------------------------------------------

def test_a_cardinality_above_the_exact_limit_says_so_in_errors():
    errors = []
    agg = Cardinality("signature")
    above = opensearch_query.facets_of([agg], {"a0": {"value": 40_001}}, errors)
    assert above == {"cardinality_signature": {"value": 40_001}} and "estimate" in errors[0]
    errors = []
    assert opensearch_query.facets_of([agg], {"a0": {"value": 40_000}}, errors) == {"cardinality_signature": {"value": 40_000}}
    assert errors == []


def test_terms_counted_over_several_shards_say_they_may_be_off():
    errors = []
    answer = {"a0": {"doc_count_error_upper_bound": 3, "buckets": [{"key": "OOM", "doc_count": 9}]}}
    assert opensearch_query.facets_of([Terms("signature")], answer, errors) == {"signature": [{"term": "OOM", "count": 9}]}
    assert "off by up to 3" in errors[0]


# -- a store searching through OpenSearch -----------------------------------------------------

WEEK = {"date": [">=2016-09-12", "<2016-09-19"]}
STORE_QUERIES = [
    {},
    {"signature": "OOM", "_facets": ["product", "platform"], "_results_number": "7"},
    {"signature": "~::", "product": "!Fenix", "_sort": ["-uptime", "signature"], "_columns": ["uuid", "uptime"]},
    {"platform": ["Linux", "Windows NT"], "uptime": [">=60", "<86400"], "_aggs.product": "version",
     "_facets": ["platform", "_cardinality.signature"], "_histogram.date": "product", "_histogram_interval.date": "1d"},
    {"signature": "@js::[A-Z].*", "_histogram.uptime": "", "_histogram_interval.uptime": "3600"},
    {"email": "__null__", "_results_offset": "20", "_results_number": "5"},
]


def _save_varied(store, n, seed):
    rng = random.Random(seed)
    ids = [crash_id(rng=rng) for _ in range(n)]
    for cid in ids:
        store.save_raw_crash(raw_crash(cid), {}, cid)
    for cid in ids:
        when = BASE_TIME - timedelta(seconds=rng.randrange(6 * 86400))
        extra = {"product": rng.choice(["Firefox", "Fenix"]), "version": rng.choice(["120.0", "121.0b3"]),
                 "os_name": rng.choice(["Linux", "Windows NT", "Mac OS X"]), "uptime": rng.choice([5, 60, 3600, 90000])}
        if rng.random() < 0.5:
            extra["email"] = "someone@example.com"
        store.save_processed(processed(cid, signature=rng.choice(["OOM | small", "js::RunScript", "js::GC::Mark",
                                                                  "abort | OOM"]),
                                       date_processed=when.isoformat(), **extra))
    return ids


def _answers(store):
    return [store.super_search({**WEEK, **params}, unredacted=True, now=BASE_TIME) for params in STORE_QUERIES]


def test_reindex_into_an_empty_index_answers_as_the_live_fed_one(opensearch_real, tmp_path):
    base = opensearch_real[0]
    fed, rebuilt = fresh_index("fed"), fresh_index("rebuilt")
    url = f"embedded://{tmp_path / 'store'}"
    try:
        with open_store(url, search_url=engine_url(base, fed), search_feed=False) as store:
            store.create_tables()
            ids = _save_varied(store, 60, seed=41)
            store.delete_crashes(ids[:4])
            assert store.settle()
            live = _answers(store)
            assert live[0]["total"] == 56 and store.search_status()["documents"] == 56
            assert all(answer["total"] and answer["hits"] for answer in live), [a["total"] for a in live]
        with open_store(url, search_url=engine_url(base, rebuilt), search_feed=False) as store:
            assert store.reindex_search()["indexed"] == 56
            assert _answers(store) == live
    finally:
        for index in (fed, rebuilt):
            engine = open_search_engine(engine_url(base, index))
            engine.drop_index()
            engine.close()


# -- a node killed mid-ingest -----------------------------------------------------------------

CLUSTER_ENV = "SOCORRO_STORE_TEST_OPENSEARCH_CLUSTER"


@pytest.fixture(params=[1, 3], ids=["one-node", "three-nodes"])
def own_opensearch(request, opensearch_real, tmp_path):
    """A node (or a 3-node cluster) of this test's own, to be killed: not the session's."""
    import os

    from servers.local_opensearch import LocalOpenSearch

    nodes = request.param
    if nodes > 1 and os.environ.get(CLUSTER_ENV, "") in ("", "0"):
        pytest.skip(f"the 3-node OpenSearch fault test starts 3 JVMs: opt in with {CLUSTER_ENV}=1")
    cluster = LocalOpenSearch(tmp_path / "opensearch", nodes=nodes, heap="384m" if nodes > 1 else "512m", log=print)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def test_a_node_killed_mid_ingest_loses_no_save_and_the_index_converges(own_opensearch, tmp_path):
    """SIGKILL an OpenSearch node while a store saves and feeds; the saves go on, the node comes
    back on its own data, the feed catches up, and the index holds exactly the crash rows."""
    from socorro_store.schema import keys as K

    cluster = own_opensearch
    victim = len(cluster.processes) - 1
    url = f"embedded://{tmp_path / 'store'}"
    saved, failures = [], []
    with open_store(url, search_url=engine_url(cluster.url, "crashes")) as store:
        store.create_tables()

        def write():
            rng = random.Random(43)
            for n in range(240):
                cid = crash_id(rng=rng)
                try:
                    store.save_raw_crash(raw_crash(cid), {}, cid)
                    store.save_processed(processed(cid, signature=f"sig{n % 7}", date_processed=BASE_TIME.isoformat()))
                except Exception as exc:  # noqa: BLE001 - any failure of a save fails the test
                    failures.append(repr(exc))
                saved.append(cid)
                time.sleep(0.01)

        writer = threading.Thread(target=write)
        writer.start()
        while len(saved) < 60:
            time.sleep(0.02)
        cluster.kill_node(victim)
        killed_at = len(saved)
        time.sleep(2.0)  # saves go on while the node is down
        if len(cluster.processes) == 1:  # the index is down with it: records wait
            assert store.search_status()["pending"] > 0
        cluster.start_node(victim)
        cluster.wait_ready(120)
        writer.join(120)
        assert not failures and len(saved) == 240 and killed_at < 200
        assert store.settle(timeout=90)
        rows = {K.crash_id_from_row_key(row): cells[K.COL_SIGNATURE].decode()
                for row, cells in store.backend.scan(K.CRASH_REPORTS, columns=[K.COL_SIGNATURE])
                if K.COL_SIGNATURE in cells}
        assert set(rows) == set(saved)
        engine = store.search.feed().engine
        assert sorted(engine.crash_ids()) == sorted(rows)
        found = store.super_search({**WEEK, "_results_number": "1000", "_columns": ["uuid", "signature"]},
                                   now=BASE_TIME + timedelta(hours=1))
        assert {hit["uuid"]: hit["signature"] for hit in found["hits"]} == rows and found["total"] == 240


def test_an_integer_histogram_past_2_to_the_53_says_it_may_be_rounded(engine):
    from socorro_store.search.contract import Histogram

    engine.index([{"uuid": "small", "uptime": -5}, {"uuid": "big", "install_age": 2**53 + 1}])
    answer = engine.search(_query(facets=(Histogram("uptime", 10**18), Histogram("install_age", 10))))
    assert answer["facets"]["histogram_uptime"] == [{"term": -10**18, "count": 1}]  # exact: no note
    assert [e.split(":")[0] for e in answer["errors"]] == ["histogram_install_age"]


def test_the_url_may_name_an_alias(engine):
    """Reindexing into a new index and moving an alias is one way to change the mapping."""
    concrete = engine.index_name + "-v1"
    engine._client.indices.create(index=concrete, body=opensearch_query.index_body())
    engine._client.indices.put_alias(index=concrete, name=engine.index_name)
    try:
        engine.index([{"uuid": "a", "signature": "OOM | small"}])
        assert engine.count() == 1 and engine._client.count(index=concrete)["count"] == 1
        assert engine.stats()["documents"] == 1 and engine.stats()["bytes"] > 0
        assert engine.search(_query(columns=("uuid",)))["hits"] == [{"uuid": "a"}]
    finally:
        engine._client.indices.delete(index=concrete)


def test_the_local_tool_prints_its_url_and_leaves_nothing_running(opensearch_real, tmp_path):
    """``tools/servers/local_opensearch.py DIR``: the URL on a line of its own, a node answering
    on loopback, and SIGTERM stops it with no JVM left."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import urllib.request
    from pathlib import Path

    tool = Path(__file__).resolve().parent.parent / "tools" / "servers" / "local_opensearch.py"
    process = subprocess.Popen([sys.executable, str(tool), str(tmp_path / "os")], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline().strip()
        assert line.startswith("opensearch://127.0.0.1:"), process.stderr.read()
        port = int(line.rsplit(":", 1)[1])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_nodes/_local/process,http", timeout=10) as reply:
            node = next(iter(json.load(reply)["nodes"].values()))
        assert node["http"]["bound_address"] and all(
            address.startswith(("127.0.0.1:", "[::1]:")) for address in node["http"]["bound_address"])
        java_pid = node["process"]["id"]
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)
    assert process.returncode == 128 + signal.SIGTERM
    with pytest.raises(ProcessLookupError):
        os.kill(java_pid, 0)


@pytest.mark.parametrize("values, expected", [
    ([f"!=v{i}" for i in range(995)], ["a", "b"]),       # !=x OR !=y holds for every crash
    ([f"!~v{i}" for i in range(995)], ["a", "b"]),
    ([f"=v{i}" for i in range(995)], ["a"]),
    ([f"v{i} x{i}" for i in range(995)], ["a"]),          # 1,990 tokens
    (["!=v5"], ["b"]),
    (["!=v5", "!=v5"], ["b"]),
    (["=v5", "!~OOM"], ["a"]),
    (["::"], []),                                          # no token: nothing
], ids=["neq", "not-contains", "eq", "tokens", "one-neq", "same-neq-twice", "eq-or-not-contains", "no-token"])
def test_a_thousand_values_stay_within_lucenes_clause_limit(engine, values, expected):
    """The parser lets a query hold 1,000 values; Lucene refuses more than 1,024 clauses, nested
    ones counted, so the query must fold them (one terms query, one NOT of an AND)."""
    from socorro_store.search.query import parse_search

    engine.index([{"uuid": "a", "signature": "v5", "date": "2016-09-18T11:00:00+00:00"},
                  {"uuid": "b", "signature": "OOM | small", "date": "2016-09-18T11:00:00+00:00"}])
    answer = engine.search(parse_search({"signature": values}, now=BASE_TIME))
    assert sorted(hit["uuid"] for hit in answer["hits"]) == expected


def test_a_regular_expression_too_complex_for_opensearch_is_a_400_naming_its_field(engine):
    from socorro_store.errors import SearchParameterError
    from socorro_store.search.query import parse_search

    engine.index([{"uuid": "a", "signature": "v5", "date": "2016-09-18T11:00:00+00:00"}])
    with pytest.raises(SearchParameterError) as caught:
        engine.search(parse_search({"signature": "@.*a.{20}"}, now=BASE_TIME))
    assert caught.value.parameter == "signature" and "too complex" in caught.value.problem


def test_search_status_never_shows_the_password(tmp_path):
    url = f"opensearch://ops:s3cret@127.0.0.1:{_closed_port()}?index=crashes"
    with open_store(f"embedded://{tmp_path / 'store'}", search_url=url, search_feed=False) as store:
        store.create_tables()
        status = store.search_status()
    assert status["url"] == f"opensearch://{url.rpartition('@')[2]}"
    assert "s3cret" not in repr(status) and "unreachable" in status["last_error"]


def test_an_index_another_process_just_made_is_waited_for(engine):
    """A process finding the index made by another one a moment ago waits for its shard to
    start, rather than fail its first search with "all shards failed"."""
    body = opensearch_query.index_body()
    body["settings"]["index"]["routing.allocation.require._name"] = "no-such-node"  # the shard waits
    engine._client.indices.create(index=engine.index_name, body=body, params={"wait_for_active_shards": "0"})
    release = threading.Timer(1.5, lambda: engine._client.indices.put_settings(
        index=engine.index_name, body={"index.routing.allocation.require._name": None}))
    release.start()
    try:
        assert engine.search(_query())["total"] == 0
    finally:
        release.join()
    stuck = open_search_engine(engine_url(f"opensearch://{engine.hosts[0][0]}:{engine.hosts[0][1]}", fresh_index()))
    try:
        stuck.ready_seconds = 1
        stuck._client.indices.create(index=stuck.index_name, body=body, params={"wait_for_active_shards": "0"})
        with pytest.raises(SearchUnavailable, match="not ready"):
            stuck.count()
    finally:
        stuck.drop_index()
        stuck.close()
