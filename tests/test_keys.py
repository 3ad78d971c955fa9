"""Every key layout of socorro_store.keys round-trips through its inverse (property-tested)."""

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from socorro_store.errors import InvalidArgument, InvalidCrashID
from socorro_store.schema import keys as K
from socorro_store.schema import queue_keys as QK

HEX = "0123456789abcdef"


@st.composite
def crash_ids(draw):
    def hexes(n):
        return "".join(draw(st.lists(st.sampled_from(HEX), min_size=n, max_size=n)))

    day = draw(st.dates(min_value=datetime(2000, 1, 1).date(), max_value=datetime(2099, 12, 31).date()))
    depth = draw(st.integers(0, 9))
    return f"{hexes(8)}-{hexes(4)}-{hexes(4)}-{hexes(4)}-{hexes(5)}{depth}{day:%y%m%d}"


moments = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31),
                       timezones=st.just(timezone.utc))
signatures = st.one_of(st.none(), st.text(max_size=60))


@given(crash_ids())
def test_crash_row_key_round_trip(crash_id):
    key = K.crash_row_key(crash_id)
    assert key[:1] == crash_id[:1].encode() and key[1:7] == crash_id[-6:].encode()
    assert K.crash_id_from_row_key(key) == crash_id


@pytest.mark.parametrize("bad", [
    "de1bb258-cbbf-4589-a673-34f802160918x", "DE1BB258-cbbf-4589-a673-34f802160918",
    "de1bb258-cbbf-4589-a673-34f802161318",  # month 13
    "de1bb258-cbbf-4589-a673-34f802160230",  # 30 February
    "de1bb258cbbf4589a67334f802160918", "", None, 42,
])
def test_bad_crash_ids_are_rejected(bad):
    with pytest.raises(InvalidCrashID):
        K.validate_crash_id(bad)


@given(moments)
def test_timestamp_round_trip_and_fixed_width(moment):
    raw = K.format_timestamp(moment)
    assert len(raw) == K.TIMESTAMP_LEN
    assert K.parse_key_timestamp(raw) == moment


@given(moments, moments)
def test_timestamp_byte_order_is_time_order(a, b):
    assert (K.format_timestamp(a) < K.format_timestamp(b)) == (a < b)


def test_parse_timestamp_forms():
    expected = datetime(2016, 9, 18, 12, 0, tzinfo=timezone.utc)
    for text in ("2016-09-18T12:00:00Z", "2016-09-18T12:00:00+00:00", "2016-09-18T14:00:00+02:00",
                 "2016-09-18T12:00:00", "2016-09-18 12:00:00.000000"):
        assert K.parse_timestamp(text) == expected
    for bad in ("yesterday", "2016-13-01T00:00:00", "", 12345, None):
        with pytest.raises(InvalidArgument):
            K.parse_timestamp(bad)


@given(crash_ids(), moments)
def test_time_index_key_round_trip(crash_id, moment):
    key = K.time_index_key(crash_id, moment)
    assert key.startswith(crash_id[0].encode())
    assert K.parse_time_index_key(key) == (crash_id, moment)
    low, high = K.time_index_range(crash_id[0], moment, moment + timedelta(microseconds=1))
    assert low <= key < high
    assert K.parse_priority_key(K.priority_key(crash_id, moment)) == (crash_id, moment)


@given(signatures, moments, crash_ids())
def test_signature_index_key_round_trip(signature, moment, crash_id):
    key = K.signature_index_key(signature, moment, crash_id)
    assert K.parse_signature_index_key(key) == (K.signature_name(signature), moment, crash_id)
    low, high = K.signature_index_range(signature)
    assert low <= key < high
    assert K.signature_from_row(K.signature_row(signature)) == K.signature_name(signature)


@given(st.text(max_size=20), st.text(min_size=1, max_size=20), moments, crash_ids())
def test_signature_never_matches_a_longer_one(signature, suffix, moment, crash_id):
    """The rows of signature + suffix are outside the range of signature (prefix-free keys)."""
    other = K.signature_index_key(signature + suffix, moment, crash_id)
    low, high = K.signature_index_range(signature)
    assert not (low <= other < high)


@given(st.binary(max_size=40))
def test_signature_escape_is_injective_and_nul_free(raw):
    escaped = K.escape_signature(raw)
    assert b"\x00" not in escaped
    assert K.unescape_signature(escaped) == raw


@given(signatures, moments, moments, moments, crash_ids())
def test_signature_time_window_is_one_range(signature, t1, t2, moment, crash_id):
    start, end = min(t1, t2), max(t1, t2)
    low, high = K.signature_index_range(signature, start, end)
    key = K.signature_index_key(signature, moment, crash_id)
    assert (low <= key < high) == (start <= moment < end)


@given(st.text(min_size=1, max_size=40),
       st.from_regex(r"[A-Za-z0-9_.\-]{1,20}", fullmatch=True))
def test_hang_layout_round_trip(hang_id, process_type):
    assert K.hang_id_from_row_key(K.hang_row_key(hang_id)) == hang_id
    assert K.process_type_from_hang_column(K.hang_column(process_type)) == process_type


@given(st.from_regex(r"[A-Za-z0-9_.\-]{1,40}", fullmatch=True).filter(lambda n: n != "dump"))
def test_dump_column_round_trip(name):
    assert K.dump_name_from_column(K.dump_column(name)) == name


