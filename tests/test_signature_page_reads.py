"""The signature page reads the columns it shows, not the signature's whole counter row.

A busy signature's row holds every interval x every dimension key (``|p=``, ``|pv=``, ``|os=``,
``|po=``, ``|pvo=``).  The page (trend, first seen, the last 30 days by product, version and OS)
must show what a read of the whole row gave, computed here from that read as the page used to
(:func:`reference`), while the backend returns only a fraction of the row's cells: never an
hourly, monthly or yearly dimensioned column, never a ``|po=``/``|pvo=`` one.
"""

import collections
import random
from datetime import timedelta

import pytest
from store_helpers import BASE_TIME, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.backends.base import RowMutation
from socorro_store.crashstore import counters, dimensions, signature_reports
from socorro_store.jobs.rollup import run_rollup
from socorro_store.schema import dimension_keys as DK
from socorro_store.schema import keys as K

pytest.importorskip("flask", reason="the web view needs Flask (pip install 'socorro-store[web]')")
from socorro_store.web import pages  # noqa: E402

NOW = BASE_TIME + timedelta(hours=3)  # 2016-09-18T15
TODAY = NOW.replace(hour=0)
START, END = TODAY - timedelta(days=29), TODAY + timedelta(days=1)  # the page's breakdown
BUSY = "Busy::Signature"
PRODUCTS = {"Firefox": ["120.0", "121.0", "122.0a1", "115.5esr"], "Fenix": ["120.1", "121.0"],
            "Thunderbird": ["115.4"], None: ["1.0"]}  # None: no product (##unknown##)
OSES = ["Windows NT", "Linux", "Mac OS X", "Android", None]


# -- the reference: the whole row, as the page computed it before ------------------------------

def reference(backend, signature, now, product=None, version=None, os=None):
    """``(report without counters, breakdown)`` from one read of the whole counter row."""
    read = counters.read_counters(backend, K.SIGNATURES, K.signature_row(signature))
    key = DK.filter_key(product, version, os)
    by_level, totals = collections.defaultdict(dict), {"p": {}, "pv": {}, "os": {}}
    for name, n in read.items():
        level, start, k = DK.parse_signature_column(K.FAMILY_COUNTERS + b":" + name.encode("utf-8"))
        if k == key:
            by_level[level][start] = n
        if k is not None and level == "day" and START <= start < END:
            kind, fields = DK.parse_dimension_key(k)
            if kind in totals:
                label = tuple(fields[f] for f in ("product", "version", "os") if f in fields)
                totals[kind][label] = totals[kind].get(label, 0) + n
    first = None  # the earliest year, then within it the earliest month, day, hour
    for level in ("year", "month", "day", "hour"):
        starts = sorted(s for s in by_level[level] if first is None or first[1] <= s < K.interval_end(*first))
        first = (level, starts[0]) if starts else first
    hour = now.replace(minute=0, second=0, microsecond=0)
    hours = [hour - timedelta(hours=h) for h in range(47, -1, -1)]
    days = [hour.replace(hour=0) - timedelta(days=d) for d in range(29, -1, -1)]

    def ranked(kind):
        return [[*label, n] for label, n in sorted(totals[kind].items(), key=lambda i: (-i[1], i[0])) if n > 0]

    report = {"signature": signature,
              "first_seen": {"level": first[0], "start": first[1].isoformat()} if first else None,
              "hourly": [[K.metrics_row(m, "hour").decode(), by_level["hour"].get(m, 0)] for m in hours],
              "daily": [[K.metrics_row(m, "day").decode(), by_level["day"].get(m, 0)] for m in days]}
    return report, {"product": ranked("p"), "version": ranked("pv"), "os": ranked("os")}


# -- the store ---------------------------------------------------------------------------------

