"""Top crashers per process type (issue 33, part 5): the ``pt`` rankings ``~rank/<day>|pt=<type>``.

A process type is ranked per day and never written as a counter column: the tests check the
live ranking agrees with a recount, that ``rollup`` fixes it, that ``expire`` deletes it with
its day, and count the reads (never time).
"""

import collections
import random
from datetime import timedelta

import pytest
from jobs_helpers import UNTIL, ingest, make_crashes
from store_helpers import BASE_TIME, counted_live, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.backends import RowMutation
from socorro_store.crashstore import reports
from socorro_store.errors import InvalidArgument
from socorro_store.jobs import expiry, rollup
from socorro_store.schema import dimension_keys as DK
from socorro_store.schema import keys as K
from socorro_store.schema import ranking_keys as RK

DAY = BASE_TIME.replace(hour=0, minute=0, second=0, microsecond=0)
END = DAY + timedelta(days=1)
#: (signature, ProcessType or None, crashes)
CRASHES = [("js::GC", "content", 4), ("js::GC", None, 2), ("gfx::Draw", "gpu", 3), ("gfx::Draw", "default", 1),
           ("ipc::Abort", "content", 2), ("odd::One", "WeirdProcess", 1)]


def _ingest(store):
    i = 0
    for signature, ptype, n in CRASHES:
        for _ in range(n):
            cid = crash_id(K.SALTS[i % 16], DAY, random.Random(i))
            extra = {"ProcessType": ptype} if ptype else {}
            store.save_raw_crash(raw_crash(cid, DAY + timedelta(minutes=i), **extra), {}, cid)
            store.save_processed(processed(cid, signature=signature, product="Firefox"))
            i += 1
    store.flush_counters()


def _expected(process_type):
    counts = collections.Counter()
    for signature, ptype, n in CRASHES:
        if DK.normalize_process_type(ptype) == process_type:
            counts[signature] += n
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


class Counting:
    """Counts the backend calls by name and table, and the scans of ``crash_report_signatures``."""

    def __init__(self, backend):
        self._backend, self.calls = backend, collections.Counter()

    def __getattr__(self, name):
        attr = getattr(self._backend, name)
        if not callable(attr):
            return attr

        def counted(table, *args, **kwargs):
            self.calls[(name, table)] += 1
            return attr(table, *args, **kwargs)
        return counted


@pytest.fixture
def ranked_store(embedded_url):
    with open_store(embedded_url, background_counters=False) as store:
        store.create_tables()
        _ingest(store)
        yield store


def _top(backend, process_type):
    report = reports.top_signatures(backend, DAY, END, 50, process_type=process_type)
    return [(s["signature"], s["count"]) for s in report["signatures"]], report


def test_a_process_type_is_ranked_in_one_read_with_no_scan_and_no_counter_column(ranked_store):
    counting = Counting(ranked_store.backend)
    for ptype in ("parent", "content", "gpu", DK.OTHER):
        counting.calls.clear()
        ranked, report = _top(counting, ptype)
        assert ranked == _expected(ptype)
        assert report["total"] == sum(n for _s, n in ranked) and report["submitted"] is None
        assert sum(n for (name, table), n in counting.calls.items() if table == K.SIGNATURES) == 0  # no scan
        # days never rolled up: their head rows, their top rows, then their full rows (one read each)
        assert counting.calls[("get_rows", K.SIGNATURES_SEEN)] == 3
    # "default", absent and any case are the browser; an unknown name is ##other##
    assert _top(ranked_store.backend, "Default")[0] == _top(ranked_store.backend, "parent")[0] == _expected("parent")
    assert _top(ranked_store.backend, "WeirdProcess")[1]["dimension"]["counted_as"] == {"process_type": DK.OTHER}
    # no counter column of a process type: each crash costs no extra counter cell
    for _row, cells in ranked_store.backend.scan(K.SIGNATURES):
        assert not [c for c in cells if b"|pt=" in c]


def test_the_live_process_type_rankings_agree_with_a_recount(ranked_store):
    live = {row: cells for row, cells in ranked_store.backend.scan(K.SIGNATURES_SEEN, start=RK.rank_row(DAY.date()),
                                                                   stop=RK.rank_row(DAY.date()) + b"\xff")}
    assert RK.rank_row(DAY.date(), DK.process_type_key("content")) in live
    report = rollup.run_rollup(ranked_store.backend, until=END, grace_s=0)
    assert "rankings" not in report["drift"]  # the recount found the live rankings exact
    assert "signatures_dimensions" not in report["drift"] and "signatures" not in report["drift"]


@pytest.fixture
def live_ranked_store(embedded_url):
    """A store whose rankings are incremented live and repaired by rollup (a cut-over store's
    are the deriver's alone)."""
    with open_store(embedded_url, background_counters=False) as store:
        store.create_tables()
        counted_live(store)
        _ingest(store)
        yield store