def test_default_dump_is_stored_as_dump():
    assert K.dump_column("upload_file_minidump") == b"raw_data:dump"
    assert K.dump_name_from_column(b"raw_data:dump") == "upload_file_minidump"
    for bad in ("dump", "", "a/b", "x" * 129, None, "nul\x00"):
        with pytest.raises(InvalidArgument):
            K.dump_column(bad)


@given(moments)
def test_metrics_rows_round_trip(moment):
    rows = K.metrics_rows(moment)
    assert [len(rows[level]) for level in K.LEVELS] == [16, 13, 10, 7, 4]
    for level, row in rows.items():
        found, start = K.parse_metrics_row(row)
        assert found == level
        assert start <= moment < K.interval_end(level, start)
    for level, column in K.signature_counter_columns(moment).items():
        found, start = K.parse_signature_counter_column(column)
        assert found == level and K.metrics_rows(start)[level] == rows[level]


def test_metrics_row_validation():
    assert K.parse_metrics_row(b"crash_report_queues") == ("queues", None)
    for bad in (b"2016-02-30", b"2016-9-1", b"yesterday", b"2016-09-18T24"):
        with pytest.raises(InvalidArgument):
            K.parse_metrics_row(bad)


@given(st.integers(-(2**63), 2**63 - 1))
def test_counter_encoding_round_trip(value):
    raw = K.encode_counter(value)
    assert len(raw) == 8 and K.decode_counter(raw) == value


def test_counter_encoding_rejects_non_counters():
    for bad in (2**63, True, 1.5):
        with pytest.raises(InvalidArgument):
            K.encode_counter(bad)
    with pytest.raises(InvalidArgument):
        K.decode_counter(b"1234")


def test_time_index_helpers_agree_with_the_key_layout():
    from datetime import datetime, timezone

    moment = datetime(2016, 9, 18, 12, 30, 1, 5, tzinfo=timezone.utc)
    cid = "de1bb258-cbbf-4589-a673-34f802160918"
    key = K.time_index_key(cid, moment)
    assert K.time_index_stamp(key) == K.format_timestamp(moment)
    low, high = K.time_index_range("d", moment, None)
    assert low <= key < high
    pkey = K.priority_key(cid, moment)
    plow, phigh = K.time_index_range("d", None, None, K.PRIORITY_PREFIX)
    assert plow <= pkey < phigh and not (low <= pkey < high)
    assert K.time_index_order(pkey, K.PRIORITY_PREFIX) == K.time_index_order(key)
    column = K.hang_column("plugin")
    assert K.is_hang_column(column) and not K.is_hang_column(K.HANG_COLUMN_PREFIX)
    assert K.signature_counter_column("hour", b"2016-09-18T12") == K.signature_counter_columns(moment)["hour"]


@given(st.from_regex(r"[a-z0-9_\-]{1,64}", fullmatch=True), st.integers(0, 4102444800000), st.integers(0, 2**24 - 1))
def test_job_run_layouts_round_trip(job, started_ms, nonce):
    run_id = K.new_run_id(started_ms, "%06x" % nonce)
    assert K.parse_job_run_key(K.job_run_key(job, run_id)) == (job, run_id)
    assert K.parse_run_id_key(K.run_id_key(run_id)) == run_id
    assert not K.run_id_key(run_id).startswith(K.job_run_prefix())  # never listed as a run
    with pytest.raises(InvalidArgument):
        K.run_id_key(run_id + "x")


@given(crash_ids())
def test_crash_day_prefix_is_a_prefix_of_the_day_s_crash_rows(crash_id):
    assert K.crash_row_key(crash_id).startswith(K.crash_day_prefix(crash_id[0], K.crash_date(crash_id)))


@given(crash_ids(), moments, st.booleans())
def test_claim_cell_round_trip(crash_id, moment, priority):
    queue_row = K.priority_key(crash_id, moment) if priority else K.time_index_key(crash_id, moment)
    row, column = QK.claim_cell(queue_row)
    assert QK.parse_claim_column(column) == queue_row
    prefix, minute = QK.parse_claim_row_key(row)
    assert prefix == (K.PRIORITY_PREFIX if priority else b"")
    assert minute == K.format_timestamp(moment)[:16]  # one claim row per minute of queue time
    assert row[:1] not in K.SALTS.encode() and row > K.PRIORITY_PREFIX + b"\xff"  # no queue scan meets it
    assert row < QK.DEAD_LETTER_PREFIX


def test_claim_keys_refuse_other_keys():
    for bad in (b"", b"x", b"~claims/2016", b"~dead/abc"):
        with pytest.raises(InvalidArgument):
            QK.parse_claim_row_key(bad)
    with pytest.raises(InvalidArgument):
        QK.parse_claim_column(b"processor_state:dead")
    with pytest.raises(InvalidArgument):
        QK.claim_row_key(b"0short")


@given(signatures, moments)
def test_first_seen_cells_round_trip(signature, moment):
    cells = K.first_seen_cells(signature, moment)
    assert set(cells) == set(K.SIGNATURE_LEVELS)
    for level, (row, column) in cells.items():
        found, start, name = K.parse_first_seen_cell(row, column)
        assert (found, name) == (level, K.signature_name(signature))
        assert row == K.metrics_row(moment, level) and K.metrics_row(start, level) == row
