"""Live counters and ``rollup`` derive the same facts: each finding of a review where the two
writers disagreed, reproduced on every backend kind and then fixed at the shared code."""

from datetime import timedelta

from store_helpers import BASE_TIME, counted_live, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.jobs import rollup
from socorro_store.schema import keys as K
from socorro_store.schema import ranking_keys as RK

DAY = BASE_TIME.replace(hour=0, minute=0, second=0, microsecond=0)
NEXT_DAY = DAY + timedelta(days=1)


def _save(store, n, salts="0123456789abcdef", processed_as=None, **fields):
    ids = []
    for i in range(n):
        cid = crash_id(salts[i % len(salts)])
        store.save_raw_crash(raw_crash(cid, BASE_TIME + timedelta(seconds=i), **fields), {}, cid)
        ids.append(cid)
    if processed_as is not None:
        store.save_processed_crashes([processed(cid, signature=processed_as) for cid in ids])
    return ids


def test_a_version_of_an_unknown_product_is_keyed_alike_live_and_by_rollup(backend_url):
    """A crash with a Version but no ProductName: live counters and rollup key its version the
    same way, so the rollup finds nothing to correct (it found drift in three kinds of cells,
    and the month kept one key, the day another)."""
    with open_store(backend_url, background_counters=False) as store:
        store.create_tables()
        raw_fields = {"Version": "120.0", "ProductName": None}
        _save(store, 4, processed_as="sig::Unknown", **raw_fields)
        report = rollup.run_rollup(store.backend, until=NEXT_DAY, grace_s=0)
        assert report["drift"] == {}, report.get("drift_examples")
        day = DAY.strftime("%Y-%m-%d")
        assert store.get_metrics(day, product="##unknown##") == {"submitted_crash_reports": 4}
        month = DAY.strftime("%Y-%m")
        assert store.get_metrics(month, product="##unknown##", version="##other##") == \
            store.get_metrics(day, product="##unknown##", version="##other##") == {"submitted_crash_reports": 4}


def _counts_from_full_rows(store, day):
    """The day's ``[(signature, count)]`` by its full ranking row, best first."""
    from socorro_store.crashstore import rankings  # noqa: PLC0415

    counts = rankings.read_rankings(store.backend, [[day]])[0]
    return [(row.decode(), n) for row, (_rank, n) in sorted(rankings.ranked(counts).items(), key=lambda i: i[1][0])]


def _top(store, day, limit=3):
    report = store.top_signatures(day.isoformat(), (day + timedelta(days=1)).isoformat(), limit=limit)
    return [(s["signature"], s["count"]) for s in report["signatures"]], report["total"]


def test_head_and_top_rows_stay_true_after_a_closed_day_changes(backend_url, monkeypatch):
    """A rolled-up day's head and top rows are bounds the report trusts.  A reprocessing after
    the rollup moves 9 crashes from A to X, and a backlog of 20 crashes of that day is processed
    after it: the report still gives the full rows' top 3 and total (it gave [B 5, C 4, A 1],
    and never showed the backlog)."""
    monkeypatch.setattr(RK, "HEAD_K", 3)  # a skewed day: the head row proves its top 3
    monkeypatch.setattr(RK, "TOP_K", 4)
    day = DAY.date()
    with open_store(backend_url, background_counters=False) as store:
        store.create_tables()
        by_signature = {}
        for signature, n in (("A", 10), ("B", 5), ("C", 4), ("D", 1), ("E", 1), ("F", 1)):
            by_signature[signature] = _save(store, n, processed_as=signature)
        rollup.run_rollup(store.backend, until=NEXT_DAY, grace_s=0)
        assert _top(store, day) == ([("A", 10), ("B", 5), ("C", 4)], 22)
        assert store.enqueue_priority(by_signature["A"][:9]) == 9
        store.save_processed_crashes([processed(cid, signature="X") for cid in by_signature["A"][:9]])
        assert _top(store, day) == (_counts_from_full_rows(store, day)[:3], 22) == ([("X", 9), ("B", 5), ("C", 4)], 22)
        _save(store, 20, processed_as="Y")  # the backlog: crashes of the day, processed late
        assert _top(store, day) == (_counts_from_full_rows(store, day)[:3], 42) == ([("Y", 20), ("X", 9), ("B", 5)], 42)
        # the next rollup rewrites the rows from the crash rows, and the report stays the same
        rollup.run_rollup(store.backend, until=NEXT_DAY, grace_s=0)
        assert _top(store, day) == ([("Y", 20), ("X", 9), ("B", 5)], 42)


