"""Request sizes through the gateway: framed transport's frame limit, buffered big crashes.

Every test talks to a real ``socorro-store serve`` on loopback through the hbase backend
(happybase); the framed gateways here run with HBase's default 2 MB frame limit.
"""

import random
import sys
import uuid

import happybase  # noqa: F401  (registers the Hbase_thrift module)
import pytest
from servers.gateway import Gateway
from hypothesis import given, settings
from hypothesis import strategies as st
from store_helpers import all_rows, crash_id, processed, raw_crash
from thriftpy2.protocol import TBinaryProtocol, TCompactProtocol
from thriftpy2.thrift import TMessageType
from thriftpy2.transport import TMemoryBuffer

from socorro_store import open_store
from socorro_store.backends import Increment, RowMutation, open_backend
from socorro_store.backends.hbase import thrift_sizes as sizes
from socorro_store.config import parse_url
from socorro_store.errors import ConfigError, InvalidArgument, RequestTooLarge
from socorro_store.schema import keys as K
from socorro_store.schema.specs import FamilySpec, TableSpec

Hbase_thrift = sys.modules["Hbase_thrift"]
MB = 1024 * 1024
SETTING = "hbase.regionserver.thrift.framed.max_frame_size_in_mb"


def _dump(size, seed):
    return random.Random(seed).randbytes(size)


class RealHBaseServer:
    """A real HBase's framed/compact Thrift server, addressed like a :class:`Gateway`."""

    def __init__(self, base_url):
        self.base_url, self.session = base_url, "f" + uuid.uuid4().hex[:6]

    def url(self, table_prefix, **options):
        query = "".join(f"&{k}={v}" for k, v in options.items())
        return f"{self.base_url}&table_prefix={self.session}{table_prefix}{query}"


@pytest.fixture(scope="module", params=["gateway", "hbase-real"])
def framed_2mb(request, tmp_path_factory):
    """A framed/compact server with HBase's default 2 MB frame limit: our gateway (no
    --max-frame-mb), or HBase's own Thrift server, which holds the client to the real limit."""
    if request.param == "hbase-real":
        yield RealHBaseServer(request.getfixturevalue("hbase_real_framed_compact_url"))
        return
    gateway = Gateway(tmp_path_factory.mktemp("framed-2mb"), "framed", "compact")
    yield gateway
    gateway.stop()


def _store(gateway, tag, **options):
    store = open_store(gateway.url(table_prefix=tag, **options))
    store.create_tables()
    return store


# -- the size bounds against thriftpy2's real encoders ----------------------------------------

def _encoded_size(protocol_class, method, **args):
    buffer = TMemoryBuffer()
    protocol = protocol_class(buffer)
    call_args = getattr(Hbase_thrift.Hbase, f"{method}_args")(**args)
    protocol.write_message_begin(method, TMessageType.CALL, 1)
    call_args.write(protocol)
    protocol.write_message_end()
    return len(buffer.getvalue())


cells = st.dictionaries(st.binary(min_size=1, max_size=40).map(lambda q: b"cf:" + q),
                        st.binary(max_size=3000), max_size=6)
