"""``socorro-store demo``: the main job runs end to end and reports what the store holds."""

import json

from click.testing import CliRunner

from socorro_store.cli import main


def test_demo_runs_and_drains_the_queue(embedded_url):
    result = CliRunner().invoke(main, ["--url", embedded_url, "demo", "--crashes", "120",
                                       "--processors", "3", "--dump-kb", "4", "--seed", "1", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output[result.output.index("{"):])
    assert report["crashes_processed"] == 120 and report["crashes_stored_for_day"] == 120
    assert report["queue_drained"] and report["queue_sizes"]["legacy"] == 0
    assert sum(report["hourly_counts"].values()) == 120
    tops = [item["count"] for item in report["top_signatures"]]
    assert tops == sorted(tops, reverse=True) and tops[0] >= 2  # Zipf: a top crasher repeats
    assert report["crashes_per_second"] > 0


def test_demo_text_output(embedded_url):
    result = CliRunner().invoke(main, ["demo", "--url", embedded_url, "--crashes", "30", "--dump-kb", "0"])
    assert result.exit_code == 0, result.output
    assert "queue drained            yes" in result.output
    assert "top signatures:" in result.output and "crashes/s" in result.output


def test_demo_dates_its_crashes_today_up_to_now_by_default_and_a_whole_day_with_day(tmp_path):
    from datetime import datetime, timedelta, timezone  # noqa: PLC0415

    from socorro_store import open_store  # noqa: PLC0415
    from socorro_store.demo import run_demo  # noqa: PLC0415

    now = datetime(2024, 11, 14, 15, 20, tzinfo=timezone.utc)
    report = run_demo(f"embedded://{tmp_path / 'today'}", crashes=60, processors=2, dump_kb=0, seed=4, now=now)
    assert report["day"] == "2024-11-14" and report["crashes_stored_for_day"] == 60
    with open_store(f"embedded://{tmp_path / 'today'}") as store:
        today = datetime(2024, 11, 14, tzinfo=timezone.utc)
        assert sum(1 for _ in store.crashes_submitted(today, now)) == 60  # none after now
        assert store.top_signatures(today, today + timedelta(days=1))["total"] > 0  # the home page's "today"
    result = CliRunner().invoke(main, ["--url", f"embedded://{tmp_path / 'day'}", "demo", "--crashes", "20",
                                       "--dump-kb", "0", "--seed", "2", "--day", "2016-09-18", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output[result.output.index("{"):])
    assert report["day"] == "2016-09-18" and report["crashes_stored_for_day"] == 20
    bad = CliRunner().invoke(main, ["--url", f"embedded://{tmp_path / 'bad'}", "demo", "--day", "2016-13-01"])
    assert bad.exit_code == 2


def test_demo_processed_crashes_look_like_socorros_processor_output(tmp_path):
    from socorro_store import open_store  # noqa: PLC0415
    from socorro_store.demo import run_demo, signature_functions  # noqa: PLC0415

    url = f"embedded://{tmp_path / 'shape'}"
    report = run_demo(url, crashes=80, processors=2, dump_kb=0, seed=7)
    with open_store(url) as store:
        from datetime import date, datetime, timezone  # noqa: PLC0415

        day = date.fromisoformat(report["day"])
        start = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
        ids = list(store.crashes_submitted(start, datetime.now(timezone.utc)))
        checked = 0
        for cid in ids:
            doc = store.get_unredacted_processed(cid)
            if not doc.get("success"):
                continue
            for field in ("os_name", "os_pretty_version", "cpu_arch", "cpu_info", "reason", "address", "uptime",
                          "install_age", "process_type", "release_channel", "build", "date_processed", "app_notes"):
                assert doc.get(field) not in (None, ""), (field, doc)
            dump = doc["json_dump"]
            frames = dump["crashing_thread"]["frames"]
            assert dump["threads"][doc["crashing_thread"]]["frames"] == frames
            functions = [f.get("function", "") for f in frames]
            wanted = signature_functions(doc["signature"])
            # the signature's functions are on the crashing thread, the first of them on top
            named = [f.split("(")[0] for f in functions]
            assert all(w in named for w in wanted), (doc["signature"], named)
            if wanted and not doc["signature"].startswith("OOM"):
                assert named[0] == wanted[0]
            if "@0x" in doc["signature"]:
                assert frames[0]["module_offset"] == doc["signature"].split("@")[-1].split(" ")[0]
            modules = dump["modules"]
            assert modules and all(m["filename"] and len(m["debug_id"]) == 33 and m["debug_file"] for m in modules)
            assert dump["system_info"]["os"] == doc["os_name"] and dump["crash_info"]["type"] == doc["reason"]
            checked += 1
        assert checked >= 70