def test_the_legacy_queue_counter_moves_only_for_a_pointer_this_store_took(backend_url):
    """Beside Socorro's 2016 processors: its ``new_crashes()`` takes (deletes) the legacy pointers
    of crashes this store collected; ``reconcile-queue`` sets the counters to the pointers there
    are; this store then processes the crashes.  The legacy counter stays at the real queue's
    size, 0 (it went to -2: the save counted the legacy dequeue from the crash's own flag)."""
    from socorro_rows import BackendWriter, socorro_2016_new_crashes  # noqa: PLC0415

    from socorro_store.jobs import scrutiny  # noqa: PLC0415

    with open_store(backend_url, background_counters=False) as store:
        store.create_tables()
        counted_live(store)  # beside Socorro's code the counters stay live (docs/derivation.md)
        ids = []
        for i, salt in enumerate("3a"):
            cid = crash_id(salt)
            store.save_raw_crash(raw_crash(cid, BASE_TIME + timedelta(seconds=i), legacy_processing=0), {}, cid)
            ids.append(cid)
        store.flush_counters()
        assert store.queue_sizes()["legacy"] == 2
        taken = list(socorro_2016_new_crashes(BackendWriter(store.backend), 10))
        assert sorted(taken) == sorted(ids)
        scrutiny.run_reconcile_queue(store.backend)
        assert store.queue_sizes()["legacy"] == 0 and store.queue_sizes()["standard"] == 2
        store.save_processed_crashes([processed(cid) for cid in ids])
        store.flush_counters()
        sizes = store.queue_sizes()
        assert (sizes["legacy"], sizes["standard"]) == (0, 0)


def test_a_legacy_crash_processed_or_deleted_here_leaves_the_legacy_counter_at_its_pointers(backend_url):
    """Without Socorro beside it, the legacy pointer's take counts it once: processed, then
    processed again (a retry), and one deleted while queued."""
    with open_store(backend_url, background_counters=False) as store:
        store.create_tables()
        ids = []
        for i, salt in enumerate("05c"):
            cid = crash_id(salt)
            store.save_raw_crash(raw_crash(cid, BASE_TIME + timedelta(seconds=i), legacy_processing=0), {}, cid)
            ids.append(cid)
        store.flush_counters()
        assert store.queue_sizes()["legacy"] == 3
        store.save_processed_crashes([processed(cid) for cid in ids[:2]])
        store.save_processed_crashes([processed(cid) for cid in ids[:2]])
        store.delete_crashes([ids[2]])
        store.flush_counters()
        sizes = store.queue_sizes()
        assert (sizes["legacy"], sizes["standard"], sizes["processed_legacy"]) == (0, 0, 2)


def test_a_deletion_after_a_rollup_takes_back_what_the_crashes_counted(backend_url):
    """A's 5 crashes less 3 deleted rank as 2 at once, in every counter the crashes were in, and
    the next rollup of the day finds nothing to correct (they still ranked as 5 until it counted
    2: the store disagreed with itself across a rollup)."""
    day = DAY.date()
    with open_store(backend_url, background_counters=False) as store:
        store.create_tables()
        a = _save(store, 5, processed_as="A", ProductName="Firefox")
        _save(store, 4, processed_as="B", ProductName="Firefox")
        rollup.run_rollup(store.backend, until=NEXT_DAY, grace_s=0)
        store.delete_crashes(a[:3])
        store.flush_counters()
        assert _top(store, day) == ([("B", 4), ("A", 2)], 6)
        day_text = DAY.strftime("%Y-%m-%d")
        assert store.get_metrics(day_text)["submitted_crash_reports"] == 6
        assert store.get_metrics(day_text, product="Firefox")["submitted_crash_reports"] == 6
        assert store.get_signature_counters("A")[f"daily_{day_text}"] == 2
        assert store.get_signature_counters("A", product="Firefox")[f"daily_{day_text}"] == 2
        report = rollup.run_rollup(store.backend, until=NEXT_DAY, grace_s=0, since=day_text)
        assert report["drift"] == {}, report.get("drift_examples")
        assert _top(store, day) == ([("B", 4), ("A", 2)], 6)


