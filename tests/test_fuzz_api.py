"""Hypothesis fuzzing of the crash store's public API on the embedded backend.

Hostile raw crashes, dumps, crash ids, timestamps, processed crashes, unicode (surrogates too),
huge and empty values and wrong types.  Every call either raises a typed ``SocorroStoreError`` and
changes nothing in any table, or succeeds and reads back exactly (as JSON, the documented format).

Counts (inputs tried, typed errors, round trips, partial writes) are printed at the end of the
module and, when ``SOCORRO_FUZZ_STATS`` names a file, written there as JSON (``tools/faults/chaos.py
--fuzz`` uses it).  ``SOCORRO_FUZZ_EXAMPLES`` raises the number of examples per test.
"""

import collections
import json
import math
import os
import uuid
from datetime import date, datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from socorro_store import open_store
from socorro_store.crashstore.crashes import DEFAULT_FORBIDDEN_KEYS
from socorro_store.errors import SocorroStoreError

EXAMPLES = int(os.environ.get("SOCORRO_FUZZ_EXAMPLES", "120"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
STATS = collections.Counter()

HOSTILE_TEXT = ["", " ", "\x00", "../../etc/passwd", "'; DROP TABLE cells; --", "\" OR 1=1 --", "\ud800",
                "ünï::Cödé", "a" * 70_000, "%s%n", "\r\n", "dump", "upload_file_minidump"]
OFFSETS = [timezone.utc, timezone(timedelta(hours=-5)), timezone(timedelta(hours=23, minutes=59)),
           timezone(-timedelta(hours=23, minutes=59))]


def _crash_id(number, day, depth="2"):
    return str(uuid.UUID(int=number))[:-7] + depth + day.strftime("%y%m%d")


valid_ids = st.builds(_crash_id, st.integers(0, 2**128 - 1), st.dates(date(2000, 1, 1), date(2099, 12, 31)))
hostile_ids = st.one_of(
    valid_ids.map(lambda cid: cid.upper()), valid_ids.map(lambda cid: cid[:-6] + "991399"),
    valid_ids.map(lambda cid: cid + "\x00"), valid_ids.map(lambda cid: cid[1:]),
    st.sampled_from(HOSTILE_TEXT), st.text(max_size=50), st.binary(max_size=40), st.integers(), st.none(),
    st.builds(uuid.UUID, st.uuids().map(str)))
crash_ids = st.one_of(valid_ids, valid_ids, valid_ids, hostile_ids)
datetimes = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59),
                         timezones=st.one_of(st.none(), st.sampled_from(OFFSETS)))
timestamps = st.one_of(datetimes.map(lambda d: d.isoformat()), datetimes, datetimes.map(lambda d: d.date()),
                       st.sampled_from(HOSTILE_TEXT), st.text(max_size=30), st.integers(), st.floats(), st.none(),
                       st.just("2016-09-18T12:00:00Z"), st.just("2016-09-18 12:00"))
json_leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=40),
                        st.sampled_from(HOSTILE_TEXT))
json_values = st.recursive(json_leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)), max_leaves=12)
odd_values = st.one_of(st.binary(max_size=8), st.sets(st.integers(), max_size=2), st.builds(object),
                       st.complex_numbers(), datetimes)
values = st.one_of(json_values, json_values, odd_values)
dump_names = st.one_of(st.sampled_from(["upload_file_minidump", "flash1", "memory_report", "dump"]),
                       st.sampled_from(HOSTILE_TEXT), st.text(max_size=140), st.integers())
blobs = st.one_of(st.binary(max_size=3000), st.just(b""), st.builds(bytearray, st.binary(max_size=50)),
                  st.builds(memoryview, st.binary(max_size=50)), st.just(b"\x00" * (10 * 1024 * 1024)),
                  st.text(max_size=20), st.integers(), st.none())
dumps_values = st.one_of(st.none(), st.dictionaries(dump_names, blobs, max_size=3),
                         st.lists(st.binary(max_size=5), max_size=2), st.binary(max_size=5), st.text(max_size=5))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with open_store(f"embedded://{tmp_path_factory.mktemp('fuzz') / 'store'}") as opened:
        opened.create_tables()
        yield opened
    _report()


def _report():
    print("\nfuzz api:", dict(STATS))
    path = os.environ.get("SOCORRO_FUZZ_STATS")
    if path:
        with open(path, "w") as handle:
            json.dump(dict(STATS), handle)


def fingerprint(backend):
    """Every cell of every table (with timestamps): a refused call must not change it."""
    return {table: list(backend.scan(table, include_timestamp=True)) for table in backend.list_tables()}


def as_json(document):
    """What the store promises to give back: ``document`` through JSON (datetimes as ISO text)."""
    def default(value):
        if isinstance(value, (date, datetime)):
            return value.isoformat()
        raise TypeError(type(value).__name__)
    return json.loads(json.dumps(document, allow_nan=False, default=default))


def attempt(store, call, *args):
    """Run ``call``; return (True, result) or (False, typed error); count; check refusals wrote nothing."""
    before = fingerprint(store.backend)
    STATS["inputs_tried"] += 1
    try:
        result = call(*args)
    except SocorroStoreError as exc:
        STATS["typed_errors"] += 1
        changed = fingerprint(store.backend) != before
        STATS["partial_writes"] += changed
        assert not changed, f"refused call {call.__name__} wrote something: {exc!r}"
        return False, exc
    STATS["accepted"] += 1
    return True, result


