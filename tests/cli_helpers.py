"""Helpers shared by the CLI suites: a demo store made once per module, private copies of it,
and the runner with its exit-code checks."""

import shutil
from datetime import datetime, timedelta, timezone

from click.testing import CliRunner

from socorro_store.cli import main
from socorro_store.demo import run_demo

DAY = (datetime.now(timezone.utc) - timedelta(days=1)).date()  # the demo's day


def make_demo_store(tmp_path_factory, tag, crashes, seed, processors=1):
    """A demo store of ``crashes`` crashes on :data:`DAY` (made once; copy it per test)."""
    path = tmp_path_factory.mktemp(tag) / "store"
    run_demo(f"embedded://{path}", crashes=crashes, processors=processors, dump_kb=1, seed=seed, day=DAY)
    return path


def copy_url(store_path, tmp_path):
    """A private copy of a store (commands may change it), as an embedded:// URL."""
    copy = tmp_path / "store"
    shutil.copytree(store_path, copy)
    return f"embedded://{copy}"


def run(url, *args, input=None):
    return CliRunner().invoke(main, ["--url", url, *args], input=input, catch_exceptions=False)


def ok(result):
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout


def fails(result, code):
    """Exit ``code``, one ``Error:`` line on stderr, no traceback; returns the line."""
    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in result.stderr, result.stderr
    return lines[0]
