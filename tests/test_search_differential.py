"""Every search engine against the brute-force oracle (``tests/search_oracle.py``), on random crashes
and random queries: totals, facets and ordered hits must be equal.

The crashes (a few hundred over 10 days) draw each field from a few values, so that filters
match something: signatures with spaces, colons, mixed case, unicode and regex characters; some
fields missing; booleans in Socorro's spellings; dates in several ISO forms.  They are indexed
in batches, then some are reprocessed (indexed again with other values) and some deleted; the
oracle's list follows.  The queries are built from the contract's dataclasses directly (every
operator, negated or not, several conditions per field, range pairs, facets with
sub-aggregations, cardinality, histograms, sorts, pages past the end) and, through
``parse_search``, from random Super Search parameters.

A new engine joins by adding its factory (``tmp_path -> SearchEngine``) to ``ENGINES``.
"""

import random
from datetime import datetime, timedelta, timezone

import pytest
import search_oracle
from search_oracle import answer

from socorro_store.errors import SearchParameterError
from socorro_store.search.contract import (
    Cardinality,
    Condition,
    FieldFilter,
    Histogram,
    Query,
    Terms,
)
from socorro_store.search.fields import DEFAULT_COLUMNS, FIELDS, analyze, document_of

UTC = timezone.utc
DAY0 = datetime(2026, 11, 14, tzinfo=UTC)
DAYS = 10
#: the ``now`` of parsed queries: the default 7 days cover the corpus's last 7 days
NOW = DAY0 + timedelta(days=DAYS, hours=3)
WIDEST = (datetime(1970, 1, 1, tzinfo=UTC), datetime(3000, 1, 1, tzinfo=UTC))


def embedded_engine(path):
    embedded = pytest.importorskip("socorro_store.search.embedded", reason="the embedded engine is not written yet")
    return embedded.EmbeddedSearch(path / "search.sqlite3")


def opensearch_engine(_path):
    """An index of its own on the session's OpenSearch node (``fixtures_opensearch.py``)."""
    from fixtures_opensearch import engine_url, fresh_index, shared_opensearch

    from socorro_store.search.engines import open_search_engine

    return open_search_engine(engine_url(shared_opensearch()[0], fresh_index("differential")))


#: ``tmp_path -> SearchEngine`` factories: every engine runs every test of this module
ENGINES = [pytest.param(embedded_engine, id="embedded"), pytest.param(opensearch_engine, id="opensearch-real")]


# -- the crashes ------------------------------------------------------------------------------

SIGNATURES = [
    "OOM | small", "oom | Small", "OOM | large | mozalloc_abort", "abort | OOM", "js::GC::Mark",
    "js::RunScript", "mozilla::ipc::MessageChannel::Send", "Shutdown hang: nsThread::Spin",
    "Ünïcødé::Fehler | Äpfel", "日本語 | クラッシュ", "a.b*c?d [x] (y)", "EMPTY: no crashing thread identified",
    "", "@0x0", "core::panicking::panic_fmt", "100% \\ CPU [spin] 'quoted'", "İstanbul | ＯＯＭ | ٣٤ | e\u0301t\u00e9",
    "💥 | 𝔘nicode", "!important",
]

#: processed-crash key -> (values, probability the crash has none)
SOURCES = {
    "signature": (SIGNATURES, 0.05),
    "product": (["Firefox", "Fenix", "Thunderbird", "firefox"], 0.02),
    "version": (["120.0", "120.0.1", "121.0b3", "122.0a1", "115.5.0esr"], 0.05),
    "release_channel": (["release", "beta", "nightly", "esr"], 0.15),
    "os_name": (["Windows NT", "Linux", "Mac OS X", "Android"], 0.05),
    "os_version": (["10.0.19045", "6.1.7601 Service Pack 1", "14.1", "13"], 0.2),
    "process_type": (["parent", "content", "gpu", "rdd"], 0.1),
    "build": ([20261101093000, 20261115120000, "20261120093000", 20261124000000], 0.1),
    "cpu_arch": (["x86", "amd64", "arm64"], 0.1),
    "reason": (["EXCEPTION_ACCESS_VIOLATION_READ", "SIGSEGV /SEGV_MAPERR", "EXC_BAD_ACCESS / KERN_INVALID_ADDRESS"], 0.1),
    "address": (["0x0", "0x8", "0xffffffffe5", "0x7ff6a1b2c3d4"], 0.1),
    "moz_crash_reason": (["MOZ_CRASH(Shutdown too long)", "MOZ_RELEASE_ASSERT(aIndex < mLength)",
                          "MOZ_CRASH(OOM)"], 0.6),
    "uptime": ([0, 5, 59, 60, 3599, 3600, 86400, 123456], 0.1),
    "install_age": ([0, 1, 7, 86399, 604800, 2592000], 0.15),
    "startup_crash": ([True, False, "1", "0", 1, 0], 0.2),
    "plugin_filename": (["NPSWF32.dll", "libflashplayer.so"], 0.85),
    "hang_type": ([-1, 0, 0, 0, 1], 0.1),
    "app_notes": (["AdapterVendorID: 0x8086, AdapterDeviceID: 0x1234 D3D11 Layers+",
                   "EGL? EGL+ GL Context? GL Context+ WebGL?", "line one\nline two", "Ünïcødé notes",
                   "nul\x00byte"], 0.3),
    "email": (["someone@example.com", "Someone@Example.com", "x@y.z"], 0.7),
    "url": (["https://example.com/?q=1", "about:blank", "https://exämple.org/päth"], 0.6),
    "user_comments": (["It crashed when I opened a tab", "crash!!", "日本語のコメント", "OOM again?"], 0.7),
}


