"""The library behind the operator commands: deletion, crash summary, listing, queue status,
top-crashers and signature reports, and opening a store without creating one.  Real embedded
stores on disk."""

import os
import random
import time
from datetime import timedelta

import pytest
from store_helpers import BASE_TIME, all_rows, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.backends import open_backend
from socorro_store.errors import (
    CrashIDNotFound,
    InvalidArgument,
    InvalidCrashID,
    StoreNotFound,
)
from socorro_store.jobs import scrutiny
from socorro_store.schema import keys as K
from socorro_store.schema.specs import FamilySpec, TableSpec

RNG = random.Random(14)


@pytest.fixture
def store(embedded_url):
    with open_store(embedded_url) as opened:
        opened.create_tables()
        yield opened


def save(store, cid, when=BASE_TIME, dumps=None, **extra):
    store.save_raw_crash(raw_crash(cid, submitted=when, **extra), dumps or {}, cid)
    return cid


def snapshot(backend, tables):
    return {t: list(backend.scan(t)) for t in tables}


def clean(report):
    return {t: (c["missing"], c["orphan"]) for t, c in report.items() if c["missing"] or c["orphan"]}


# -- delete ------------------------------------------------------------------------------------

def test_delete_removes_crash_pointers_queue_rows_and_claims_and_takes_back_their_counts(store):
    b = store.backend
    done = save(store, crash_id("1", rng=RNG), dumps={"upload_file_minidump": b"MDMP" * 10},
                legacy_processing=0, HangID="hang-1", ProcessType="plugin")
    other_side = save(store, crash_id("2", rng=RNG), BASE_TIME + timedelta(seconds=1), HangID="hang-1")
    queued = save(store, crash_id("3", rng=RNG), BASE_TIME + timedelta(seconds=2), legacy_processing=0)
    keep = save(store, crash_id("4", rng=RNG), BASE_TIME + timedelta(seconds=3))
    store.save_processed(processed(done, "Sig::A"))
    store.save_processed(processed(keep, "Sig::A"))
    store.enqueue_priority([done])
    claimed = list(store.new_crashes(limit=10, processor_id="p1"))
    assert queued in claimed
    assert store.get_processing_state(queued)["claim"] is not None
    store.flush_counters()
    day = BASE_TIME.strftime("%Y-%m-%d")
    metrics_before, sig_before = store.get_metrics(day), store.get_signature_counters("Sig::A")
    queues_before = store.queue_sizes()

    assert store.delete_crashes([done, queued]) == [done, queued]

    for cid in (done, queued):
        with pytest.raises(CrashIDNotFound):
            store.get_raw_crash(cid)
        assert cid not in list(store.crashes_submitted(BASE_TIME, BASE_TIME + timedelta(days=1)))
    assert [row for row, _cells in b.scan(K.UNPROCESSED_FLAG) if queued.encode() in row] == []  # claims live on queue rows
    assert store.hang_pair("hang-1") == {"default": other_side}
    assert list(store.crashes_by_signature("Sig::A")) == [keep]
    # the counts the two crash rows accounted for go with them, the hang pair they made too
    # (derived); the queue sizes lose what the deletion dequeued: queued's standard and legacy
    # pointers, done's priority request
    metrics = store.get_metrics(day)
    assert {name: metrics_before[name] - metrics.get(name, 0) for name in metrics_before} == {
        **{name: 0 for name in metrics_before}, "submitted_crash_reports": 2,
        "submitted_crash_reports_legacy_throttle_0": 2, "submitted_oop_plugin_crash_reports": 1,
        "submitted_crash_report_hang_pairs": 1}
    assert {k: sig_before[k] - n for k, n in store.get_signature_counters("Sig::A").items()} == \
        {k: 1 for k in sig_before}
    queues = store.queue_sizes()
    assert {k: queues_before[k] - queues[k] for k in ("standard", "legacy", "priority")} == \
        {"standard": 1, "legacy": 1, "priority": 1}
    # nothing left for verify-indexes to repair
    assert clean(scrutiny.verify_indexes(b, orphan_age_s=0)) == {}
    remaining = {cid for cid in store.crashes_submitted(BASE_TIME, BASE_TIME + timedelta(days=1))}
    assert remaining == {other_side, keep}
    # deleting again: not found, unless missing_ok
    with pytest.raises(CrashIDNotFound):
        store.delete_crashes([done])
    assert store.delete_crashes([done], missing_ok=True) == []


