"""Crash retention (expire-crashes): old crashes go everywhere, their counts stay; newer ones stay."""

import json
from datetime import timedelta

import pytest
from click.testing import CliRunner
from store_helpers import BASE_TIME, crash_id, processed, raw_crash

from socorro_store.cli import main
from socorro_store.errors import CrashIDNotFound, InvalidArgument
from socorro_store.jobs import retention, rollup
from socorro_store.schema import keys as K

OLD, NEW = BASE_TIME - timedelta(days=3), BASE_TIME
CUT = BASE_TIME.replace(hour=0).date().isoformat()  # 2016-09-18: OLD goes, NEW stays


def _mixed(store):
    old = [crash_id(s, OLD) for s in "0a5f"]
    new = [crash_id(s, NEW) for s in "1b6e"]
    for ids, when in ((old, OLD), (new, NEW)):
        for i, cid in enumerate(ids):
            store.save_raw_crash(raw_crash(cid, when + timedelta(minutes=i), legacy_processing=0, HangID=f"h{cid[:4]}",
                                           ProductName="Firefox", Version="120.0"), {}, cid)
            if i < 3:
                store.save_processed(processed(cid, f"sig{i % 2}", product="Firefox", version="120.0", os_name="Linux"))
    return old, new


def _counts(store):
    days = [(OLD.replace(hour=0), "old"), (NEW.replace(hour=0), "new")]
    out = {}
    for start, name in days:
        end = start + timedelta(days=1)
        out[name] = (store.get_metrics(K.metrics_row(start, "day").decode()),
                     store.top_signatures(start, end)["signatures"],
                     store.top_signatures(start, end, product="Firefox", os="Linux")["total"])
    return out


def test_expire_crashes_deletes_old_crashes_everywhere_and_keeps_counts(store):
    old, new = _mixed(store)
    until = NEW + timedelta(days=2)
    rollup.run_rollup(store.backend, until=until)
    before = _counts(store)
    assert before["old"][2] == 3 and before["old"][0]["submitted_crash_reports"] == 4
    dry = retention.run_expire_crashes(store.backend, CUT, dry_run=True, now=until)
    assert (dry["crashes"], dry["deleted"]) == (4, 0)
    assert store.get_raw_crash(old[0])["uuid"] == old[0]  # the dry run deleted nothing
    report = retention.run_expire_crashes(store.backend, CUT, now=until)
    assert (report["crashes"], report["deleted"]) == (4, 4)
    for cid in old:  # not found, listed nowhere
        with pytest.raises(CrashIDNotFound):
            store.get_raw_crash(cid)
        for table in K.CRASH_TABLES:
            for row, cells in store.backend.scan(table):
                assert cid.encode() not in row and cid.encode() not in b"".join(cells.values()), table
    assert list(store.crashes_submitted(OLD.replace(hour=0), OLD + timedelta(days=1))) == []
    for cid in new:  # newer crashes untouched
        assert store.get_raw_crash(cid)["uuid"] == cid
    assert len(list(store.crashes_submitted(NEW.replace(hour=0), NEW + timedelta(days=1)))) == 4
    # counts kept, also through a later full rollup
    assert _counts(store) == before
    rollup.run_rollup(store.backend, until=until, since="2016-09-01")
    assert _counts(store) == before
    again = retention.run_expire_crashes(store.backend, CUT, now=until)  # nothing left to delete
    assert again["deleted"] == 0


def test_expire_crashes_refuses_bad_and_future_dates(store):
    for bad in ("2016-13-01", "yesterday", "2999-01-01"):
        with pytest.raises(InvalidArgument):
            retention.run_expire_crashes(store.backend, bad)


def test_cli_expire_crashes(store, backend_url):
    old, _new = _mixed(store)
    store.close()

    def run(*args):
        return CliRunner().invoke(main, ["--url", backend_url, "expire-crashes", *args], catch_exceptions=False)

    assert run("--before", "2016-02-30").exit_code == 2
    assert run("--before", "2999-01-01", "--json").exit_code == 2
    result = run("--before", CUT, "--dry-run", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["crashes"] == 4
    result = run("--before", CUT, "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["deleted"] == 4
    verify = CliRunner().invoke(main, ["--url", backend_url, "verify-indexes", "--json"], catch_exceptions=False)
    assert verify.exit_code == 0, verify.stdout


def test_expire_crashes_selects_by_submission_time_not_the_id_date(store):
    """Issue 32, defect 10: a crash submitted before the cut whose id is dated after it goes too
    (it survived, its day frozen); one submitted after the cut under an older id stays."""
    early_late_id = crash_id("2", NEW + timedelta(days=5))  # id dated 2016-09-23, submitted 09-15
    late_early_id = crash_id("3", OLD)  # id dated 2016-09-15, submitted 09-18
    store.save_raw_crash(raw_crash(early_late_id, OLD), {}, early_late_id)
    store.save_raw_crash(raw_crash(late_early_id, NEW), {}, late_early_id)
    dry = retention.run_expire_crashes(store.backend, CUT, dry_run=True)
    assert dry["crashes"] == 1
    report = retention.run_expire_crashes(store.backend, CUT)
    assert report["deleted"] == 1
    with pytest.raises(CrashIDNotFound):
        store.get_raw_crash(early_late_id)
    assert store.get_raw_crash(late_early_id)["uuid"] == late_early_id


def test_expire_crashes_deletes_the_volume_rows_no_rollup_can_read(store):
    """A day before ``before`` is never recounted, and a later day's admission reads the 30 days
    ending with it: the day volume rows older than that go, the others stay."""
    from socorro_store.jobs import registry  # noqa: PLC0415
    from socorro_store.schema import dimension_keys as DK  # noqa: PLC0415

    before = BASE_TIME.replace(hour=0).date()
    days = [before - timedelta(days=n) for n in (45, 30, 29, 1, 0)]
    for day in days:
        registry.write_day_volumes(store.backend, day, {("product", None, "Firefox"): 3})

    def volume_days():
        return [DK.parse_volume_row(row) for row, _cells in store.backend.scan(
            K.SIGNATURES_SEEN, prefix=DK.VOLUME_PREFIX)]

    dry = retention.run_expire_crashes(store.backend, CUT, dry_run=True, now=BASE_TIME)
    assert dry["volume_rows"] == 2 and volume_days() == days
    report = retention.run_expire_crashes(store.backend, CUT, now=BASE_TIME)
    assert report["volume_rows"] == 2 and volume_days() == days[2:]