def crash_id(rng, when):
    """Socorro's form: a random uuid ending in a depth digit and the day ``YYMMDD``."""
    return (f"{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-{rng.getrandbits(16):04x}-"
            f"{rng.getrandbits(16):04x}-{rng.getrandbits(24):06x}2{when:%y%m%d}")


def random_instant(rng):
    """An instant of the corpus's days: on an hour or a day boundary now and then, with
    microseconds now and then (histogram and range edges)."""
    when = DAY0 + timedelta(seconds=rng.randrange(DAYS * 86400))
    shape = rng.random()
    if shape < 0.1:
        return when.replace(minute=0, second=0)
    if shape < 0.15:
        return when.replace(hour=0, minute=0, second=0)
    if shape < 0.4:
        return when.replace(microsecond=rng.randrange(1, 1_000_000))
    return when


def date_text(rng, when):
    """``when`` as a processor may write it: UTC, another offset, naive (UTC), or with ``Z``."""
    return rng.choice([
        when.isoformat(),
        when.astimezone(timezone(timedelta(hours=2))).isoformat(),
        when.replace(tzinfo=None).isoformat(),
        when.isoformat().replace("+00:00", "Z"),
    ])


def processed_crash(rng, uuid, when):
    crash = {"uuid": uuid}
    if rng.random() >= 0.05:
        crash["date_processed"] = date_text(rng, when)
    for source, (values, missing) in SOURCES.items():
        if rng.random() >= missing:
            crash[source] = rng.choice(values)
    return crash


