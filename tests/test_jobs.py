"""Job runs in the ``jobs`` table: lease, takeover, resume from checkpoint, bounded retries."""

import os
import socket
import subprocess
import sys

import msgpack
import pytest

from socorro_store.backends import open_backend
from socorro_store.errors import InvalidArgument
from socorro_store.jobs import runs as jobs
from socorro_store.schema import keys
from socorro_store.schema.table_admin import create_tables


@pytest.fixture
def store(backend_url):
    with open_backend(backend_url) as backend:
        create_tables(backend, only=["jobs"])
        yield backend


class FakeClock:
    """A settable ms clock, so lease expiry is tested without sleeping."""

    def __init__(self, start=1_700_000_000_000):
        self.now = start

    def __call__(self):
        return self.now


def test_run_record_round_trip(store):
    def work(ctx):
        ctx.set_phase("scan")
        ctx.add_counts(rows=5)
        ctx.save({"done": ["a"]}, phase="write")
        ctx.log("hello")
        return {"answer": 42}

    run = jobs.run_job(store, "demo", work, params={"until": "2024-01-01"})
    assert run.status == jobs.SUCCEEDED and run.result == {"answer": 42}
    shown = jobs.get_run(store, run.run_id)
    assert shown.status == jobs.SUCCEEDED
    assert shown.phase == "write" and shown.checkpoint == {"done": ["a"]}
    assert shown.counts == {"rows": 5} and shown.params == {"until": "2024-01-01"}
    assert shown.host == socket.gethostname() and shown.pid == os.getpid()
    assert shown.started_ms <= shown.heartbeat_ms <= shown.ended_ms and shown.attempt == 1
    assert shown.log == ["hello"]
    assert [r.run_id for r in jobs.list_runs(store)] == [run.run_id]
    assert jobs.read_lease(store, "demo") is None  # released


def test_lease_contention_one_wins(store):
    first = jobs.start_run(store, "rollup")
    with pytest.raises(jobs.JobLeaseHeld) as info:
        jobs.start_run(store, "rollup")
    assert info.value.holder["run_id"] == first.run.run_id
    assert first.run.run_id in str(info.value)
    assert len(jobs.list_runs(store, "rollup")) == 1  # the loser wrote nothing
    jobs.finish_run(first, jobs.SUCCEEDED)
    second = jobs.start_run(store, "rollup")  # free again
    jobs.finish_run(second, jobs.SUCCEEDED)
    # another job name has its own lease
    other = jobs.start_run(store, "verify-indexes")
    jobs.finish_run(other, jobs.SUCCEEDED)


def test_takeover_after_heartbeat_expiry(store):
    clock = FakeClock()
    dead = jobs.start_run(store, "rollup", params={"p": 1}, lease_ttl_s=10, clock=clock)
    dead.save({"step": 3})
    clock.now += 9_000
    with pytest.raises(jobs.JobLeaseHeld):
        jobs.start_run(store, "rollup", params={"p": 1}, lease_ttl_s=10, clock=clock)
    clock.now += 2_000  # 11 s without heartbeat: expired
    taker = jobs.start_run(store, "rollup", params={"p": 1}, lease_ttl_s=10, clock=clock)
    assert taker.checkpoint == {"step": 3} and taker.run.resumed_from == dead.run.run_id
    assert taker.run.attempt == 2
    abandoned = jobs.get_run(store, dead.run.run_id)
    assert abandoned.status == jobs.FAILED and "abandoned" in abandoned.error
    # the dead run wakes up: its next heartbeat finds the lease gone and it stops
    with pytest.raises(jobs.LeaseLost):
        dead.save({"step": 4})
    assert jobs.get_run(store, dead.run.run_id).checkpoint == {"step": 3}
    jobs.finish_run(taker, jobs.SUCCEEDED)
    history = store.get_cells(keys.JOBS, keys.job_lease_key("rollup"), keys.COL_LEASE, versions=5)
    assert len(history) >= 2


def test_dead_pid_on_this_host_is_taken_over_at_once(store):
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    dead_pid = int(proc.stdout)
    record = {"run_id": "20240101T000000000Z-000000", "host": socket.gethostname(), "pid": dead_pid,
              "heartbeat_ms": jobs.now_ms(), "ttl_ms": 3_600_000}
    assert store.check_and_put(keys.JOBS, keys.job_lease_key("rollup"), keys.COL_LEASE, None,
                               {keys.COL_LEASE: msgpack.packb(record)})
    ctx = jobs.start_run(store, "rollup")
    jobs.finish_run(ctx, jobs.SUCCEEDED)


def test_resume_from_checkpoint_after_failure(store):
    steps_done = []

    def work(ctx):
        start = (ctx.checkpoint or {}).get("next", 0)
        for step in range(start, 5):
            if step == 3 and not ctx.run.resumed_from:
                raise RuntimeError("injected failure at step 3")
            steps_done.append(step)
            ctx.save({"next": step + 1})
        return {"steps": 5}

    with pytest.raises(jobs.JobFailed) as info:
        jobs.run_job(store, "rollup", work, max_attempts=1)
    assert "injected failure" in str(info.value)
    run = jobs.run_job(store, "rollup", work, max_attempts=1)
    assert steps_done == [0, 1, 2, 3, 4]  # steps 0-2 were not redone
    assert run.attempt == 2 and run.resumed_from
    failed = jobs.get_run(store, run.resumed_from)
    assert failed.status == jobs.FAILED and "RuntimeError: injected failure at step 3" in failed.error
    assert any("Traceback" in line for line in failed.log)
    listed = jobs.list_runs(store, "rollup")
    assert [r.status for r in listed] == [jobs.SUCCEEDED, jobs.FAILED]


