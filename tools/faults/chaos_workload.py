"""The chaos harness's workloads and acknowledgement files (see :mod:`faults.chaos_harness`).

* Workloads are deterministic: :func:`make_raw` builds crash ``i`` of a seed (id, submitted time,
  legacy flag, process type, dumps of varying sizes), :func:`processed_doc` the processed crash of
  a raw crash, :func:`expected_counters` the counters a set of them implies.  So the parent can
  recount what a store must hold without trusting it.
* Acknowledgement files: a child appends one line per call that returned (:class:`AckLog`); the
  parent reads them (:func:`read_acks`, :func:`read_ack_times`, :func:`count_retries`).
"""

import collections
import os
import random
import uuid
import zlib
from datetime import datetime, timedelta, timezone

from socorro_store.schema import keys as K

DAY = datetime(2016, 12, 31, tzinfo=timezone.utc)  # the last day of a year: one rollup closes
UNTIL = "2017-01-01T00:00:00Z"                     # its minutes, hours, day, month and year
SIGNATURES = ["js::GC::Mark", "nsFoo::Bar", "", None, "ünï::Code", "mozalloc_abort | 'quoted'"]
PROCESS_TYPES = ["default", "default", "default", "plugin", "content"]


# -- workloads -------------------------------------------------------------------------------

def make_raw(seed, i):
    """``(crash_id, raw_crash, dumps)`` of crash ``i`` of workload ``seed`` (deterministic)."""
    rng = random.Random(f"{seed}:{i}")
    submitted = DAY + timedelta(seconds=rng.randrange(6 * 3600), microseconds=rng.randrange(10**6))
    crash_id = str(uuid.UUID(int=rng.getrandbits(128)))[:-7] + "2" + submitted.strftime("%y%m%d")
    raw = {"ProductName": "Firefox", "Version": "120.0", "submitted_timestamp": submitted.isoformat(),
           "uuid": crash_id, "ProcessType": rng.choice(PROCESS_TYPES), "seq": i}
    legacy = rng.choice([0, 1, 2, None])
    if legacy is not None:
        raw["legacy_processing"] = legacy
    size = rng.choice([0, 100, 4096, 65536, 300_000])
    dumps = {"upload_file_minidump": rng.randbytes(size)}
    if rng.random() < 0.3:
        dumps["flash1"] = rng.randbytes(1024)
    return crash_id, raw, dumps


def processed_doc(raw):
    """The processed crash a processor makes of ``raw`` (signature and success from its id)."""
    crash_id = raw["uuid"]
    pick = zlib.crc32(crash_id.encode())
    submitted = K.parse_timestamp(raw["submitted_timestamp"])
    return {"uuid": crash_id, "signature": SIGNATURES[pick % len(SIGNATURES)], "success": pick % 7 != 0,
            "completeddatetime": (submitted + timedelta(minutes=5)).isoformat(), "email": "x@example.com"}


def expected_counters(present):
    """``(metrics, signatures)`` counters that ``present`` ``[(raw, processed?)]`` imply.

    An independent recount (of the roll-up's documented rules) used to measure counter drift.
    """
    metrics = collections.defaultdict(collections.Counter)
    sigs = collections.defaultdict(collections.Counter)
    unique = collections.defaultdict(set)
    for raw, processed in present:
        moment = K.parse_timestamp(raw["submitted_timestamp"])
        rows = K.metrics_rows(moment)
        names = ["submitted_crash_reports"]
        if raw.get("legacy_processing") is not None:
            names.append(f"submitted_crash_reports_legacy_throttle_{raw['legacy_processing']}")
        if raw["ProcessType"] != "default":
            names.append(f"submitted_oop_{raw['ProcessType']}_crash_reports")
        if processed:
            doc = processed_doc(raw)
            if doc["signature"] is None or not doc["success"]:
                names.append("crash_report_processing_errors")
            sig_row = K.signature_row(doc["signature"])
            for level, column in K.signature_counter_columns(moment).items():
                sigs[sig_row][column] += 1
                unique[rows[level]].add(sig_row)
        for row in rows.values():
            for name in names:
                metrics[row][b"counters:" + name.encode()] += 1
    for row, names in unique.items():
        metrics[row][b"counters:unique_crash_signatures"] = len(names)
    return {r: dict(c) for r, c in metrics.items()}, {r: dict(c) for r, c in sigs.items()}


def live_counters(backend, dimensioned=False):
    """``(metrics, signatures)`` as stored: every non-zero plain counter (the queue row excluded);
    the dimensioned ones (``…|key``, tested in tests/test_dimensions.py) too when asked."""
    out = []
    for table in (K.METRICS, K.SIGNATURES):
        found = {}
        for row, cells in backend.scan(table, columns=[b"counters"]):
            if row == K.QUEUE_ROW:
                continue
            values = {c: K.decode_counter(v) for c, v in cells.items()
                      if K.decode_counter(v) and (dimensioned or b"|" not in c)}
            if values:
                found[row] = values
        out.append(found)
    return tuple(out)


def counter_drift(expected, live):
    """How many counter cells differ between two ``(metrics, signatures)`` pairs."""
    drift = 0
    for want, have in zip(expected, live):
        for row in set(want) | set(have):
            a, b = want.get(row, {}), have.get(row, {})
            drift += sum(1 for column in set(a) | set(b) if a.get(column, 0) != b.get(column, 0))
    return drift


# -- acknowledgement files -------------------------------------------------------------------

class AckLog:
    """Append-only lines written with one ``os.write`` each: a SIGKILL loses no written line."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def write(self, *fields):
        os.write(self.fd, (" ".join(str(f).replace("\n", " ") for f in fields) + "\n").encode())

    def close(self):
        os.close(self.fd)


def read_acks(path):
    """``{"S": [(id, latency_us)], "P": [id], "E": [msg], "X": [msg]}`` of an ack file."""
    out = {"S": [], "P": [], "E": [], "X": []}
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.endswith("\n"):
                continue  # never happens with one write per line; be strict anyway
            kind, _, rest = line.rstrip("\n").partition(" ")
            if kind == "S":
                crash_id, latency = rest.split()
                out["S"].append((crash_id, int(latency)))
            elif kind in out:
                out[kind].append(rest)
    return out


def merge_acks(paths):
    merged = {"S": [], "P": [], "E": [], "X": []}
    for path in paths:
        for kind, items in read_acks(path).items():
            merged[kind] += items
    return merged


def read_ack_times(path):
    """Unix seconds of every ``T`` line of an ack file (steady children write them), in order."""
    times = []
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("T ") and line.endswith("\n"):
                    times.append(int(line.split()[2]) / 1000)
    return times


def count_retries(path):
    """How many ``R`` lines (a typed error, then tried again) an ack file holds."""
    if not os.path.exists(path):
        return 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        return sum(1 for line in handle if line.startswith("R "))


def longest_gap(times, since=None, until=None):
    """The longest time (s) between consecutive moments of ``times`` (sorted here), counting from
    ``since`` and to ``until`` when given: the longest stall in acknowledgements."""
    points = sorted(t for t in times if (since is None or t >= since) and (until is None or t <= until))
    if since is not None:
        points.insert(0, since)
    if until is not None:
        points.append(until)
    return max((b - a for a, b in zip(points, points[1:])), default=0.0)