def test_delete_validates_everything_before_deleting(store):
    cid = save(store, crash_id("5", rng=RNG))
    store.flush_counters()  # the save's counters are sent (in the background on a remote backend)
    before = all_rows(store.backend)
    with pytest.raises(InvalidCrashID):
        store.delete_crashes([cid, "not-a-crash-id"])
    with pytest.raises(CrashIDNotFound):
        store.delete_crashes([cid, crash_id("6", rng=RNG)])
    with pytest.raises(InvalidArgument):
        store.delete_crashes(42)
    assert all_rows(store.backend) == before


def test_delete_last_hang_side_removes_the_hang_row(store):
    cid = save(store, crash_id("7", rng=RNG), HangID="lonely")
    store.delete_crashes(cid)
    assert store.backend.get_row(K.HANG_ID, K.hang_row_key("lonely")) == {}
    assert clean(scrutiny.verify_indexes(store.backend, orphan_age_s=0)) == {}


# -- crash summary, listing ----------------------------------------------------------------------

def test_crash_summary_and_list(store):
    first = save(store, crash_id("8", rng=RNG), dumps={"upload_file_minidump": b"x" * 1234, "flash1": b"y" * 7},
                 ProcessType="content")
    second = save(store, crash_id("0", rng=RNG), BASE_TIME + timedelta(minutes=5))
    third = save(store, crash_id("f", rng=RNG), BASE_TIME + timedelta(minutes=9))
    store.save_processed(processed(first, "Sig::B"))
    list(store.new_crashes(limit=1, processor_id="worker-9"))  # claims `second`, the oldest queued
    summary = store.crash_summary(first)
    assert summary["dumps"] == {"flash1": 7, "upload_file_minidump": 1234}
    assert (summary["product"], summary["version"], summary["process_type"]) == ("Firefox", "120.0", "content")
    assert summary["processed"] and summary["signature"] == "Sig::B" and summary["queues"] == []
    claimed = store.crash_summary(second)
    assert claimed["queues"] == ["standard"] and claimed["claim"]["processor"] == "worker-9"
    assert claimed["claim"]["live"] is True and claimed["dumps"] == {} and claimed["attempts"] == 0  # none expired
    assert summary["attempts"] == 0
    day = (BASE_TIME.replace(hour=0), BASE_TIME.replace(hour=0) + timedelta(days=1))
    assert list(store.list_crashes(*day)) == [first, second, third]
    assert list(store.list_crashes(*day, limit=2)) == [first, second]
    assert list(store.list_crashes(*day, signature="Sig::B")) == [first]
    store.enqueue_priority(third)
    details = list(store.list_crashes(*day, details=True))
    assert [(d["crash_id"], d["signature"], d["state"]) for d in details] == [
        (first, "Sig::B", "processed"), (second, None, "queued"), (third, None, "priority")]
    with pytest.raises(InvalidArgument):
        store.list_crashes(*day, limit=-1)
    with pytest.raises(CrashIDNotFound):
        store.crash_summary(crash_id("1", rng=RNG))


# -- queue status --------------------------------------------------------------------------------

def test_queue_status(store):
    ids = [save(store, crash_id(s, rng=RNG), BASE_TIME + timedelta(seconds=i), legacy_processing=i % 2)
           for i, s in enumerate("0123456789")]
    list(store.new_crashes(limit=3, processor_id="p"))
    store.save_processed(processed(ids[0]))
    store.enqueue_priority([ids[5]])
    now = BASE_TIME + timedelta(minutes=10)
    status = store.queue_status(now=now)
    standard, legacy, priority = (status["queues"][q] for q in ("standard", "legacy", "priority"))
    assert standard["indexed"] == standard["counted"] == 9
    assert standard["oldest"] == K.format_timestamp(BASE_TIME + timedelta(seconds=1)).decode()
    assert standard["oldest_age_s"] == 599.0
    assert standard["leased"] == 2  # 3 claimed, one of them processed since (claims are live: lease 300 s from now)
    assert legacy["indexed"] == legacy["counted"] == 4  # legacy_processing 0: ids 2, 4, 6, 8
    assert priority["indexed"] == priority["counted"] == 1 and priority["leased"] == 0
    assert status["dead_lettered"] == 0


