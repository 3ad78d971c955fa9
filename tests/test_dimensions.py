"""Dimensioned counters and filtered reports: ground truth over products, versions and OSes."""

import collections
import random
from datetime import timedelta

import pytest

from store_helpers import BASE_TIME, counted_live, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.backends import RowMutation
from socorro_store.crashstore import counters, dimensions
from socorro_store.jobs import registry, rollup
from socorro_store.schema import dimension_keys as DK
from socorro_store.schema import keys as K
from socorro_store.schema import ranking_keys as RK

PRODUCTS = {"Firefox": ["120.0", "121.0"], "Thunderbird": ["115.3"]}
OSES = ["Windows NT", "Linux", "Mac OS X"]
SIGS = ["js::GC", "nsFoo::Bar", "mozalloc_abort", "OOM | small"]
DAY = BASE_TIME.replace(hour=0)


def _load(store, n=120, seed=7):
    """Save and process ``n`` crashes over a day; return their (product, version, os, signature)."""
    rng = random.Random(seed)
    truth = []
    for i in range(n):
        product = rng.choice(sorted(PRODUCTS))
        version, os_name, sig = rng.choice(PRODUCTS[product]), rng.choice(OSES), rng.choice(SIGS)
        cid = crash_id("0123456789abcdef"[i % 16], DAY, rng)
        store.save_raw_crash(raw_crash(cid, DAY + timedelta(minutes=7 * i), ProductName=product, Version=version), {}, cid)
        store.save_processed(processed(cid, sig, product=product, version=version, os_name=os_name))
        truth.append((product, version, os_name, sig))
    return truth


def _expected(truth, product=None, version=None, os=None):
    return collections.Counter(s for p, v, o, s in truth if product in (None, p) and version in (None, v)
                               and os in (None, o))


def _check_top(store, truth):
    filters = [{}, {"product": "Firefox"}, {"product": "Thunderbird"}, {"product": "Firefox", "version": "121.0"},
               {"os": "Linux"}, {"product": "Firefox", "os": "Mac OS X"},
               {"product": "Firefox", "version": "120.0", "os": "Windows NT"}, {"product": "Nope"}]
    for f in filters:
        report = store.top_signatures(DAY, DAY + timedelta(days=1), limit=10, **f)
        expected = _expected(truth, **f)
        assert {s["signature"]: s["count"] for s in report["signatures"]} == dict(expected), f
        assert report["total"] == sum(expected.values()), f
        ranks = [s["rank"] for s in report["signatures"]]
        assert ranks == list(range(1, len(ranks) + 1))
        if "os" not in f:
            assert report["submitted"] == sum(expected.values())


def test_top_crashers_per_filter_are_exact_live_and_after_rollup(store):
    counted_live(store)  # the roll-up's repair of counters incremented live (a cut-over store's: the deriver's)
    truth = _load(store)
    _check_top(store, truth)  # live counters
    for p, versions in PRODUCTS.items():
        n = sum(1 for t in truth if t[0] == p)
        assert store.get_metrics("2016-09-18", product=p) == {"submitted_crash_reports": n}
        for v in versions:
            assert store.get_metrics("2016", product=p, version=v)["submitted_crash_reports"] == \
                sum(1 for t in truth if t[:2] == (p, v))
    # corrupt one dimensioned cell and the product's ranking cell (what a day's report reads);
    # the roll-up makes every filter exact again, and a rerun writes nothing
    column = DK.with_key(K.signature_counter_columns(DAY)["day"], DK.filter_key("Firefox"))
    store.backend.mutate_rows(K.SIGNATURES, [RowMutation(K.signature_row("js::GC"), {column: K.encode_counter(999)})])
    store.backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(RK.rank_row(DAY.date(), RK.product_key("Firefox")), {
        RK.rank_column(K.signature_row("js::GC")): K.encode_counter(999)})])
    assert store.top_signatures(DAY, DAY + timedelta(days=1), product="Firefox")["total"] > 900
    report = rollup.run_rollup(store.backend, until=DAY + timedelta(days=3), since="2016-09-01")
    assert report["drift"].get("signatures_dimensions", 0) >= 1 and report["drift"]["rankings"] == 1
    _check_top(store, truth)
    again = rollup.run_rollup(store.backend, until=DAY + timedelta(days=3), since="2016-09-01")
    assert again["cells_written"] == 0 and again["cells_deleted"] == 0
    # the month and year levels carry the dimensions too
    month = store.get_signature_counters("js::GC", product="Thunderbird")
    assert month.get("monthly_2016-09", 0) == _expected(truth, product="Thunderbird")["js::GC"]