def _same(a, b):
    """Equality where NaN equals NaN (JSON has no NaN, but be exact about it anyway)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


plausible_times = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31),
                               timezones=st.one_of(st.none(), st.sampled_from(OFFSETS[:2])))


@st.composite
def raw_crashes(draw, crash_id):
    """Half plausible (valid core fields, hostile extras), half hostile in every field."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.one_of(st.none(), st.text(max_size=5), st.lists(st.integers(), max_size=3), st.integers()))
    plausible = draw(st.booleans())
    extras = json_values if plausible else values
    raw = draw(st.dictionaries(st.one_of(st.text(max_size=12), st.sampled_from(HOSTILE_TEXT[:6])), extras,
                               max_size=6))
    if plausible or draw(st.integers(0, 9)):
        raw["submitted_timestamp"] = draw(plausible_times.map(lambda d: d.isoformat()) if plausible else timestamps)
    if draw(st.booleans()):
        raw["uuid"] = crash_id if plausible or draw(st.integers(0, 4)) else draw(crash_ids)
    if draw(st.booleans()):
        raw["legacy_processing"] = draw(st.sampled_from([0, 1, 2, "0", " 2 ", None]) if plausible else
                                        st.one_of(st.sampled_from([True, 3, -1, "x"]), values))
    if draw(st.booleans()):
        raw["ProcessType"] = draw(st.sampled_from(["plugin", "content", "gpu", "default"]) if plausible else
                                  st.one_of(st.sampled_from(["a" * 129, *HOSTILE_TEXT]), values))
    if draw(st.booleans()):
        raw["HangID"] = draw(st.one_of(st.text(max_size=30), st.sampled_from(HOSTILE_TEXT[:-4])) if plausible
                             else values)
    return raw


@FUZZ
@given(data=st.data())
def test_save_raw_crash_is_a_round_trip_or_a_typed_error(store, data):
    crash_id = data.draw(valid_ids if data.draw(st.integers(0, 3)) else hostile_ids, "crash_id")
    raw = data.draw(raw_crashes(crash_id), "raw")
    dumps = data.draw(st.one_of(st.dictionaries(st.sampled_from(["upload_file_minidump", "flash1", "x.y-z"]),
                                                st.binary(max_size=3000), max_size=3), dumps_values), "dumps")
    try:  # a crash id saved by an earlier example: a successful save is a retry, the first stands
        first = store.get_raw_crash(crash_id)
    except SocorroStoreError:
        first = None
    ok, _ = attempt(store, store.save_raw_crash, raw, dumps, crash_id)
    if not ok:
        return
    STATS["round_trips"] += 1
    assert store.get_raw_crash(crash_id) == (first if first is not None else as_json(dict(raw)))
    stored = store.get_raw_dumps(crash_id)
    for name, blob in (dumps or {}).items():
        assert stored[name] == bytes(blob)
    state = store.get_processing_state(crash_id)
    assert "standard" in state["queues"] or state["processed"]  # saved means queued: never a lost crash
    # now a hostile processed crash for it
    processed = data.draw(st.dictionaries(st.text(max_size=10), values, max_size=4), "processed")
    processed["uuid"] = crash_id if data.draw(st.integers(0, 5)) else data.draw(crash_ids)
    if data.draw(st.integers(0, 6)):
        processed["completeddatetime"] = data.draw(timestamps)
    processed["signature"] = data.draw(st.one_of(st.sampled_from(HOSTILE_TEXT), st.text(max_size=20), values))
    for key in data.draw(st.lists(st.sampled_from(DEFAULT_FORBIDDEN_KEYS[:3]), max_size=2)):
        processed[key] = "secret"
    ok, _ = attempt(store, store.save_processed, processed)
    if ok:
        STATS["round_trips"] += 1
        expected = as_json(dict(processed))
        assert store.get_unredacted_processed(processed["uuid"]) == expected
        redacted = store.get_processed(processed["uuid"])
        assert not set(redacted) & {"url", "email", "user_id"}
        assert store.get_processing_state(processed["uuid"])["processed"]


@FUZZ
@given(crash_id=crash_ids, name=st.one_of(st.none(), dump_names))
def test_reads_of_hostile_ids_are_typed(store, crash_id, name):
    for call, args in ((store.get_raw_crash, ()), (store.get_raw_dumps, ()), (store.get_raw_dump, (name,)),
                       (store.get_processed, ()), (store.get_processing_state, ())):
        try:
            call(crash_id, *args)
            STATS["reads_found"] += 1
        except SocorroStoreError:
            STATS["read_typed_errors"] += 1


@FUZZ
@given(ids=st.one_of(crash_ids, st.lists(crash_ids, max_size=3)), signature=st.one_of(values, st.text()),
       start=timestamps, end=timestamps, limit=st.one_of(st.none(), st.integers(-2, 3), st.text(max_size=3)),
       queue=st.one_of(st.sampled_from(["standard", "legacy", "priority"]), st.text(max_size=8), st.none()),
       row=st.one_of(st.text(max_size=20), st.binary(max_size=20), st.integers()))
def test_queries_and_queue_calls_are_typed(store, ids, signature, start, end, limit, queue, row):
    # hostile or unknown ids: enqueue must refuse without writing (known ids are never drawn twice)
    attempt(store, store.enqueue_priority, ids if not isinstance(ids, list) or ids else ["bad"])
    attempt(store, lambda: list(store.crashes_by_signature(signature, start, end)))
    attempt(store, lambda: list(store.crashes_submitted(start, end)))
    attempt(store, store.get_metrics, row)
    attempt(store, store.get_signature_counters, signature)
    try:
        list(store.new_crashes(limit=limit, queue=queue, processor_id="fuzz"))
        STATS["queue_calls"] += 1
    except SocorroStoreError:
        STATS["typed_errors"] += 1