def test_queue_status_shows_dead_letters(store):
    poison = save(store, crash_id("a", rng=RNG))
    assert list(store.new_crashes(limit=1, processor_id="p", lease_seconds=0.2, max_attempts=1)) == [poison]
    time.sleep(0.25)  # the processor died: its lease runs out without a save
    assert list(store.new_crashes(limit=1, processor_id="p", lease_seconds=0.2, max_attempts=1)) == []
    status = store.queue_status()
    assert status["dead_lettered"] == 1 and status["dead_lettered_ids"] == [poison]
    assert status["queues"]["standard"]["indexed"] == 1  # still queued, not handed out


# -- reports ---------------------------------------------------------------------------------------

def test_top_signatures_ranks_against_the_previous_period_and_reads_no_crash_row(store):
    day1, day2 = BASE_TIME - timedelta(days=1), BASE_TIME
    plan = [(day1, "A", 3), (day1, "B", 1), (day2, "A", 1), (day2, "B", 2), (day2, "C", 1), (day2, None, 1)]
    salts = iter("0123456789abcdef")
    for when, signature, n in plan:
        for i in range(n):
            cid = save(store, crash_id(next(salts), day=when, rng=RNG), when + timedelta(minutes=i))
            store.save_processed(processed(cid, signature))
    store.settle()  # derived: the deriver reads crash rows, the report never does
    spied = []
    real_scan, real_get_rows = store.backend.scan, store.backend.get_rows
    store.backend.scan = lambda table, *a, **kw: spied.append(table) or real_scan(table, *a, **kw)
    store.backend.get_rows = lambda table, *a, **kw: spied.append(table) or real_get_rows(table, *a, **kw)
    start = day2.replace(hour=0)
    report = store.top_signatures(start, start + timedelta(days=1))
    assert set(spied) == {K.SIGNATURES_SEEN, K.METRICS}  # the daily rankings, then the submitted counts
    rows = [(s["rank"], s["signature"], s["count"], s["previous_rank"], s["movement"]) for s in report["signatures"]]
    assert rows == [(1, "B", 2, 2, "up"), (2, "##null##", 1, None, "new"), (3, "A", 1, 1, "down"),
                    (4, "C", 1, None, "new")]
    assert report["total"] == 5 and report["submitted"] == 5
    assert report["signatures"][0]["share"] == 0.4
    assert [s["signature"] for s in store.top_signatures(start, start + timedelta(days=1), limit=1)["signatures"]] == ["B"]
    hourly = store.top_signatures(day2, day2 + timedelta(hours=1))
    assert hourly["level"] == "hour" and hourly["total"] == 5  # every day-2 crash is in its first hour
    with pytest.raises(InvalidArgument):
        store.top_signatures(day2 + timedelta(minutes=30), day2 + timedelta(hours=2))
    with pytest.raises(InvalidArgument):
        store.top_signatures(day2, day2)


def test_signature_report(store):
    for i, when in enumerate([BASE_TIME - timedelta(days=3), BASE_TIME, BASE_TIME + timedelta(hours=2)]):
        cid = save(store, crash_id("0123"[i], day=when, rng=RNG), when)
        store.save_processed(processed(cid, "Sig::C"))
    report = store.signature_report("Sig::C", now=BASE_TIME + timedelta(hours=5))
    assert report["first_seen"] == {"level": "hour", "start": (BASE_TIME - timedelta(days=3)).isoformat()}
    assert report["counters"]["day"] == {"2016-09-15": 1, "2016-09-18": 2}
    assert report["counters"]["year"] == {"2016": 3}
    assert len(report["hourly"]) == 48 and report["hourly"][-1] == ["2016-09-18T17", 0]
    assert dict(report["hourly"])["2016-09-18T12"] == 1 and dict(report["hourly"])["2016-09-18T14"] == 1
    assert len(report["daily"]) == 30 and report["daily"][-1] == ["2016-09-18", 2]
    assert dict(report["daily"])["2016-09-15"] == 1
    assert store.signature_report("never-seen")["first_seen"] is None


# -- opening without creating ----------------------------------------------------------------------

def test_open_without_create(tmp_path):
    path = tmp_path / "typo"
    with pytest.raises(StoreNotFound, match="no store at .*tables create"):
        open_backend(f"embedded://{path}", create=False)
    assert not os.path.exists(path)
    with open_backend(f"embedded://{path}") as opened:  # opening creates nothing ...
        assert opened.list_tables() == []
    assert not os.path.exists(path)
    with open_backend(f"embedded://{path}") as creating:  # ... creating a table makes the store
        creating.create_table(TableSpec("t", (FamilySpec("f"),)))
    with open_backend(f"embedded://{path}", create=False) as existing:
        assert existing.list_tables() == ["t"]