class KilledAfterColumnDeletes:
    """The backend of an ``expire`` run killed right after it deleted signature columns."""

    def __init__(self, backend):
        self._backend = backend

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def mutate_rows(self, table, mutations):
        self._backend.mutate_rows(table, mutations)
        if table == K.SIGNATURES:
            raise KeyboardInterrupt("killed")


def _expired_leftovers(backend, before):
    """Ranking, head, top and slack rows, and first-seen marker rows, of days before ``before``."""
    from socorro_store.schema import ranking_keys as RK  # noqa: PLC0415

    left = []
    for row, _cells in backend.scan(K.SIGNATURES_SEEN, columns=[b"seen"], page_size=50):
        for parse in (RK.parse_rank_row, lambda r: RK.parse_top_row(r)[:2], RK.parse_slack_row):
            try:
                day = parse(row)[0]
            except Exception:  # noqa: BLE001 - another kind of row
                continue
            if day < before:
                left.append(row)
            break
        else:
            try:
                level, start = K.parse_metrics_row(row)
            except Exception:  # noqa: BLE001 - a registry row, the expiry record
                continue
            if start.date() < before and level in ("hour", "day"):
                left.append(row)
    return left


def test_an_interrupted_expire_leaves_nothing_of_the_days_it_expired(backend_url):
    """Killed after deleting the expired days' signature columns, then run to the end: the days'
    rankings, head and top rows and first-seen markers go too (they stayed forever: the days to
    clean were taken from what the completing run deleted itself)."""
    from datetime import date  # noqa: PLC0415

    from jobs_helpers import UNTIL, ingest, make_crashes  # noqa: PLC0415

    from socorro_store.jobs import expiry  # noqa: PLC0415

    with open_store(backend_url, background_counters=False) as store:
        store.create_tables()
        ingest(store, make_crashes())
        backend = store.backend
        rollup.run_rollup(backend, until=UNTIL)
        assert _expired_leftovers(backend, date(2017, 1, 1))
        try:
            expiry.expire(KilledAfterColumnDeletes(backend), now="2017-06-15T00:00:00Z")
        except KeyboardInterrupt:
            pass
        expiry.expire(backend, now="2017-06-15T00:00:00Z")
        assert _expired_leftovers(backend, date(2017, 1, 1)) == []
        assert backend.get_row(K.SIGNATURES_SEEN, K.EXPIRING_ROW) == {}  # nothing left to clean


def test_minute_rows_whose_hour_row_went_first_still_expire(backend_url):
    """An hour row deleted before its minutes (a run killed between them): the minutes go by
    their day's mark (every later run kept them, reporting them as ``kept_unmarked``)."""
    from jobs_helpers import UNTIL, ingest, make_crashes  # noqa: PLC0415

    from socorro_store.backends import RowMutation  # noqa: PLC0415
    from socorro_store.jobs import expiry  # noqa: PLC0415

    with open_store(backend_url, background_counters=False) as store:
        store.create_tables()
        ingest(store, make_crashes())
        backend = store.backend
        rollup.run_rollup(backend, until=UNTIL)
        hours = [row for row, _cells in backend.scan(K.METRICS, start=b"2016-12-31T", stop=b"2016-12-31T\xff")
                 if K.parse_metrics_row(row)[0] == "hour"]
        backend.mutate_rows(K.METRICS, [RowMutation(row, delete_row=True) for row in hours])
        report = expiry.expire(backend, now="2017-01-20T00:00:00Z")
        assert report["kept_unmarked"] == 0
        minutes = [row for row, _cells in backend.scan(K.METRICS, start=b"2016-12-31T", stop=b"2016-12-31T\xff")]
        assert minutes == []


