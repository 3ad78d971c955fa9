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