class Counting:
    """The backend, counting calls and the ``crash_report_signatures`` cells each read returns."""

    def __init__(self, backend):
        self._backend, self.calls, self.columns = backend, 0, []

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def _seen(self, table, found):
        self.calls += 1
        if table == K.SIGNATURES:
            self.columns += [column for cells in found.values() for column in cells]
        return found

    def get_row(self, table, row, *args, **kwargs):
        return self._seen(table, {row: self._backend.get_row(table, row, *args, **kwargs)})[row]

    def get_rows(self, table, rows, *args, **kwargs):
        return self._seen(table, self._backend.get_rows(table, rows, *args, **kwargs))

    def scan(self, table, *args, **kwargs):
        self.calls += 1
        yield from self._backend.scan(table, *args, **kwargs)


def _save(store, rng, signature, when, product, version, os_name):
    cid = crash_id(K.SALTS[rng.randrange(16)], day=when, rng=rng)
    raw = raw_crash(cid, when, ProductName=product, Version=version)
    doc = processed(cid, signature=signature, product=product, version=version, os_name=os_name)
    if product is None:  # no product anywhere: counted under ##unknown##
        del raw["ProductName"], doc["product"]
    if os_name is None:
        del doc["os_name"]
    store.save_raw_crash(raw, {}, cid)
    store.save_processed(doc)


def _fill(store, seed=26):
    """~200 crashes of BUSY over 29 days (every product, version and OS), the first of them in
    April (first seen: its hour, found below the first-seen windows), and a few of another."""
    rng = random.Random(seed)
    pairs = [(p, v) for p, versions in PRODUCTS.items() for v in versions]
    _save(store, rng, BUSY, BASE_TIME - timedelta(days=150, hours=5), "Firefox", "99.0", "Linux")
    for i in range(200):
        when = NOW - timedelta(hours=rng.randrange(29 * 24), minutes=rng.randrange(60))
        product, version = pairs[i % len(pairs)]
        _save(store, rng, BUSY, when, product, version, OSES[i % len(OSES)])
    for i in range(5):
        _save(store, rng, "Rare", NOW - timedelta(hours=40 * i), "Firefox", "120.0", "Linux")
    store.flush_counters()