def history(seed, n=300):
    """``[("index", [doc, ...]) | ("delete", [crash id, ...]), ...]``: batches of new crashes,
    then reprocessings (the same ids, other values), deletions (with an id never indexed), and
    deleted crashes indexed again."""
    rng = random.Random(seed)
    ids, whens = [], {}
    while len(ids) < n:
        when = random_instant(rng)
        uuid = crash_id(rng, when)
        if uuid not in whens:
            ids.append(uuid)
            whens[uuid] = when
    docs = {uuid: document_of(processed_crash(rng, uuid, whens[uuid])) for uuid in ids}
    steps = [("index", [docs[uuid] for uuid in ids[start:start + 100]]) for start in range(0, n, 100)]
    again = rng.sample(ids, n // 10)
    steps.append(("index", [document_of(processed_crash(rng, uuid, whens[uuid])) for uuid in again]))
    gone = rng.sample(ids, n // 15)
    steps.append(("delete", gone + ["00000000-0000-0000-0000-000000261114"]))
    back = gone[:3]
    steps.append(("index", [document_of(processed_crash(rng, uuid, whens[uuid])) for uuid in back]))
    return steps


def replay(steps, engine):
    """Applies ``steps`` to ``engine`` and to the oracle's documents; returns the documents."""
    held = {}
    for kind, items in steps:
        if kind == "index":
            engine.index(items)
            held.update((doc["uuid"], doc) for doc in items)
        else:
            engine.delete(items)
            for uuid in items:
                held.pop(uuid, None)
    return list(held.values())


@pytest.fixture(scope="module", params=ENGINES)
def corpus(request, tmp_path_factory):
    """``(engine, documents)``: one engine holding the documents the oracle holds."""
    engine = request.param(tmp_path_factory.mktemp("search"))
    try:
        yield engine, replay(history(seed=40), engine)
    finally:
        engine.close()


# -- random queries from the contract's dataclasses -------------------------------------------

#: patterns that mean the same in Lucene's regexp syntax and in Python's ``re``
REGEXES = ["OOM.*", ".*OOM.*", "js::[A-Za-z]+", ".*::.*", "[a-z]+", "Fire.*", "12[0-9]\\.0.*", "0x[0-9a-f]+",
           ".*", "Linux|Windows NT", "(Fenix|Firefox)", "[^ ]*", ".+ \\| .+", ".*é.*", "line.*two", "x86", "",
           "[0-9]+(\\.[0-9]+)*", "OOM | small"]


class QueryMaker:
    """Random :class:`Query` objects whose values come mostly from the documents' own values."""

    def __init__(self, rng, docs):
        self.rng = rng
        self.values = {name: sorted({doc[name] for doc in docs if name in doc}, key=repr) for name in FIELDS}

    def existing(self, name):
        return self.rng.choice(self.values[name]) if self.values[name] else None

    def string_value(self, name, operator):
        rng, value = self.rng, self.existing(name) or "nothing"
        if operator == "@":
            return rng.choice(REGEXES)
        if rng.random() < 0.15:
            return rng.choice(["*", "?", ".", "|", "::", " ", "ü", "%", "_", "\\", "[", "'", "💥", "NoSuchValue",
                               value.swapcase()])
        if operator in ("~", "^", "$") and value:
            start = rng.randrange(len(value)) if operator != "^" else 0
            end = rng.randrange(start + 1, len(value) + 1) if operator != "$" else len(value)
            part = value[start:end]
            return part.swapcase() if rng.random() < 0.25 else part  # case-sensitive: mostly no match
        if operator == "match" and FIELDS[name].type == "text":
            tokens = analyze(value) + analyze(self.existing(name) or "")
            words = rng.sample(tokens, min(len(tokens), rng.randint(1, 2))) + rng.sample(["nope", "::", "| |"], 1)
            return " ".join(rng.sample(words, len(words))).upper() if rng.random() < 0.3 else " ".join(words)
        return value

    def instant(self):
        rng = self.rng
        shape = rng.random()
        if shape < 0.3 and self.values["date"]:
            return search_oracle.parse_date(self.existing("date"))
        if shape < 0.5:
            return DAY0 + timedelta(days=rng.randrange(-1, DAYS + 2))
        return DAY0 + timedelta(seconds=rng.randrange(-86400, (DAYS + 1) * 86400), microseconds=rng.randrange(2) * 5)

    def integer(self, name):
        """A value near an existing one, within 64 bits (the parser's limit)."""
        return min(max((self.existing(name) or 0) + self.rng.choice([0, 0, 0, -1, 1]), -2**63), 2**63 - 1)

    def condition(self, name):
        rng, kind = self.rng, FIELDS[name].type
        negated = rng.random() < 0.3
        if rng.random() < 0.08:
            return Condition(name, "__null__", None, negated)
        if kind == "boolean":
            return Condition(name, "__true__", None, negated)
        if kind == "date":
            return Condition(name, rng.choice([">", ">=", "<", "<="]), self.instant(), negated)
        if kind == "integer":
            return Condition(name, rng.choice(["match", "=", ">", ">=", "<", "<="]), self.integer(name), negated)
        operator = rng.choice(["match", "=", "~", "^", "$", "@"])
        value = self.string_value(name, operator)
        return Condition(name, operator, value, negated, pattern=value if operator == "@" else None)

    def field_filter(self, name):
        rng = self.rng
        if name == "date" and rng.random() < 0.6:
            low, high = sorted([self.instant(), self.instant()])
            conditions = [Condition("date", rng.choice([">", ">="]), low), Condition("date", rng.choice(["<", "<="]), high)]
        else:
            conditions = [self.condition(name) for _ in range(rng.choice([1, 1, 2, 3]))]
        return FieldFilter(name, tuple(conditions))

    def date_bounds(self, filters):
        """``start``/``end`` as a parser gives them: the widest range the positive date ranges allow."""
        start, end = WIDEST
        for field_filter in filters:
            for c in field_filter.conditions:
                if c.field != "date" or c.negated or not c.is_range:
                    continue
                if c.operator in (">", ">="):
                    start = max(start, c.value)
                else:
                    end = min(end, c.value + timedelta(microseconds=1) if c.operator == "<=" else c.value)
        return start, max(start, end)

    def terms_field(self):
        return self.rng.choice([name for name, f in FIELDS.items() if f.type != "date"])

    def sub_aggregations(self):
        rng = self.rng
        return tuple(Terms(self.terms_field()) if rng.random() < 0.7 else Cardinality(rng.choice(list(FIELDS)))
                     for _ in range(rng.choice([0, 0, 1, 1, 2])))

    def aggregation(self):
        rng, shape = self.rng, self.rng.random()
        if shape < 0.45:
            return Terms(self.terms_field(), self.sub_aggregations())
        if shape < 0.6:
            return Cardinality(rng.choice(list(FIELDS)))
        if shape < 0.85:
            return Histogram("date", rng.choice([1800, 3600, 5400, 6 * 3600, 86400, 7 * 86400]), self.sub_aggregations())
        name = rng.choice([name for name, f in FIELDS.items() if f.type == "integer"])
        return Histogram(name, rng.choice([1, 2, 7, 100, 3600, 10**6, 10**18]), self.sub_aggregations())

    def query(self):
        rng = self.rng
        names = rng.sample(list(FIELDS), rng.choice([0, 1, 2, 2, 3]))
        if "date" not in names and rng.random() < 0.5:
            names.append("date")
        filters = tuple(self.field_filter(name) for name in names)
        start, end = self.date_bounds(filters)
        facets = [self.aggregation() for _ in range(rng.choice([0, 1, 2, 3]))]
        if facets and rng.random() < 0.2:
            facets.append(Terms(facets[0].field) if isinstance(facets[0], Terms) else facets[0])
        number = rng.choice([0, 1, 3, 10, 50, 100, 1000])
        offset = min(rng.choice([0, 0, 0, 2, 10, 100, 290, 9000]), 10_000 - number)
        columns = DEFAULT_COLUMNS if rng.random() < 0.3 else tuple(rng.sample(list(FIELDS), rng.randint(1, 6)))
        sort = tuple((name, rng.random() < 0.5) for name in rng.sample(list(FIELDS), rng.choice([0, 1, 1, 2])))
        return Query(filters=filters, start=start, end=end, columns=columns, sort=sort, results_number=number,
                     results_offset=offset, facets=tuple(facets), facets_size=rng.choice([1, 2, 3, 5, 50, 10_000]),
                     unredacted=True)


#: the parts of a response that must be equal; ``errors`` may hold an engine's own notes (an
#: estimate it had to make: the contract lets it say so), shown on a failure but not compared
COMPARED = ("total", "hits", "facets")


def differences(expected, got):
    """The parts of two responses that differ, for a failure message."""
    parts = [f"  {part}:\n    oracle: {expected.get(part)!r}\n    engine: {got.get(part)!r}"
             for part in COMPARED if expected.get(part) != got.get(part)]
    if got.get("errors"):
        parts.append(f"  the engine's errors: {got['errors']!r}")
    return "\n".join(parts)


def check(engine, docs, queries):
    """Runs every query on the engine and the oracle; fails naming each query that differs."""
    failures = []
    for query in queries:
        expected, got = answer(docs, query), engine.search(query)
        assert set(got) == {"hits", "total", "facets", "errors"}, got.keys()
        if any(expected[part] != got[part] for part in COMPARED):
            failures.append(f"{query!r}\n{differences(expected, got)}")
    assert not failures, f"{len(failures)} of {len(queries)} queries differ; the first:\n" + "\n\n".join(failures[:3])


# -- the oracle itself, on hand-computed cases ------------------------------------------------

def doc(uuid, **values):
    return {"uuid": uuid, **values}


SMALL = [
    doc("a", date="2026-11-20T10:30:00+00:00", signature="OOM | small", product="Firefox", uptime=5, startup_crash=True),
    doc("b", date="2026-11-20T11:00:00+00:00", signature="js::GC::Mark", product="Fenix", uptime=60),
    doc("c", date="2026-11-21T00:00:00.500000+00:00", signature="oom | Large", product="Firefox", startup_crash=False),
    doc("d", signature="a.b*c", product="Firefox", uptime=-1),
]


def small_query(*filters, **controls):
    controls.setdefault("columns", ("uuid",))
    return Query(filters=tuple(FieldFilter(c[0].field, tuple(c)) for c in filters), start=WIDEST[0], end=WIDEST[1],
                 **controls)


def uuids(query):
    return [hit["uuid"] for hit in answer(SMALL, query)["hits"]]


def test_oracle_matching_by_hand():
    sig = "signature"
    assert uuids(small_query([Condition(sig, "match", "OOM")])) == ["a", "c"]  # tokens, lowercased
    assert uuids(small_query([Condition(sig, "match", "::")])) == []  # no token, no match
    assert uuids(small_query([Condition(sig, "=", "OOM")])) == []
    assert uuids(small_query([Condition(sig, "~", "OOM")])) == ["a"]  # case-sensitive
    assert uuids(small_query([Condition(sig, "~", "*")])) == ["d"]  # literal
    assert uuids(small_query([Condition(sig, "^", "js"), Condition(sig, "$", "small")])) == ["a", "b"]  # OR-ed
    assert uuids(small_query([Condition(sig, "@", "o.*", pattern="o.*")])) == ["c"]  # anchored
    assert uuids(small_query([Condition("uptime", "=", 60, negated=True)])) == ["a", "c", "d"]  # missing: negation true
    assert uuids(small_query([Condition("uptime", ">", 0), Condition("uptime", "<", 60)])) == ["a"]  # AND-ed
    assert uuids(small_query([Condition("uptime", "__null__")])) == ["c"]
    assert uuids(small_query([Condition("startup_crash", "__true__", negated=True)])) == ["b", "c", "d"]
    day = datetime(2026, 11, 21, tzinfo=UTC)
    assert uuids(small_query([Condition("date", ">=", day)])) == ["c"]
    assert uuids(small_query([Condition("date", "<", day, negated=True)])) == ["c", "d"]
    assert uuids(small_query([Condition(sig, "~", "o")], [Condition("product", "match", "Firefox")])) == ["c"]


def test_oracle_sorting_and_paging_by_hand():
    assert uuids(small_query(sort=(("uptime", False),))) == ["d", "a", "b", "c"]
    assert uuids(small_query(sort=(("uptime", True),))) == ["b", "a", "d", "c"]  # missing last both ways
    assert uuids(small_query(sort=(("date", True),))) == ["c", "b", "a", "d"]
    assert uuids(small_query(sort=(("product", False), ("uuid", True)))) == ["b", "d", "c", "a"]
    assert uuids(small_query(sort=(("startup_crash", False),))) == ["c", "a", "b", "d"]
    assert uuids(small_query(results_offset=3, results_number=5)) == ["d"]
    assert uuids(small_query(results_offset=4)) == []
    response = answer(SMALL, small_query(results_number=0, columns=("uuid", "uptime", "email")))
    assert response["hits"] == [] and response["total"] == 4
    assert answer(SMALL, small_query(columns=("uptime", "email")))["hits"][2] == {"uptime": None, "email": None}


def test_oracle_facets_by_hand():
    query = small_query(facets=(
        Terms("signature"),  # replaced below, keeps its place
        Terms("product", (Cardinality("uptime"), Terms("startup_crash"))),
        Cardinality("date"),
        Histogram("date", 86400, (Terms("product"),)),
        Histogram("uptime", 60),
        Terms("signature", (Terms("product"),)),
        Terms("startup_crash"),
    ), facets_size=1)
    facets = answer(SMALL, query)["facets"]
    assert list(facets) == ["signature", "product", "cardinality_date", "histogram_date", "histogram_uptime",
                            "startup_crash"]
    assert facets["signature"] == [{"term": "OOM | small", "count": 1,
                                    "facets": {"product": [{"term": "Firefox", "count": 1}]}}]
    assert facets["product"] == [{"term": "Firefox", "count": 3, "facets": {
        "cardinality_uptime": {"value": 2}, "startup_crash": [{"term": False, "count": 1}]}}]
    assert facets["cardinality_date"] == {"value": 3}
    assert facets["histogram_date"] == [
        {"term": "2026-11-20T00:00:00Z", "count": 2, "facets": {"product": [{"term": "Fenix", "count": 1}]}},
        {"term": "2026-11-21T00:00:00Z", "count": 1, "facets": {"product": [{"term": "Firefox", "count": 1}]}},
    ]
    assert facets["histogram_uptime"] == [{"term": -60, "count": 1}, {"term": 0, "count": 1}, {"term": 60, "count": 1}]
    assert facets["startup_crash"] == [{"term": False, "count": 1}]


def test_history_is_reproducible_and_varied():
    docs = replay(history(seed=40), _Recorder())
    assert docs == replay(history(seed=40), _Recorder())
    assert 250 < len(docs) < 300
    for name in FIELDS:
        present = [d[name] for d in docs if name in d]
        assert present, name
        assert len(set(map(repr, present))) >= 2, name
        if name != "uuid":
            assert len(present) < len(docs), f"{name} is never missing"


class _Recorder:
    """An engine that keeps nothing (the history's own checks need only the oracle's list)."""

    def index(self, documents):
        list(documents)

    def delete(self, crash_ids):
        list(crash_ids)


# -- the engines against the oracle -----------------------------------------------------------

def test_engine_holds_what_the_oracle_holds(corpus):
    engine, docs = corpus
    assert engine.count() == len(docs)
    everything = Query(filters=(), start=WIDEST[0], end=WIDEST[1], columns=tuple(FIELDS), results_number=1000)
    assert engine.search(everything)["hits"] == answer(docs, everything)["hits"]


@pytest.mark.parametrize("seed", range(10))
def test_random_queries(corpus, seed):
    engine, docs = corpus
    maker = QueryMaker(random.Random(seed), docs)
    check(engine, docs, [maker.query() for _ in range(30)])


# -- random Super Search parameters, through the parser ---------------------------------------

def parse_search(params, **kwargs):
    query = pytest.importorskip("socorro_store.search.query", reason="the parser is not written yet")
    return query.parse_search(params, **kwargs)


#: Lucene regexps, some with no Python twin spelled the same (the parser translates them)
LUCENE_REGEXES = ["OOM.*", ".*OOM.*", "js::[A-Za-z]+", '"a.b*c?d".*', "[^ ]*", ".*\\|.*", "\\w+", ".*\\d.*",
                  "(Fenix|Firefox)", "*a", "O{2}M.*", ".*é.*", "line.\\w+", "()", "[]a]*", "0x[0-9a-f]{1,4}",
                  "[a-z]+::.*", ".*\\s.*", "\\S+"]
DATE_INTERVALS = ["30m", "1h", "6h", "1d", "2d", "1w", "hour", "day", "90m"]


class ParamsMaker(QueryMaker):
    """Random ``[(name, value), ...]`` Super Search parameters."""

    def filter_value(self, name):
        rng, kind = self.rng, FIELDS[name].type
        negation = "!" if rng.random() < 0.3 else ""
        if rng.random() < 0.08 or kind == "boolean":
            return negation + rng.choice(["__null__"] + ["__true__"] * 3 * (kind == "boolean"))
        if kind == "date":
            when = self.instant()
            text = rng.choice([when.isoformat(), when.strftime("%Y-%m-%d"), when.strftime("%Y-%m-%dT%H:%M:%S"),
                               when.replace(microsecond=0).isoformat().replace("+00:00", "Z")])
            return negation + rng.choice([">", ">=", "<", "<="]) + text
        if kind == "integer":
            return negation + rng.choice(["", "=", ">", ">=", "<", "<="]) + str(self.integer(name))
        operator = rng.choice(["", "=", "~", "^", "$", "@"])
        if operator == "@":
            return negation + "@" + rng.choice(LUCENE_REGEXES)
        value = self.string_value(name, operator or "match")
        if name == "version" and rng.random() < 0.2:
            value, operator = rng.choice(["121.0b", "120.0b", "12b"]), ""
        if not operator and value.startswith(("!", "__null__", "__true__", ">", "<", "=", "~", "^", "$", "@")):
            operator = "="  # read literally
        return negation + operator + value

    def aggregation_value(self, histograms=True):
        rng, shape = self.rng, self.rng.random()
        if shape < 0.6:
            return self.terms_field()
        if shape < 0.85 or not histograms:
            return "_cardinality." + rng.choice(list(FIELDS))
        return "_histogram." + rng.choice(["date", "uptime", "hang_type"])

    def params(self):
        rng, params = self.rng, []
        for name in rng.sample(list(FIELDS), rng.choice([0, 1, 2, 3])):
            params += [(name, self.filter_value(name)) for _ in range(rng.choice([1, 1, 2, 3]))]
        if rng.random() < 0.5:  # else the default 7 days
            params += [("date", self.filter_value("date")) for _ in range(rng.choice([1, 2, 2]))]
        if rng.random() < 0.7:
            params += [("_columns", name) for name in rng.sample(list(FIELDS), rng.randint(0, 5)) or [""]]
        params += [("_sort", ("-" if rng.random() < 0.5 else "") + name)
                   for name in rng.sample(list(FIELDS), rng.choice([0, 1, 1, 2]))]
        number = rng.choice([None, 0, 1, 5, 100, 1000])
        if number is not None:
            params.append(("_results_number", str(number)))
        if rng.random() < 0.4:
            params.append(("_results_offset", str(min(rng.choice([1, 5, 50, 250, 5000]), 10_000 - (number or 100)))))
        if rng.random() < 0.7:
            params += [("_facets", self.aggregation_value()) for _ in range(rng.choice([0, 1, 2, 3]))] or [("_facets", "")]
        if rng.random() < 0.5:
            params.append(("_facets_size", str(rng.choice([0, 1, 3, 50, 10_000]))))
        if rng.random() < 0.3:
            name = "_aggs." + ".".join(rng.sample(["signature", "product", "version", "platform"], rng.randint(1, 2)))
            params += [(name, self.aggregation_value(histograms=False)) for _ in range(rng.randint(1, 2))]
        if rng.random() < 0.4:
            params += [("_histogram.date", self.aggregation_value(histograms=False))
                       for _ in range(rng.randint(0, 2))] or [("_histogram.date", "")]
            if rng.random() < 0.7:
                params.append(("_histogram_interval.date", rng.choice(DATE_INTERVALS)))
        if rng.random() < 0.2:
            name = rng.choice(["uptime", "install_age", "hang_type", "build_id"])
            params.append(("_histogram." + name, rng.choice(["", "product", "_cardinality.signature"])))
            params.append(("_histogram_interval." + name, str(rng.choice([1, 2, 60, 3600, 10**6]))))
        return params


@pytest.mark.parametrize("seed", range(5))
def test_random_parameters(corpus, seed):
    """Random parameters go through the parser; what it accepts, the engine answers as the oracle
    does.  Most are accepted (a generator whose queries were all refused would test nothing)."""
    engine, docs = corpus
    maker = ParamsMaker(random.Random(1000 + seed), docs)
    queries, refused = [], []
    for _ in range(30):
        params = maker.params()
        try:
            queries.append(parse_search(params, now=NOW, unredacted=True))
        except SearchParameterError as exc:
            refused.append((params, exc))
    assert len(refused) <= 3, refused
    check(engine, docs, queries)


REFUSED = [
    ([("foo", "bar")], "foo"),
    ([("product", "Firefox"), ("Signature", "OOM")], "Signature"),
    ([("_columns", "uuid"), ("_columns", "nope")], "_columns"),
    ([("_sort", "-nope")], "_sort"),
    ([("_facets", "nope")], "_facets"),
    ([("_facets", "_cardinality.nope")], "_facets"),
    ([("_aggs.signature", "nope")], "_aggs.signature"),
    ([("_aggs.nope", "version")], "_aggs.nope"),
    ([("_histogram.nope", "")], "_histogram.nope"),
    ([("_nope", "1")], "_nope"),
    ([("date", "~2026-11-20")], "date"),
    ([("date", "2026-11-20")], "date"),
    ([("date", "=2026-11-20")], "date"),
    ([("uptime", "~5")], "uptime"),
    ([("uptime", "@5")], "uptime"),
    ([("startup_crash", "^x")], "startup_crash"),
    ([("startup_crash", "true")], "startup_crash"),
    ([("product", ">5")], "product"),
    ([("signature", "!<=a")], "signature"),
    ([("product", "__true__")], "product"),
    ([("date", ">=2026-13-45")], "date"),
    ([("date", "<yesterday")], "date"),
    ([("date", ">=2026-11-20"), ("date", "<2026-11-2x")], "date"),
    ([("uptime", ">five")], "uptime"),
    ([("uptime", "1.5")], "uptime"),
    ([("_results_number", "1001")], "_results_number"),
    ([("_results_number", "-1")], "_results_number"),
    ([("_histogram.signature", "")], "_histogram.signature"),
    ([("_histogram.date", ""), ("_histogram_interval.date", "fortnight")], "_histogram_interval.date"),
    ([("_facets", "date")], "_facets"),
]


@pytest.mark.parametrize("params, parameter", REFUSED, ids=[repr(p) for p, _ in REFUSED])
def test_refused_parameters(corpus, params, parameter):
    """A refused parameter raises SearchParameterError naming it, before any engine searches."""
    engine, _docs = corpus
    with pytest.raises(SearchParameterError) as refused:
        engine.search(parse_search(params, now=NOW, unredacted=True))
    assert refused.value.parameter == parameter


def test_refused_results_window(corpus):
    engine, _docs = corpus
    with pytest.raises(SearchParameterError) as refused:
        engine.search(parse_search([("_results_offset", "9950"), ("_results_number", "100")], now=NOW))
    assert refused.value.parameter in ("_results_offset", "_results_number")


def test_negated_date_bounds_keep_crashes_without_a_date(corpus):
    """``date=!<A&date=!>=B`` bounds ``Query.start``/``end`` to [A, B), yet its conditions are true
    on a crash with no date: the filters decide, not the range an engine may prune with."""
    engine, docs = corpus
    query = parse_search([("date", "!<2026-11-16"), ("date", "!>=2026-11-20"), ("_results_number", "1000")],
                         now=NOW, unredacted=True)
    undated = {doc["uuid"] for doc in docs if "date" not in doc}
    assert undated and undated <= {hit["uuid"] for hit in answer(docs, query)["hits"]}
    check(engine, docs, [query])


@pytest.fixture(params=ENGINES)
def fresh_engine(request, tmp_path):
    """An empty engine of each kind, for hand-made documents."""
    engine = request.param(tmp_path)
    try:
        yield engine
    finally:
        engine.close()


def test_undated_crash_ending_a_full_page_sorted_by_date_descending(fresh_engine):
    """A crash with no date, last on a full page of a descending date sort (missing values go last).
    OpenSearch once answered it with a 500: a date_nanos sort value of Long.MIN_VALUE cannot be
    formatted."""
    docs = [{"uuid": "a", "date": "2026-11-20T10:00:00+00:00"}, {"uuid": "b"}]
    fresh_engine.index(docs)
    for offset, number in ((0, 2), (1, 1), (0, 10)):
        query = Query(filters=(), start=WIDEST[0], end=WIDEST[1], columns=("uuid", "date"), sort=(("date", True),),
                      results_number=number, results_offset=offset)
        check(fresh_engine, docs, [query])


def xfail_on_opensearch(request, reason):
    if request.node.callspec.id.startswith("opensearch"):
        request.applymarker(pytest.mark.xfail(strict=True, reason="OpenSearch engine: " + reason))


#: 64-bit edges (the contract's integers are 64-bit: fields.document_of leaves bigger ones out)
EDGE_DOCS = [{"uuid": "a", "install_age": 2**63 - 1}, {"uuid": "b", "install_age": -2**63},
             {"uuid": "c", "install_age": 2**53 + 1}, {"uuid": "d", "install_age": 2**53}, {"uuid": "e"},
             {"uuid": "f", "install_age": 7}]


def edge_query(**controls):
    return Query(filters=(), start=WIDEST[0], end=WIDEST[1], columns=("uuid", "install_age"), **controls)


def test_integers_at_64_bit_edges(fresh_engine):
    fresh_engine.index(EDGE_DOCS)
    check(fresh_engine, EDGE_DOCS, [
        edge_query(facets=(Terms("install_age"), Cardinality("install_age"))),
        Query(filters=(FieldFilter("install_age", (Condition("install_age", ">=", 2**63 - 1),
                                                   Condition("install_age", "=", 2**53 + 1, negated=True))),),
              start=WIDEST[0], end=WIDEST[1], columns=("uuid",)),
        Query(filters=(FieldFilter("install_age", (Condition("install_age", "<=", -2**63),)),),
              start=WIDEST[0], end=WIDEST[1], columns=("uuid",)),
    ])


@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
def test_sort_on_64_bit_extremes_keeps_missing_last(fresh_engine, descending):
    """2**63 - 1 ascending and -2**63 descending are values like any other: they sort before missing
    ones (OpenSearch sorts a missing long as that very value)."""
    docs = EDGE_DOCS + [{"uuid": "0"}]  # a missing one whose uuid sorts first
    fresh_engine.index(docs)
    check(fresh_engine, docs, [edge_query(sort=(("install_age", descending),))])


def test_histogram_of_integers_past_2_to_the_53(request, fresh_engine):
    xfail_on_opensearch(request, "histogram bucket keys are doubles: terms past 2**53 are rounded "
                        "(2**63 - 1 by 60 gives 9223372036854775808, not 9223372036854775800)")
    fresh_engine.index(EDGE_DOCS)
    check(fresh_engine, EDGE_DOCS, [edge_query(facets=(Histogram("install_age", 60),))])