def test_checkpoint_of_other_params_is_not_resumed(store):
    with pytest.raises(jobs.JobFailed):
        jobs.run_job(store, "rollup", lambda ctx: (ctx.save({"x": 1}), 1 / 0), params={"until": "A"},
                     max_attempts=1)
    ctx = jobs.start_run(store, "rollup", params={"until": "B"})
    assert ctx.checkpoint is None and not ctx.run.resumed_from
    jobs.finish_run(ctx, jobs.SUCCEEDED)


def test_retries_are_limited_with_backoff(store):
    attempts, sleeps = [], []

    def always_fails(ctx):
        attempts.append(ctx.run.attempt)
        raise OSError("disk on fire")

    with pytest.raises(jobs.JobFailed) as info:
        jobs.run_job(store, "rollup", always_fails, max_attempts=3, backoff_s=1.5, sleep=sleeps.append)
    assert attempts == [1, 2, 3] and sleeps == [1.5, 3.0]
    assert isinstance(info.value.__cause__, OSError)
    runs = jobs.list_runs(store, "rollup")
    assert len(runs) == 3 and all(r.status == jobs.FAILED for r in runs)
    assert jobs.read_lease(store, "rollup") is None


def test_retry_succeeds_on_second_attempt(store):
    def flaky(ctx):
        if ctx.run.attempt == 1:
            raise OSError("transient")
        return "ok"

    run = jobs.run_job(store, "rollup", flaky, max_attempts=3, sleep=lambda s: None)
    assert run.status == jobs.SUCCEEDED and run.attempt == 2 and run.result == "ok"


def test_runs_are_found_by_id_and_listed_newest_first_without_scanning_them_all(store):
    clock = FakeClock()
    made = []
    for job in ("rollup", "expire", "rollup", "rollup"):
        clock.now += 1000
        ctx = jobs.start_run(store, job, clock=clock)
        jobs.finish_run(ctx, jobs.SUCCEEDED)
        made.append((job, ctx.run.run_id))
    rollups = [run_id for job, run_id in made if job == "rollup"]

    def scans():  # scanners opened (hbase counts opens apart from fetches)
        return store.calls.get("scan_open", store.calls.get("scan", 0))

    assert [r.run_id for r in jobs.list_runs(store, "rollup", limit=2)] == rollups[::-1][:2]
    before = scans()
    assert jobs.get_run(store, made[1][1]).job == "expire"
    assert scans() == before  # found by id: two row reads, no scan
    assert [r.run_id for r in jobs.list_runs(store)] == [run_id for _job, run_id in made][::-1]


def test_bad_input_is_refused_and_writes_nothing(embedded_url):
    with open_backend(embedded_url) as backend:
        create_tables(backend, only=["jobs"])
        for kwargs in ({"job": "Bad Name"}, {"job": "a:b"}, {"job": ""}, {"job": "ok", "lease_ttl_s": 0},
                       {"job": "ok", "params": object()}):
            with pytest.raises(InvalidArgument):
                jobs.start_run(backend, **kwargs)
        with pytest.raises(InvalidArgument):
            jobs.run_job(backend, "ok", lambda ctx: None, max_attempts=0)
        with pytest.raises(InvalidArgument):
            jobs.get_run(backend, "nope")
        with pytest.raises(jobs.JobRunNotFound):
            jobs.get_run(backend, "20240101T000000000Z-abcdef")
        assert list(backend.scan(keys.JOBS)) == []


def test_cancelled_run_is_recorded(store):
    def interrupted(ctx):
        ctx.save({"half": True})
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        jobs.run_job(store, "rollup", interrupted)
    (run,) = jobs.list_runs(store)
    assert run.status == jobs.CANCELLED and jobs.read_lease(store, "rollup") is None
    ctx = jobs.start_run(store, "rollup")
    assert ctx.checkpoint == {"half": True}
    jobs.finish_run(ctx, jobs.SUCCEEDED)


def test_cli_jobs_commands(embedded_url):
    import json

    from click.testing import CliRunner
    from jobs_helpers import UNTIL, ingest, make_crashes

    from socorro_store import open_store
    from socorro_store.cli import main

    with open_store(embedded_url) as store:
        store.create_tables()
        ingest(store, make_crashes(10))
        holder = jobs.start_run(store.backend, "rollup")
    runner = CliRunner(mix_stderr=False) if "mix_stderr" in CliRunner.__init__.__code__.co_varnames else CliRunner()
    args = ["--url", embedded_url]
    held = runner.invoke(main, args + ["rollup", "--until", UNTIL, "--json"])
    assert held.exit_code == 2 and holder.run.run_id in held.stderr
    with open_backend(embedded_url) as backend:
        holder.backend = holder.lease.backend = backend
        jobs.finish_run(holder, jobs.SUCCEEDED)
    done = runner.invoke(main, args + ["rollup", "--until", UNTIL, "--grace", "0s", "--json"])
    assert done.exit_code == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["crashes_read"] == 10 and report["drift"] == {}
    verify = runner.invoke(main, args + ["verify-indexes", "--json"])
    assert verify.exit_code == 0 and json.loads(verify.stdout)[keys.SUBMITTED_TIME]["valid"] == 10
    assert runner.invoke(main, args + ["reconcile-queue", "--json"]).exit_code == 0
    assert runner.invoke(main, args + ["expire", "--json"]).exit_code == 0
    listed = json.loads(runner.invoke(main, args + ["jobs", "list", "--json"]).stdout)
    assert [r["job"] for r in listed][:4] == ["expire", "reconcile-queue", "verify-indexes", "rollup"]
    shown = runner.invoke(main, args + ["jobs", "show", report["run_id"], "--json"])
    assert json.loads(shown.stdout)["result"]["crashes_read"] == 10
    assert runner.invoke(main, args + ["rollup", "--grace", "soon"]).exit_code == 2