@pytest.fixture
def busy_store(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        _fill(store)
        yield store


def _page(store, signature, **filters):
    """What the web page shows (and ``/api/signature`` returns) of the overview, and the reads."""
    counting = Counting(store.backend)
    store.backend = counting
    try:
        data = pages.signature(store, {"signature": signature, **filters}, NOW)
    finally:
        store.backend = counting._backend
    report = {k: data[k] for k in ("signature", "first_seen", "hourly", "daily")}
    return report, data["breakdown"], data, counting


FILTERS = [{}, {"product": "Firefox"}, {"product": "Firefox", "version": "121.0"}, {"os": "Linux"},
           {"product": "Fenix", "os": "Android"}, {"product": "Nothing"}]


@pytest.mark.parametrize("filters", FILTERS)
def test_the_page_shows_what_the_whole_row_gave(busy_store, filters):
    report, breakdown, data, _counting = _page(busy_store, BUSY, **filters)
    assert (report, breakdown) == reference(busy_store.backend, BUSY, NOW, **filters)
    assert "counters" not in data  # every interval of the row: the library and CLI still give them
    assert breakdown["product"] and breakdown["version"] and breakdown["os"]


def test_the_page_reads_a_fraction_of_the_row_and_no_hourly_dimensioned_column(busy_store):
    row_cells = len(counters.read_counters(busy_store.backend, K.SIGNATURES, K.signature_row(BUSY)))
    report, _breakdown, _data, counting = _page(busy_store, BUSY)
    assert report["first_seen"] == {"level": "hour", "start": "2016-04-21T07:00:00+00:00"}
    parsed = [DK.parse_signature_column(column) for column in counting.columns]
    assert [c for c, (level, _s, key) in zip(counting.columns, parsed) if key is not None and level != "day"] == []
    kinds = {key.partition(b"=")[0] for _level, _s, key in parsed if key is not None}
    assert kinds == {b"p", b"pv", b"os"}
    assert len(counting.columns) * 5 < row_cells, (len(counting.columns), row_cells)
    # product and OS registry, the row, the versions of its products, their columns (with the
    # days of April), the hours of its first day; and the page's crash list (a scan, a get)
    assert counting.calls <= 7


def test_a_rare_signature_reads_little(busy_store):
    report, breakdown, _data, counting = _page(busy_store, "Rare")
    assert (report, breakdown) == reference(busy_store.backend, "Rare", NOW)
    assert len(counting.columns) <= 5 * 4 + 5 * 3 + 5  # its plain columns, its days' p/pv/os, its crashes


def test_a_never_seen_signature(busy_store):
    report, breakdown, _data, _counting = _page(busy_store, "Never::Seen")
    assert (report, breakdown) == reference(busy_store.backend, "Never::Seen", NOW)
    assert report["first_seen"] is None and breakdown == {"product": [], "version": [], "os": []}


def test_after_a_rollup_the_page_still_agrees(busy_store):
    run_rollup(busy_store.backend, until=NOW)
    for filters in FILTERS[:3]:
        report, breakdown, _data, _counting = _page(busy_store, BUSY, **filters)
        assert (report, breakdown) == reference(busy_store.backend, BUSY, NOW, **filters)


@pytest.mark.parametrize("field, value", [("version", "121.0"), ("os", "Mac OS X"), ("product", "Fenix")])
def test_a_value_taken_out_of_the_registry_is_still_counted(busy_store, field, value):
    """What ``rollup`` does to a value with less volume: its columns in the window stay, the
    registry no longer names it, so the page finds the days short and reads the whole row."""
    row = DK.registry_row(field, "Firefox" if field == "version" else None)
    cells = busy_store.backend.get_row(K.SIGNATURES_SEEN, row, columns=[b"seen"])
    gone = [column for column, stored in cells.items() if DK.registry_values({column: stored}) == {value}]
    assert gone
    busy_store.backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(row, deletes=gone)])
    row_cells = len(counters.read_counters(busy_store.backend, K.SIGNATURES, K.signature_row(BUSY)))
    report, breakdown, _data, counting = _page(busy_store, BUSY)
    assert (report, breakdown) == reference(busy_store.backend, BUSY, NOW)
    assert any(value in entry for entry in breakdown["version" if field == "version" else
                                                     "os" if field == "os" else "product"])
    assert len(counting.columns) > row_cells  # the whole row, after the columns listed


def test_values_over_the_cap_count_as_other(embedded_url, monkeypatch):
    monkeypatch.setitem(dimensions.DIMENSION_CAPS, "os", 2)
    monkeypatch.setitem(dimensions.DIMENSION_CAPS, "version", 3)
    with open_store(embedded_url) as store:
        store.create_tables()
        _fill(store, seed=7)
        report, breakdown, _data, counting = _page(store, BUSY)
        assert (report, breakdown) == reference(store.backend, BUSY, NOW)
        assert ["Firefox", DK.OTHER] in [row[:2] for row in breakdown["version"]]
        assert DK.OTHER in [row[0] for row in breakdown["os"]]
        row_cells = len(counters.read_counters(store.backend, K.SIGNATURES, K.signature_row(BUSY)))
        assert len(counting.columns) * 5 < row_cells  # the columns listed were enough


def test_the_library_overview_keeps_its_counters(busy_store):
    """``signature_overview`` (and ``signature_report``, ``signatures show``) still give every
    interval of the row; ``with_counters=False`` is the same less ``counters``."""
    full, breakdown = busy_store.signature_overview(BUSY, NOW, START, END)
    assert set(full["counters"]) == {"hour", "day", "month", "year"}
    assert full["counters"] == busy_store.signature_report(BUSY, now=NOW)["counters"]
    narrow = signature_reports.signature_overview(busy_store.backend, BUSY, NOW, START, END, with_counters=False)
    assert narrow == ({k: v for k, v in full.items() if k != "counters"}, breakdown)