def test_rollup_fixes_a_corrupted_process_type_ranking(live_ranked_store):
    ranked_store = live_ranked_store
    backend = ranked_store.backend
    content = RK.rank_row(DAY.date(), DK.process_type_key("content"))
    gpu = RK.rank_row(DAY.date(), DK.process_type_key("gpu"))
    backend.mutate_rows(K.SIGNATURES_SEEN, [
        RowMutation(content, {RK.rank_column(K.signature_row("js::GC")): K.encode_counter(40),
                              RK.rank_column(K.signature_row("never::seen")): K.encode_counter(7)}),
        RowMutation(gpu, delete_row=True),
        RowMutation(RK.rank_row(DAY.date(), DK.process_type_key("rdd")),
                    {RK.rank_column(K.signature_row("js::GC")): K.encode_counter(1)}),
    ])
    assert _top(backend, "content")[0] != _expected("content")
    report = rollup.run_rollup(backend, until=END, grace_s=0)
    assert report["drift"]["rankings"] == 4  # js::GC in content, never::seen, gfx::Draw in gpu, the rdd row
    for ptype in ("content", "gpu", "rdd", "parent"):
        assert _top(backend, ptype)[0] == _expected(ptype)
    again = rollup.run_rollup(backend, until=END, grace_s=0)
    assert "rankings" not in again["drift"]


def test_bad_process_type_filters_are_refused(ranked_store):
    backend = ranked_store.backend
    for kwargs in ({"process_type": ""}, {"process_type": 5}, {"process_type": "content", "product": "Firefox"},
                   {"process_type": "content", "os": "Linux"}):
        with pytest.raises(InvalidArgument):
            reports.top_signatures(backend, DAY, END, **kwargs)
    with pytest.raises(InvalidArgument, match="whole days"):
        reports.top_signatures(backend, DAY, DAY + timedelta(hours=2), process_type="content")
    with pytest.raises(InvalidArgument):
        reports.process_type_splits(backend, ["js::GC"], DAY, DAY + timedelta(hours=2))


def test_process_type_splits_of_the_signatures_shown_in_one_read(ranked_store):
    counting = Counting(ranked_store.backend)
    splits = reports.process_type_splits(counting, ["js::GC", "gfx::Draw", "nothing::Here"], DAY, END)
    assert splits == {"js::GC": {"content": 4, "parent": 2}, "gfx::Draw": {"gpu": 3, "parent": 1}, "nothing::Here": {}}
    assert sum(counting.calls.values()) == 1


def test_expire_deletes_the_process_type_rankings_and_top_rows_with_their_day(backend_url, prebuilt_tables):
    with open_store(backend_url, background_counters=False) as store:
        store.create_tables()
        ingest(store, make_crashes())
        backend = store.backend
        rollup.run_rollup(backend, until=UNTIL)

        def pt_days():
            return {RK.parse_rank_row(row)[0] for row, _cells in backend.scan(
                K.SIGNATURES_SEEN, start=RK.RANK_PREFIX, stop=RK.SINCE_ROW)
                if DK.is_ranking_only(RK.parse_rank_row(row)[1])}

        def top_days():  # the head and top rows rollup wrote go with their day too
            return {RK.parse_top_row(row)[:3:2] for row, _cells in backend.scan(
                K.SIGNATURES_SEEN, start=RK.HEAD_PREFIX, stop=RK.TOP_PREFIX + b"\xff")}

        before, tops_before = pt_days(), top_days()
        assert any(day.year == 2016 for day in before)
        assert {(day.year, head) for day, head in tops_before} >= {(2016, True), (2016, False)}
        report = expiry.run_expire(backend, now="2017-06-15T00:00:00Z")
        assert report["ranking_rows"] > 0
        after, tops_after = pt_days(), top_days()
        assert after and all(day.year == 2017 for day in after) and after < before
        assert tops_after and all(day.year == 2017 for day, _head in tops_after) and tops_after < tops_before


def test_the_cli_top_command_filters_by_process_type(embedded_url):
    import json  # noqa: PLC0415

    from cli_helpers import fails, ok, run  # noqa: PLC0415

    with open_store(embedded_url, background_counters=False) as store:
        store.create_tables()
        _ingest(store)
    day = DAY.date().isoformat()
    report = json.loads(ok(run(embedded_url, "signatures", "top", "--day", day, "--process-type", "content", "--json")))
    assert [(s["signature"], s["count"]) for s in report["signatures"]] == _expected("content")
    text = ok(run(embedded_url, "signatures", "top", "--day", day, "--process-type", "gpu"))
    assert "filter: process_type gpu" in text
    assert "combines with no product" in fails(run(embedded_url, "signatures", "top", "--day", day,
                                                    "--process-type", "gpu", "--product", "Firefox"), 2)
