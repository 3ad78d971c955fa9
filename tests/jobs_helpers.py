"""Synthetic crashes for the batch-job tests, and an independent recount of what they should count."""

import collections
import random
import uuid
from datetime import datetime, timedelta, timezone

from faults.chaos_workload import live_counters  # noqa: F401 - shared with the tests

from socorro_store.schema import keys as K

START = datetime(2016, 12, 30, 22, 0, tzinfo=timezone.utc)   # spans two days, a month and a year end
UNTIL = "2017-01-02T00:00:00Z"                               # closes 2016 (and its month); 2017-01 stays open
SIGNATURES = ["js::GC::Mark", "js::GC::Mark::Inner", "", None, "nsFoo::Bar", "ünï::Code"]


def make_crashes(n=60, seed=7):
    """Specs of ``n`` crashes over ~50 hours: legacy flags, plugin crashes, hang pairs, errors."""
    rng = random.Random(seed)
    specs = []
    for i in range(n):
        submitted = START + timedelta(minutes=rng.randrange(0, 50 * 60), seconds=rng.randrange(60))
        cid = str(uuid.UUID(int=rng.getrandbits(128)))[:-7] + "2" + submitted.strftime("%y%m%d")
        spec = {"id": cid, "submitted": submitted, "legacy": rng.choice([0, 1, 2, None]),
                "ptype": rng.choice(["default", "default", "plugin", "content"]), "hang": None,
                "processed": i % 5 != 0, "signature": rng.choice(SIGNATURES), "success": rng.random() > 0.2}
        specs.append(spec)
    # three hang pairs: the second side is submitted (and saved) later than the first
    for k in range(3):
        first, second = specs[2 * k], specs[2 * k + 1]
        if first["submitted"] > second["submitted"]:
            first["submitted"], second["submitted"] = second["submitted"], first["submitted"]
            for spec in (first, second):
                spec["id"] = spec["id"][:-6] + spec["submitted"].strftime("%y%m%d")
        first["hang"] = second["hang"] = f"hang-{k}"
        first["ptype"], second["ptype"] = "plugin", "default"
    return specs


def raw_of(spec):
    raw = {"ProductName": "Firefox", "submitted_timestamp": spec["submitted"].isoformat(), "uuid": spec["id"],
           "ProcessType": spec["ptype"]}
    if spec["legacy"] is not None:
        raw["legacy_processing"] = spec["legacy"]
    if spec["hang"]:
        raw["HangID"] = spec["hang"]
    return raw


def processed_of(spec):
    return {"uuid": spec["id"], "completeddatetime": (spec["submitted"] + timedelta(minutes=5)).isoformat(),
            "signature": spec["signature"], "success": spec["success"]}


def ingest(store, specs):
    """Save every crash (in submission order) and process the ones marked processed."""
    ordered = sorted(specs, key=lambda s: s["submitted"])
    for spec in ordered:
        store.save_raw_crash(raw_of(spec), {"upload_file_minidump": b"MDMP"}, spec["id"])
    store.save_processed_crashes([processed_of(s) for s in ordered if s["processed"]])
    store.live_counters.settle()  # jobs read the counters through the backend: the background ones are sent


def expected_counters(specs):
    """``(metrics, signatures)``: ``{row: {column: n}}`` as the crash specs say they should be."""
    metrics = collections.defaultdict(collections.Counter)
    sigs = collections.defaultdict(collections.Counter)
    unique = collections.defaultdict(set)
    for spec in specs:
        rows = K.metrics_rows(spec["submitted"])
        names = ["submitted_crash_reports"]
        if spec["legacy"] is not None:
            names.append(f"submitted_crash_reports_legacy_throttle_{spec['legacy']}")
        if spec["ptype"] != "default":
            names.append(f"submitted_oop_{spec['ptype']}_crash_reports")
        if spec["processed"] and (spec["signature"] is None or not spec["success"]):
            names.append("crash_report_processing_errors")
        if spec["hang"]:
            partner = [s for s in specs if s["hang"] == spec["hang"] and s is not spec][0]
            if (spec["submitted"], spec["id"]) > (partner["submitted"], partner["id"]):
                names.append("submitted_crash_report_hang_pairs")
        for row in rows.values():
            for name in names:
                metrics[row][b"counters:" + name.encode()] += 1
        if spec["processed"]:
            sig_row = K.signature_row(spec["signature"])
            for level, column in K.signature_counter_columns(spec["submitted"]).items():
                sigs[sig_row][column] += 1
                unique[rows[level]].add(sig_row)
    for row, names in unique.items():
        metrics[row][b"counters:unique_crash_signatures"] = len(names)
    return ({r: dict(c) for r, c in metrics.items()}, {r: dict(c) for r, c in sigs.items()})