def test_deleting_crashes_socorros_code_saved_takes_back_only_what_this_store_counted(backend_url):
    """A crash Socorro's collector and processor saved, and one Socorro collected and this store
    processed: a deletion takes back this store's counts only, so no cell Socorro's code never
    incremented goes below zero (Socorro counted submissions in ``metrics``, never signatures)."""
    from socorro_rows import BackendWriter, socorro_process, socorro_submit  # noqa: PLC0415

    with open_store(backend_url, background_counters=False) as store:
        store.create_tables()
        writer = BackendWriter(store.backend)
        theirs, ours_processed = crash_id("1"), crash_id("2")
        socorro_submit(writer, theirs, BASE_TIME)
        socorro_process(writer, theirs, BASE_TIME, "S::Socorro")
        socorro_submit(writer, ours_processed, BASE_TIME + timedelta(seconds=1))
        store.save_processed(processed(ours_processed, signature="S::Ours"))
        store.flush_counters()
        day_text = DAY.strftime("%Y-%m-%d")
        submitted = store.get_metrics(day_text)["submitted_crash_reports"]
        assert store.get_signature_counters("S::Ours")[f"daily_{day_text}"] == 1
        store.delete_crashes([theirs, ours_processed])
        store.flush_counters()
        assert store.get_metrics(day_text)["submitted_crash_reports"] == submitted  # Socorro's own count
        assert store.get_signature_counters("S::Ours").get(f"daily_{day_text}", 0) == 0  # this store's, taken back
        every_count = [n for row, _cells in store.backend.scan(K.SIGNATURES, columns=[b"counters"])
                       for n in store.get_signature_counters(row.decode()).values()]
        assert min(every_count, default=0) >= 0


class ChangedDuringRecount:
    """A backend on which, as the rollup starts recounting the day (its first read of crash
    rows), another store deletes crashes of that day: a change the recount may or may not see."""

    def __init__(self, backend, change):
        self._backend, self._change = backend, change

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def get_rows(self, table, *args, **kwargs):
        from socorro_store.crashstore.cut_over import ROW_COLUMNS  # noqa: PLC0415

        # the recount's read, not the deriver's (which rollup catches up first)
        if table == K.CRASH_REPORTS and self._change is not None and kwargs.get("columns") != ROW_COLUMNS:
            change, self._change = self._change, None
            change()
        return self._backend.get_rows(table, *args, **kwargs)


def test_a_day_changed_while_rollup_recounts_it_gets_no_head_rows_and_stays_exact(backend_url, monkeypatch):
    """The slack of the day moved during its recount: its head and top rows would hold a total
    the recount may or may not include (here it counted 9 and the slack says -3 since: 6), so
    they are not written and its report reads the full rows; the next rollup writes them."""
    monkeypatch.setattr(RK, "HEAD_K", 3)
    monkeypatch.setattr(RK, "TOP_K", 4)
    day = DAY.date()
    with open_store(backend_url, background_counters=False) as store:
        store.create_tables()
        a = _save(store, 6, processed_as="A")
        for signature, n in (("B", 3), ("C", 2), ("D", 1)):
            _save(store, n, processed_as=signature)
        changing = ChangedDuringRecount(store.backend, lambda: store.delete_crashes(a[:3]))
        rollup.run_rollup(changing, until=NEXT_DAY, grace_s=0)
        assert store.get_signature_counters("A")[f"daily_{DAY.strftime('%Y-%m-%d')}"] == 3
        assert store.backend.get_row(K.SIGNATURES_SEEN, RK.top_row(day, head=True)) == {}
        assert _top(store, day) == (_counts_from_full_rows(store, day)[:3], 9) == ([("A", 3), ("B", 3), ("C", 2)], 9)
        rollup.run_rollup(store.backend, until=NEXT_DAY, grace_s=0)
        assert store.backend.get_row(K.SIGNATURES_SEEN, RK.top_row(day, head=True)) != {}
        assert _top(store, day) == ([("A", 3), ("B", 3), ("C", 2)], 9)


class RefusingIncrements:
    """A backend whose counter calls fail with an error that is no outage."""

    def __init__(self, backend):
        self._backend = backend

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def increment_many(self, increments):
        from socorro_store.errors import NotACounter  # noqa: PLC0415

        raise NotACounter("not 8 bytes")


def test_a_deletion_without_live_counters_survives_any_error_of_its_queue_counters(backend_url):
    """Retention deletes with no live counters and moves the queue counters itself: an error
    other than an outage there must not raise after the crashes are gone (it only caught
    BackendError and BackendUnavailable, as the counter sender did)."""
    from socorro_store.crashstore import deletion  # noqa: PLC0415

    with open_store(backend_url, background_counters=False) as store:
        store.create_tables()
        ids = _save(store, 2, legacy_processing=0)
        assert sorted(deletion.delete_crashes(RefusingIncrements(store.backend), ids)) == sorted(ids)
        assert store.backend.get_rows(K.CRASH_REPORTS, [K.crash_row_key(cid) for cid in ids]) == {}
