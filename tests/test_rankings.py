"""Daily rankings: a day's top crashers in one read, whatever the signatures stored (issue 33)."""

import random
from datetime import timedelta

import pytest
from store_helpers import BASE_TIME, counted_live, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.backends import RowMutation
from socorro_store.jobs import rollup
from socorro_store.schema import keys as K
from socorro_store.schema import ranking_keys as RK

DAY = BASE_TIME.replace(hour=0, minute=0, second=0, microsecond=0)
SIGNATURES = {"js::GC": 5, "nsFoo::Bar": 3, "mozalloc_abort | small": 2}


class CountingScans:
    """Counts the scans of ``crash_report_signatures`` (a report that ranks by scanning)."""

    def __init__(self, backend):
        self._backend, self.scans = backend, 0

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def scan(self, table, *args, **kwargs):
        self.scans += table == K.SIGNATURES
        return self._backend.scan(table, *args, **kwargs)


def _ingest(store, day=DAY, signatures=SIGNATURES, product="Firefox", seed=0):
    i = seed
    for signature, n in signatures.items():
        for _ in range(n):
            cid = crash_id("0123456789abcdef"[i % 16], day, random.Random(i))
            store.save_raw_crash(raw_crash(cid, day + timedelta(minutes=i), ProductName=product), {}, cid)
            store.save_processed(processed(cid, signature=signature, product=product))
            i += 1
    store.flush_counters()


def _top(store, **filters):
    report = store.top_signatures(DAY, DAY + timedelta(days=1), **filters)
    return [(s["signature"], s["count"]) for s in report["signatures"]], report["total"]


def _scanned(store, **filters):
    counting = CountingScans(store.backend)
    store.backend = counting
    try:
        return _top(store, **filters), counting.scans
    finally:
        store.backend = counting._backend


def test_a_day_is_ranked_in_one_read_and_agrees_with_the_scan(store):
    _ingest(store)
    (ranked, total), scans = _scanned(store)
    assert scans == 0 and total == 10
    assert ranked == [("js::GC", 5), ("nsFoo::Bar", 3), ("mozalloc_abort | small", 2)]
    assert _scanned(store, product="Firefox") == ((ranked, total), 0)  # a product has its ranking too
    # without the rankings (a day before they are complete) the report scans, and says the same
    store.backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(RK.SINCE_ROW, delete_row=True)])
    assert _scanned(store) == ((ranked, total), 1)


def test_hours_and_an_os_without_its_product_scan(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        _ingest_versions(store)
        counting = CountingScans(store.backend)
        store.backend = counting
        hours = store.top_signatures(DAY, DAY + timedelta(hours=2))
        by_os = store.top_signatures(DAY, DAY + timedelta(days=1), os="Linux")
        store.backend = counting._backend
        assert counting.scans == 2 and hours["total"] == 24 and by_os["total"] == 10


def _ingest_versions(store):
    """Crashes of two versions and two OSes of Firefox, and of another product."""
    shapes = [("js::GC", "120.0", "Windows NT", 4), ("js::GC", "121.0", "Linux", 1), ("nsFoo::Bar", "121.0", "Windows NT", 3),
              ("nsFoo::Bar", "120.0", "Linux", 2), ("mozalloc_abort | small", "120.0", "Linux", 2)]
    i = 0
    for signature, version, os_name, n in shapes:
        for _ in range(n):
            for product in ("Firefox", "Thunderbird"):
                cid = crash_id("0123456789abcdef"[i % 16], DAY, random.Random(i))
                store.save_raw_crash(raw_crash(cid, DAY + timedelta(minutes=i), ProductName=product, Version=version), {}, cid)
                store.save_processed(processed(cid, signature=signature, product=product, version=version, os_name=os_name))
                i += 1
    store.flush_counters()


@pytest.mark.parametrize("filters", [{"version": "120.0"}, {"os": "Linux"}, {"version": "121.0", "os": "Windows NT"},
                                     {"version": "121.0", "os": "Mac OS X"}])
def test_a_product_s_version_and_os_are_ranked_in_one_read(embedded_url, filters):
    """A product with a version, an OS or both has its daily ranking (``|pv=``, ``|po=``,
    ``|pvo=``): no scan, and the same report as the scan of the signature counters gives."""
    with open_store(embedded_url) as store:
        store.create_tables()
        _ingest_versions(store)
        ranked, scans = _scanned(store, product="Firefox", **filters)
        assert scans == 0
        store.backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(RK.SINCE_ROW, delete_row=True)])
        assert _scanned(store, product="Firefox", **filters) == (ranked, 1)
    expected = {"120.0": 8, "Linux": 5, ("121.0", "Windows NT"): 3, ("121.0", "Mac OS X"): 0}
    want = expected[tuple(filters.values()) if len(filters) == 2 else next(iter(filters.values()))]
    assert ranked[1] == want and sum(n for _s, n in ranked[0]) == want


def test_a_reprocessing_moves_its_crash_in_the_ranking(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        _ingest(store, signatures={"old::Sig": 1})
        (cid,) = list(store.crashes_submitted(DAY, DAY + timedelta(days=1)))
        store.save_processed(processed(cid, signature="new::Sig", product="Firefox"))
        store.flush_counters()
        assert _top(store) == ([("new::Sig", 1)], 1)


def test_an_upgraded_store_ranks_once_rollup_recomputed_its_days(embedded_url):
    """A store whose crashes were counted before the rankings existed has no ``~rank/since``: its
    reports scan until ``rollup --since`` rewrites the rankings of every day from then on."""
    with open_store(embedded_url, background_counters=False) as store:
        store.create_tables()
        counted_live(store)  # an older version's store: counted live, repaired by rollup
        _ingest(store)
        # as an older version left it: no rankings at all
        rows = [row for row, _cells in store.backend.scan(K.SIGNATURES_SEEN, start=RK.RANK_PREFIX,
                                                          stop=RK.RANK_PREFIX + b"\xff")]
        store.backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(row, delete_row=True) for row in rows])
        (scanned, total), scans = _scanned(store)
        assert scans == 1 and total == 10
        report = rollup.run_rollup(store.backend, until=DAY + timedelta(days=1), grace_s=0,
                                   since=DAY.strftime("%Y-%m-%d"))
        # 3 signatures in 6 rankings: the day's, Firefox's, its version's, OS's and both's, and the parent process's
        assert report["drift"] == {"rankings": 18}
        assert _scanned(store) == ((scanned, total), 0)
        # a rerun finds them exact
        again = rollup.run_rollup(store.backend, until=DAY + timedelta(days=1), grace_s=0,
                                  since=DAY.strftime("%Y-%m-%d"))
        assert "rankings" not in again["drift"]


@pytest.mark.parametrize("bad", [b"~rank/2016-13-01", b"~rank/x", b"rank/2016-09-18", b"~rank/2016-09-18|q=1"])
def test_ranking_rows_parse_back_or_are_refused(bad):
    from socorro_store.errors import InvalidArgument

    assert RK.parse_rank_row(RK.rank_row(DAY.date(), RK.product_key("Fire fox"))) == \
        (DAY.date(), RK.product_key("Fire fox"))
    with pytest.raises(InvalidArgument):
        RK.parse_rank_row(bad)
