"""Random crashes and random searches for the differential test of search engines
(``tests/test_search_differential.py``).

:func:`history` gives a seeded sequence of index and delete batches over a few hundred crashes
over 10 days, each field drawn from a few values (so that filters match something): signatures
with spaces, colons, mixed case, unicode, SQL and glob wildcards; some fields missing; booleans in
Socorro's spellings; dates in several ISO forms.  :class:`QueryMaker` gives random
:class:`~socorro_store.search.contract.Query` objects built from the contract's dataclasses,
:class:`ParamsMaker` random Super Search parameters for the parser, both drawing their values
mostly from the documents' own.
"""

import random
from datetime import datetime, timedelta, timezone

import search_oracle

from socorro_store.search.contract import Cardinality, Condition, FieldFilter, Histogram, Query, Terms
from socorro_store.search.fields import DEFAULT_COLUMNS, FIELDS, analyze, document_of

UTC = timezone.utc
DAY0 = datetime(2026, 11, 14, tzinfo=UTC)
DAYS = 10
#: the ``now`` of parsed queries: the default 7 days cover the corpus's last 7 days
NOW = DAY0 + timedelta(days=DAYS, hours=3)
WIDEST = (datetime(1970, 1, 1, tzinfo=UTC), datetime(3000, 1, 1, tzinfo=UTC))


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
    "reason": (["EXCEPTION_ACCESS_VIOLATION_READ", "SIGSEGV /SEGV_MAPERR",
                "EXC_BAD_ACCESS / KERN_INVALID_ADDRESS"], 0.1),
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
            conditions = [Condition("date", rng.choice([">", ">="]), low),
                          Condition("date", rng.choice(["<", "<="]), high)]
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
            interval = rng.choice([1800, 3600, 5400, 6 * 3600, 86400, 7 * 86400])
            return Histogram("date", interval, self.sub_aggregations())
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
            facets = [("_facets", self.aggregation_value()) for _ in range(rng.choice([0, 1, 2, 3]))]
            params += facets or [("_facets", "")]
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
