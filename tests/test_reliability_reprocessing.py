"""Issue 32, reprocessing races: a request made while a priority save runs is kept."""

from store_helpers import crash_id, processed, raw_crash

from socorro_store.crashstore import crashes
from socorro_store.schema import keys as K


class RequestingBackend:
    """A backend that, right after the check-and-put serving crash ``cid``'s priority request
    (its flag emptied), lets another client ask for the crash's reprocessing again: the window
    between a save's step 3 and its clean-up."""

    def __init__(self, backend, request):
        self._backend, self._request = backend, request

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def check_and_put_many(self, table, items):
        items = list(items)
        result = self._backend.check_and_put_many(table, items)
        if self._request is not None and any(column == K.COL_PRIORITY and puts == {K.COL_PRIORITY: b""}
                                             for _row, column, _expected, puts in items):
            request, self._request = self._request, None
            request()
        return result


def test_a_request_made_during_a_priority_save_is_kept(store):
    cid = crash_id("7")
    store.save_raw_crash(raw_crash(cid), {}, cid)
    store.save_processed(processed(cid, "first"))
    assert store.enqueue_priority([cid]) == 1
    assert list(store.new_crashes(queue="priority")) == [cid]
    held = store.held_claims
    racing = RequestingBackend(store.backend, lambda: store.enqueue_priority([cid]))
    crashes.write_processed(racing, [crashes.prepare_processed(processed(cid, "second"))], store.live_counters, held)
    # the second request is pending: flagged, queued, counted, and handed out
    state = store.get_processing_state(cid)
    assert state["priority_processing"] and state["queues"] == ["priority"]
    assert store.queue_sizes()["priority"] == 1
    assert list(store.new_crashes(queue="priority")) == [cid]
    store.save_processed(processed(cid, "third"))
    assert store.queue_sizes()["priority"] == 0
    assert store.get_processing_state(cid)["priority_processing"] is False
    assert list(store.new_crashes(queue="priority")) == []
    # an empty flag is "none pending": a later request is taken as any other
    assert store.enqueue_priority([cid]) == 1 and store.queue_sizes()["priority"] == 1


def test_two_saves_of_one_reprocessing_move_its_counts_once(store):
    """Issue 32, defect 2: a priority lease taken over, both processors save signature B from the
    state read at take time (A): the counts move once, A -1 and B +1 (not A -1 -1, B +2), and a
    processing error is counted once."""
    from datetime import datetime, timedelta, timezone  # noqa: PLC0415

    from socorro_store.crashstore.claims import Held, HeldClaims  # noqa: PLC0415
    from socorro_store.crashstore.states import read_states  # noqa: PLC0415

    cid = crash_id("5")
    store.save_raw_crash(raw_crash(cid), {}, cid)
    store.save_processed(processed(cid, "sig::A"))
    assert store.enqueue_priority([cid]) == 1
    stale = read_states(store.backend, [cid])[cid]
    expires = int((datetime.now(timezone.utc) + timedelta(minutes=5)).timestamp() * 1000)
    for n, change in enumerate([dict(signature="sig::B"), dict(signature="sig::B"),
                                dict(signature="sig::B", success=False), dict(signature="sig::B", success=False)]):
        held = HeldClaims()  # each processor holds the crash with the state its take read
        if n == 2:
            stale = read_states(store.backend, [cid])[cid]  # a later request, read by both again
        held.add(Held(cid, b"row", f"token{n}", f"p{n}", expires, dict(stale)))
        crashes.write_processed(store.backend, [crashes.prepare_processed(processed(cid, **change))],
                                store.live_counters, held)
    store.flush_counters()
    day = "daily_2016-09-18"
    assert store.get_signature_counters("sig::A").get(day, 0) == 0
    assert store.get_signature_counters("sig::B")[day] == 1
    assert store.get_metrics("2016-09-18").get("crash_report_processing_errors", 0) == 1
    assert store.get_processed(cid)["signature"] == "sig::B"
