"""Crash ids: new_crash_id mints Socorro's form, parse_crash_id reads what people paste, and
InvalidCrashID shows the expected form (issue 24, point 1)."""

import re
from datetime import date, datetime, timedelta, timezone

import pytest

import socorro_store
from socorro_store import InvalidArgument, InvalidCrashID, new_crash_id, open_store, parse_crash_id
from socorro_store.schema import keys as K

ID = "de1bb258-cbbf-4589-a673-34f800160918"


def test_new_crash_id_is_socorros_form_with_the_submission_date_in_utc():
    crash_id = new_crash_id(datetime(2026, 11, 24, 23, 30, tzinfo=timezone(timedelta(hours=-5))))
    assert K.validate_crash_id(crash_id) == crash_id
    assert crash_id.endswith("2261125")  # depth 2, 2026-11-25 in UTC
    assert K.crash_date(crash_id) == date(2026, 11, 25)
    assert new_crash_id(date(2001, 2, 3), depth=4).endswith("4010203")
    assert new_crash_id("2030-01-31T10:00:00Z", depth=0).endswith("0300131")
    today = datetime.now(timezone.utc).date()
    assert K.crash_date(new_crash_id()) in (today, today + timedelta(days=1))  # midnight may pass
    assert len({new_crash_id() for _ in range(100)}) == 100


@pytest.mark.parametrize("kwargs", [{"depth": 10}, {"depth": -1}, {"depth": "2"}, {"depth": True},
                                    {"submitted": "yesterday"}, {"submitted": date(1999, 12, 31)},
                                    {"submitted": datetime(2100, 1, 1)}, {"submitted": 12345}])
def test_new_crash_id_refuses_bad_arguments(kwargs):
    with pytest.raises(InvalidArgument):
        new_crash_id(**kwargs)


@pytest.mark.parametrize("text", [ID, f"bp-{ID}", f"  {ID}\n", ID.upper(), f"BP-{ID}",
                                  f"https://crash-stats.mozilla.org/report/index/{ID}",
                                  f"https://crash-stats.mozilla.org/report/index/bp-{ID}",
                                  f"https://crash-stats.mozilla.org/report/index/{ID}/",
                                  f"https://crash-stats.mozilla.org/report/index/{ID}#tab-details",
                                  f"http://localhost:8000/report/index/{ID}?x=1"])
def test_parse_crash_id_accepts_the_pasted_forms(text):
    assert parse_crash_id(text) == ID


@pytest.mark.parametrize("text", ["", "bp-", "3f2b6c1e-8a4d-4e1b-9c7a-5d2e8f1a0b3c", f"{ID}x", f"bp-bp-{ID}",
                                  ID[:-6] + "161340", f"https://crash-stats.mozilla.org/report/{ID}",
                                  f"https://crash-stats.mozilla.org/report/index/{ID}/extra",
                                  f"ftp://crash-stats.mozilla.org/report/index/{ID}", None, 7,
                                  # urlsplit raises a bare ValueError for these hosts
                                  f"https://[::1/report/index/{ID}", f"https://[x]/report/index/{ID}"])
def test_parse_crash_id_refuses_anything_else(text):
    with pytest.raises(InvalidCrashID):
        parse_crash_id(text)


def test_invalid_crash_id_message_shows_the_form_with_an_example(tmp_path):
    with pytest.raises(InvalidCrashID) as caught:
        K.validate_crash_id("c0ffee")
    message = str(caught.value)
    assert "'c0ffee'" in message and "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxDYYMMDD" in message
    assert re.search(r"e\.g\. [0-9a-f-]{36}", message) and "new_crash_id()" in message
    example = re.search(r"e\.g\. ([0-9a-f-]{36})", message).group(1)
    assert K.validate_crash_id(example) == example
    with pytest.raises(InvalidCrashID, match="bp-<id>"):
        parse_crash_id("c0ffee")


def test_a_minted_id_saves_and_a_uuid4_is_refused_with_the_form(tmp_path):
    with open_store(f"embedded://{tmp_path / 'store'}") as store:
        store.create_tables()
        submitted = datetime.now(timezone.utc).replace(microsecond=0)
        crash_id = new_crash_id(submitted)
        raw = {"ProductName": "Firefox", "Version": "1.0", "uuid": crash_id,
               "submitted_timestamp": submitted.isoformat()}
        store.save_raw_crash(raw, {}, crash_id)
        assert store.get_raw_crash(crash_id)["uuid"] == crash_id
        with pytest.raises(InvalidCrashID, match="DYYMMDD"):
            store.save_raw_crash(raw, {}, "3f2b6c1e-8a4d-4e1b-9c7a-5d2e8f1a0b3c")


def test_package_exports_them():
    assert {"new_crash_id", "parse_crash_id"} <= set(socorro_store.__all__)
    assert K.new_crash_id is new_crash_id and K.parse_crash_id is parse_crash_id