def test_rank_movement_and_missing_processed_fields_fall_back_to_the_raw_crash(store):
    a, b, c = (crash_id(s, DAY) for s in "abc")
    prev = DAY - timedelta(days=1)
    d = crash_id("d", prev)
    store.save_raw_crash(raw_crash(d, prev + timedelta(hours=1), ProductName="Fenix", Version="1"), {}, d)
    store.save_processed(processed(d, "old", product="Fenix", version="1", os_name="Android"))
    for cid, sig in ((a, "new"), (b, "new"), (c, "old")):
        store.save_raw_crash(raw_crash(cid, DAY + timedelta(hours=1), ProductName="Fenix", Version="2"), {}, cid)
        store.save_processed(processed(cid, sig))  # no product/version/os_name in the processed crash
    rollup.run_rollup(store.backend, until=DAY + timedelta(days=3))
    report = store.top_signatures(DAY, DAY + timedelta(days=1), product="Fenix")
    by_sig = {s["signature"]: s for s in report["signatures"]}
    assert (by_sig["new"]["count"], by_sig["new"]["rank"], by_sig["new"]["movement"]) == (2, 1, "new")
    assert (by_sig["old"]["count"], by_sig["old"]["previous_rank"], by_sig["old"]["movement"]) == (1, 1, "down")
    assert store.top_signatures(DAY, DAY + timedelta(days=1), product="Fenix", version="2")["total"] == 3
    assert store.top_signatures(DAY, DAY + timedelta(days=1), os=DK.UNKNOWN)["total"] == 3


@pytest.fixture
def embedded_store(embedded_url):
    with open_store(embedded_url) as opened:
        opened.create_tables()
        yield opened


def test_ten_thousand_versions_are_capped_with_an_other_bucket(embedded_store):
    """The cap is the registry's rule, the same on every backend: checked on the embedded one
    (10,000 crashes per backend kind would cost CI minutes)."""
    store = embedded_store
    cap = counters.DIMENSION_CAPS["version"]
    cids = []
    for i in range(10000):
        cid = crash_id("0123456789abcdef"[i % 16], DAY, random.Random(i))
        cids.append(cid)
    store.save_raw_crashes([(raw_crash(cid, DAY + timedelta(seconds=i), ProductName="Firefox",
                                       Version=f"{i}.0"), {}, cid) for i, cid in enumerate(cids)])
    counted = store.get_metrics("2016-09-18", product="Firefox")
    assert counted == {"submitted_crash_reports": 10000}
    row = store.backend.get_row(K.METRICS, b"2016-09-18")
    version_columns = [c for c in row if b"|pv=" in c]
    assert len(version_columns) == cap + 1  # admitted versions + ##other##: the registry is exact
    other = store.get_metrics("2016-09-18", product="Firefox", version=DK.OTHER)["submitted_crash_reports"]
    admitted = sum(int.from_bytes(row[c], "big", signed=True) for c in version_columns
                   if DK.OTHER.encode() not in c)
    assert admitted == len(version_columns) - 1 and admitted + other == 10000
    # the roll-up admits by volume (all equal here: ties by name), up to the cap less its
    # reserve, and counts the day under that; a second run moves nothing
    rollup.run_rollup(store.backend, until=DAY + timedelta(days=3))
    row = store.backend.get_row(K.METRICS, b"2016-09-18")
    version_columns = [c for c in row if b"|pv=" in c and DK.OTHER.encode() not in c]
    assert len(version_columns) == cap - registry.reserve(cap)
    other = store.get_metrics("2016-09-18", product="Firefox", version=DK.OTHER)["submitted_crash_reports"]
    assert other == 10000 - len(version_columns)
    assert len(dimensions.registry(store.backend)["versions"]["Firefox"]) == len(version_columns)
    report = rollup.run_rollup(store.backend, until=DAY + timedelta(days=3), since=DAY)
    assert report["drift"] == {}
