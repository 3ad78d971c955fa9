"""Output formats (issue 24, point 4): list commands take --json (one array), --nl (JSON lines),
--csv and --table; jobs show prints no Python reprs; nothing stray on a non-terminal stderr."""

import csv
import io
import json

import pytest
from cli_helpers import DAY, copy_url, make_demo_store
from click.testing import CliRunner

from socorro_store.cli import main

@pytest.fixture(scope="module")
def demo_store(tmp_path_factory):
    return make_demo_store(tmp_path_factory, "formats", crashes=12, seed=7)


@pytest.fixture
def url(demo_store, tmp_path):
    return copy_url(demo_store, tmp_path)


def run(url, *args):
    result = CliRunner().invoke(main, ["--url", url, *args], catch_exceptions=False)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def test_crashes_list_in_every_format(url):
    ids = run(url, "crashes", "list", "--day", DAY.isoformat()).stdout.split()
    array = json.loads(run(url, "crashes", "list", "--day", DAY.isoformat(), "--json").stdout)
    assert [item["crash_id"] for item in array] == ids and {"signature", "state", "submitted"} <= set(array[0])
    lines = run(url, "crashes", "list", "--day", DAY.isoformat(), "--nl").stdout.splitlines()
    assert [json.loads(line) for line in lines] == array
    rows = list(csv.DictReader(io.StringIO(run(url, "crashes", "list", "--day", DAY.isoformat(), "--csv").stdout)))
    assert [row["crash_id"] for row in rows] == ids and rows[0]["state"] == array[0]["state"]
    table = run(url, "crashes", "list", "--day", DAY.isoformat(), "--table").stdout.splitlines()
    assert table[0].split() == ["crash_id", "signature", "state", "submitted"] and set(table[1]) <= {"-", " "}
    assert [line.split()[0] for line in table[2:]] == ids
    assert json.loads(run(url, "crashes", "list", "--day", "2031-01-01", "--json").stdout) == []


def test_tables_and_jobs_list_formats_and_jobs_show(url):
    names = run(url, "tables", "list").stdout.split()
    assert json.loads(run(url, "tables", "list", "--json").stdout) == names
    assert run(url, "tables", "list", "--csv").stdout.split() == ["name", *names]
    run(url, "rollup")
    runs = json.loads(run(url, "jobs", "list", "--json").stdout)
    assert runs[0]["job"] == "rollup"
    rows = list(csv.DictReader(io.StringIO(run(url, "jobs", "list", "--csv").stdout)))
    assert rows[0]["run_id"] == runs[0]["run_id"] and "checkpoint" not in rows[0]
    assert run(url, "jobs", "list", "--table").stdout.splitlines()[0].split()[:3] == ["run_id", "job", "status"]
    shown = run(url, "jobs", "show", runs[0]["run_id"]).stdout
    assert "{'" not in shown and "None" not in shown  # JSON and '-', not Python reprs
    params = next(line for line in shown.splitlines() if line.startswith("params"))
    assert json.loads(params.split(None, 1)[1]) == runs[0]["params"]


def test_rollup_writes_nothing_stray_when_stderr_is_not_a_terminal(url):
    result = run(url, "rollup")
    assert result.stderr == "" and result.stdout.startswith("run ")