rows = st.lists(st.tuples(st.binary(min_size=1, max_size=300), cells), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(rows=rows, table=st.binary(min_size=1, max_size=60), timestamp=st.none() | st.integers(0, 2**63 - 1))
def test_mutate_rows_bound_covers_both_protocols(rows, table, timestamp):
    batches = [Hbase_thrift.BatchMutation(row=row, mutations=[
        Hbase_thrift.Mutation(isDelete=False, column=c, value=v) for c, v in puts.items()]
        + [Hbase_thrift.Mutation(isDelete=True, column=b"cf")]) for row, puts in rows]
    bound = sizes.request_bytes(table, [sizes.batch_mutation_bytes(b) for b in batches])
    for protocol in (TBinaryProtocol, TCompactProtocol):
        if timestamp is None:
            actual = _encoded_size(protocol, "mutateRows", tableName=table, rowBatches=batches, attributes={})
        else:
            actual = _encoded_size(protocol, "mutateRowsTs", tableName=table, rowBatches=batches,
                                   timestamp=timestamp, attributes={})
        assert actual <= bound
        # loose only by the per-item overheads, never by a multiple of the payload
        n_cells = sum(len(b.mutations) for b in batches)
        assert bound - actual <= sizes.REQUEST_OVERHEAD + sizes.ROW_OVERHEAD * len(batches) + sizes.CELL_OVERHEAD * n_cells


@settings(max_examples=30, deadline=None)
@given(row=st.binary(min_size=1, max_size=300), values=cells.filter(bool),
       expected=st.none() | st.binary(max_size=100))
def test_append_and_check_and_put_bounds_cover_both_protocols(row, values, expected):
    columns = sorted(values)
    append = Hbase_thrift.TAppend(table=b"t", row=row, columns=columns, values=[values[c] for c in columns])
    mutation = Hbase_thrift.Mutation(isDelete=False, column=columns[0], value=values[columns[0]])
    incs = [Hbase_thrift.TIncrement(table=b"t", row=row, column=c, ammount=-(2**63)) for c in columns]
    for protocol in (TBinaryProtocol, TCompactProtocol):
        assert _encoded_size(protocol, "append", append=append) <= sizes.append_bytes(append)
        assert _encoded_size(protocol, "checkAndPut", tableName=b"t", row=row, column=columns[0],
                             value=expected, mput=mutation, attributes={}) <= \
            sizes.check_and_put_bytes(b"t", row, columns[0], expected, mutation)
        assert _encoded_size(protocol, "incrementRows", increments=incs) <= \
            sizes.request_bytes(b"", [sizes.increment_bytes(i) for i in incs])


# -- the URL option ---------------------------------------------------------------------------

def test_max_frame_mb_defaults_to_hbase_2mb_on_framed_only():
    assert parse_url("hbase://h?transport=framed").options["max_frame_mb"] == 2
    assert parse_url("hbase://h?transport=framed&max_frame_mb=16").options["max_frame_mb"] == 16
    assert parse_url("hbase://h").options["max_frame_mb"] is None
    with open_backend("hbase://127.0.0.1:1?transport=framed&max_frame_mb=0.5") as backend:
        assert backend.max_request_bytes == MB // 2
    with open_backend("hbase://127.0.0.1:1") as backend:
        assert backend.max_request_bytes is None


@pytest.mark.parametrize("query", ["transport=framed&max_frame_mb=0", "transport=framed&max_frame_mb=-1",
                                   "transport=framed&max_frame_mb=two", "transport=framed&max_frame_mb=nan",
                                   "transport=framed&max_frame_mb=4096", "max_frame_mb=2",
                                   "transport=buffered&max_frame_mb=2"])
def test_bad_max_frame_mb_is_a_config_error(query):
    with pytest.raises(ConfigError, match="max_frame_mb"):
        parse_url(f"hbase://h?{query}")


# -- framed, 2 MB: batches split, oversized crashes refused up front ---------------------------

def test_batch_of_150kb_crashes_is_split_to_fit_2mb_frames(framed_2mb):
    with _store(framed_2mb, "batch") as store:
        ids = [crash_id("a", rng=random.Random(i)) for i in range(30)]
        dumps = {cid: _dump(150 * 1024, cid) for cid in ids}
        before = store.backend.calls["mutate_rows"]
        assert store.save_raw_crashes([(raw_crash(cid), {"upload_file_minidump": dumps[cid]}, cid) for cid in ids]) == 30
        # one call per pointer table, and 30 x 150 KB of crash rows need at least 3 frames of 2 MB
        pointer_tables = set(all_rows(store.backend)) & set(K.CRASH_TABLES[:K.CRASH_TABLES.index(K.CRASH_REPORTS)])
        assert store.backend.calls["mutate_rows"] - before >= len(pointer_tables) + 3
        for cid in ids:
            assert store.get_raw_dump(cid) == dumps[cid]
        assert sorted(store.crashes_submitted("2016-09-18", "2016-09-19")) == sorted(ids)
        docs = [processed(cid, json_dump={"blob": dumps[cid][:100 * 1024].hex()}) for cid in ids]
        store.save_processed_crashes(docs)
        for cid, doc in zip(ids, docs):
            assert store.get_unredacted_processed(cid) == doc
        assert list(store.new_crashes()) == []


def test_3mb_crash_is_refused_before_any_write(framed_2mb):
    with _store(framed_2mb, "big") as store:
        cid = crash_id("b")
        before = dict(store.backend.calls)
        with pytest.raises(RequestTooLarge, match=SETTING) as caught:
            store.save_raw_crash(raw_crash(cid), {"upload_file_minidump": _dump(3 * MB, 1)}, cid)
        assert caught.value.limit == 2 * MB and caught.value.size > 3 * MB
        assert "2097152-byte frame limit" in str(caught.value)
        assert isinstance(caught.value, InvalidArgument)  # bad input, not an outage: never retried
        assert store.backend.calls.get("mutate_rows", 0) == before.get("mutate_rows", 0)
        assert all_rows(store.backend) == {}
        # one oversized crash fails a whole batch, before any of it is written
        small = crash_id("c")
        with pytest.raises(RequestTooLarge):
            store.save_raw_crashes([(raw_crash(small), {"upload_file_minidump": b"x" * 1000}, small),
                                    (raw_crash(cid), {"upload_file_minidump": _dump(3 * MB, 1)}, cid)])
        assert all_rows(store.backend) == {}


def test_processed_crash_over_the_frame_is_refused_before_any_write(framed_2mb):
    with _store(framed_2mb, "bigproc") as store:
        cid = crash_id("d")
        store.save_raw_crash(raw_crash(cid), {"upload_file_minidump": b"MDMP"}, cid)
        store.flush_counters()  # the saves' counters are sent (in the background on a remote backend)
        written = all_rows(store.backend)
        with pytest.raises(RequestTooLarge, match=SETTING):
            store.save_processed(processed(cid, json_dump={"blob": "x" * (3 * MB)}))
        assert all_rows(store.backend) == written  # no signature pointer, queue pointers intact
        assert store.get_processing_state(cid)["processed"] is False


def test_backend_calls_that_cannot_fit_are_refused_and_write_nothing(framed_2mb):
    with open_backend(framed_2mb.url(table_prefix="calls")) as backend:
        backend.create_table(TableSpec("t", (FamilySpec("cf"),)))
        big = b"v" * (2 * MB)
        with pytest.raises(RequestTooLarge, match=SETTING):
            backend.mutate_rows("t", [RowMutation(b"small", {b"cf:a": b"1"}), RowMutation(b"big", {b"cf:a": big})])
        with pytest.raises(RequestTooLarge, match=SETTING):
            backend.append("t", b"big", {b"cf:a": big})
        with pytest.raises(RequestTooLarge, match=SETTING):
            backend.append_many("t", [(b"small", {b"cf:a": b"1"}), (b"big", {b"cf:a": big})])
        with pytest.raises(RequestTooLarge, match=SETTING):
            backend.check_and_put("t", b"big", b"cf:a", None, {b"cf:a": big})
        with pytest.raises(RequestTooLarge, match=SETTING):  # the follow-up put of the other cells
            backend.check_and_put("t", b"big", b"cf:a", None, {b"cf:a": b"1", b"cf:b": big, b"cf:c": big})
        with pytest.raises(RequestTooLarge, match=SETTING):
            backend.check_and_put_many("t", [(b"small", b"cf:a", None, {b"cf:a": b"1"}),
                                             (b"big", b"cf:a", None, {b"cf:a": big})])
        assert list(backend.scan("t")) == []


def test_batches_split_at_the_frame_limit_and_all_rows_land(framed_2mb):
    with open_backend(framed_2mb.url(table_prefix="split")) as backend:
        backend.create_table(TableSpec("t", (FamilySpec("cf"),)))
        values = {b"r%03d" % i: _dump(300 * 1024, i) for i in range(20)}  # ~6 MB
        backend.mutate_rows("t", [RowMutation(row, {b"cf:v": v}) for row, v in values.items()])
        # 2 MB frames hold 6 rows of 300 KB: ceil(20 / 6) calls
        assert backend.calls["mutate_rows"] == 4
        assert backend.get_rows("t", list(values)) == {row: {b"cf:v": v} for row, v in values.items()}
        # a big increment batch is split too, and every increment is applied once
        incs = [Increment("t", b"c%05d" % i, b"cf:" + b"q" * 200) for i in range(8000)]
        backend.increment_many(incs)
        assert backend.calls["increment_many"] >= 2
        counts = backend.get_rows("t", [i.row for i in incs])
        assert all(cells[b"cf:" + b"q" * 200] == (1).to_bytes(8, "big") for cells in counts.values())
        assert len(counts) == 8000


def test_reply_over_the_frame_limit_is_read(tmp_path):
    """Frame limits bound requests only: HBase's TFramedTransport checks the frames it reads,
    not those it writes, and so does the gateway; a 3 MB cell reads back over 2 MB frames."""
    directory = tmp_path / "store"
    cid, dump = crash_id("e"), _dump(3 * MB, 2)
    gateway = Gateway(directory, "framed", "compact", ["--max-frame-mb", "8"])
    try:
        with _store(gateway, "reply", max_frame_mb=8) as store:
            store.save_raw_crash(raw_crash(cid), {"upload_file_minidump": dump}, cid)
    finally:
        gateway.stop()
    gateway = Gateway(directory, "framed", "compact")
    try:
        with open_store(gateway.url(table_prefix="reply")) as store:
            assert store.backend.max_request_bytes == 2 * MB
            assert store.get_raw_dump(cid) == dump
            assert store.get_raw_dumps(cid) == {"upload_file_minidump": dump}
            assert [c for c in store.crashes_submitted("2016-09-18", "2016-09-19")] == [cid]
    finally:
        gateway.stop()


# -- buffered: no frame limit, crashes up to the 10 MiB cell cap --------------------------------

@pytest.mark.parametrize("size_mb", [3, 9])
def test_big_crashes_round_trip_over_buffered(gateway_buffered_binary, size_mb):
    with _store(gateway_buffered_binary, f"buf{size_mb}") as store:
        assert store.backend.max_request_bytes is None
        cid = crash_id("f")
        dumps = {"upload_file_minidump": _dump(size_mb * MB, size_mb),
                 "upload_file_minidump_browser": _dump(MB, size_mb + 100)}
        raw = raw_crash(cid, Notes="n" * (MB // 2))
        store.save_raw_crash(raw, dumps, cid)
        assert store.get_raw_crash(cid) == raw
        assert store.get_raw_dumps(cid) == dumps
        assert store.get_raw_dump(cid) == dumps["upload_file_minidump"]
        doc = processed(cid, json_dump={"blob": "p" * (size_mb * MB)})
        store.save_processed(doc)
        assert store.get_unredacted_processed(cid) == doc


@pytest.mark.slow  # opt-in: the peak also moves with how glibc spreads threads over arenas
def test_buffered_gateway_memory_stays_proportional_to_one_request(tmp_path, monkeypatch):
    # glibc would serve later 9 MB blocks from per-thread arenas it keeps (its mmap threshold
    # rises after the first free): a fixed threshold returns every big block to the system, so
    # the peak measures what the gateway holds, not the allocator's retention.
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", str(1024 * 1024))
    gateway = Gateway(tmp_path / "store", "buffered", "binary")
    try:
        with _store(gateway, "mem") as store:
            peaks = []
            for i in range(10):
                cid = crash_id("0", rng=random.Random(i))
                dump = _dump(9 * MB, i)
                store.save_raw_crash(raw_crash(cid), {"upload_file_minidump": dump}, cid)
                assert store.get_raw_dump(cid) == dump
                peaks.append(gateway.rss_kb("VmHWM"))
        # ten 9 MB crashes in and out: a few copies of one crash in flight, plus caches that
        # fill (SQLite's page cache) and then stay: no growth over the last five crashes (it
        # would be 45 MB or more if requests or replies were kept)
        assert peaks[-1] - peaks[4] < 9 * 1024, f"gateway peaks (KiB) {peaks}"
    finally:
        gateway.stop()


def test_crash_over_the_cell_cap_is_refused_before_any_write_over_buffered(gateway_buffered_binary):
    with _store(gateway_buffered_binary, "cap") as store:
        cid = crash_id("1")
        with pytest.raises(InvalidArgument, match="cell limit"):
            store.save_raw_crash(raw_crash(cid), {"upload_file_minidump": b"x" * (10 * MB + 1)}, cid)
        assert all_rows(store.backend) == {}



def test_batches_split_below_the_gateways_element_cap(gateway_buffered_binary):
    """``serve`` refuses a request declaring over 262,144 Thrift elements (a bound on decoding
    memory): the backend splits a batch at 100,000 elements, so a big legitimate batch lands."""
    with open_backend(gateway_buffered_binary.url(table_prefix="elements" + uuid.uuid4().hex[:6])) as backend:
        backend.create_table(TableSpec("t", (FamilySpec("cf"),)))
        rows = [RowMutation(b"r%06d" % i, {b"cf:a": b"1"}) for i in range(60_000)]  # 120,000 elements
        backend.mutate_rows("t", rows)
        assert backend.calls["mutate_rows"] == 2
        assert sum(1 for _ in backend.scan("t", columns=[b"cf:a"])) == 60_000
