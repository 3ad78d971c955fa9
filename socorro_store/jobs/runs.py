"""Batch-job runs, tracked in the ``jobs`` table: status, phase, checkpoint, lease, retries.

Ideas from the job trackers in ``seeds/`` (``reference/anchors.md``): eHive's workers with host,
pid and cause of death; Spider's RUNNING / SUCCEEDED / FAILED / CANCELLED states, bounded retries
and heartbeats; BDRE's restart from the last recoverable step; the IMPC crawler's one active
session at a time and ordered phases.

Rows (layouts in :mod:`socorro_store.schema.keys`)::

    run:<job>:<run id>   family ``run``: one column per field of :class:`JobRun` (text, decimal
                         ints, msgpack for checkpoint / counts / params / result); family ``log``:
                         ``log:<seq>`` one message each (TTL 90 days)
    lease:<job>          ``lease:holder``: msgpack ``{run_id, host, pid, heartbeat_ms, ttl_ms}``;
                         ``b""`` when free; 5 versions keep the recent holders

**One live run per job name.**  :class:`Lease` takes ``lease:<job>`` with check-and-put: against an
empty cell when it is free, against the exact current value when that holder is dead.  A holder
is dead when its heartbeat is older than its ``ttl_ms``, or, sooner, when it ran on this host
and its pid no longer exists.  Renewing (each heartbeat) is a check-and-put against the value
this run last wrote, so a run that lost its lease finds out at its next heartbeat
(:class:`LeaseLost`) and stops before writing more.  Expiry compares the holder's clock with
ours: clocks of the hosts must agree to well within ``ttl_ms``.

**Resume.**  A new run of a job looks at the newest earlier run.  If that run FAILED, was
CANCELLED, or was RUNNING but is dead (its lease was taken over: it is then marked FAILED with
the cause), and it left a checkpoint for the same ``params``, the new run starts from that
checkpoint (``ctx.checkpoint``), with ``attempt`` one more and ``resumed_from`` set.  Each step
of a job must be idempotent (puts, never increments), so redoing the step after the last
checkpoint never double-counts.

**Retries.**  :func:`run_job` retries a failed attempt at most ``max_attempts - 1`` times in the
same invocation, sleeping ``backoff_s * 2**(n-1)`` (capped at ``backoff_max_s``) between
attempts; every attempt is its own run record.  Bad input (:class:`InvalidArgument`), a lost lease
and Ctrl-C (recorded as CANCELLED) are not retried.  A later invocation resumes the chain again
(a cron-driven job never gets stuck), and ``attempt`` keeps counting so operators see it.
"""

import os
import random
import socket
import time
import traceback
from dataclasses import asdict, dataclass, field

import msgpack

from ..backends.base import RowMutation
from ..checks import is_int, is_number
from ..errors import InvalidArgument, SocorroStoreError
from ..schema import keys

RUNNING, SUCCEEDED, FAILED, CANCELLED = "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"
STATUSES = (RUNNING, SUCCEEDED, FAILED, CANCELLED)
DEFAULT_LEASE_TTL_S = 120.0
_MSGPACK_FIELDS = ("checkpoint", "counts", "params", "result")
_INT_FIELDS = ("pid", "started_ms", "heartbeat_ms", "ended_ms", "attempt")


class JobLeaseHeld(SocorroStoreError):
    """Another live run holds the job's lease, or a shared lease (``lock``) the job needs.
    ``holder`` is the lease record (``job`` names the holding job)."""

    def __init__(self, job, holder, lock=None):
        self.job, self.holder, self.lock = job, holder, lock
        age = (now_ms() - holder.get("heartbeat_ms", 0)) / 1000
        who = (f"run {holder.get('run_id')} on {holder.get('host')} pid {holder.get('pid')}"
               f" (last heartbeat {age:.0f}s ago)")
        if lock is None:
            message = f"job {job!r} is already running: {who} holds the lease"
        else:
            message = (f"job {job!r} cannot start: job {holder.get('job')!r} holds the {lock!r} lease "
                       f"it needs too ({who})")
        super().__init__(message)


class LeaseLost(SocorroStoreError):
    """This run's lease was taken over (its heartbeat came too late); the run must stop."""


class JobFailed(SocorroStoreError):
    """A job failed and its retries are used up.  ``run`` is the last attempt's record."""

    def __init__(self, run):
        self.run = run
        super().__init__(f"job {run.job!r} run {run.run_id} failed (attempt {run.attempt}): {run.error}")


class JobRunNotFound(SocorroStoreError, LookupError):
    """No run has that id."""


def now_ms():
    return int(time.time() * 1000)


@dataclass
class JobRun:
    """One run of a job (one attempt).  Times are ms since the epoch; 0 = not yet."""

    job: str
    run_id: str
    status: str = RUNNING
    phase: str = ""
    checkpoint: object = None
    host: str = ""
    pid: int = 0
    started_ms: int = 0
    heartbeat_ms: int = 0
    ended_ms: int = 0
    attempt: int = 1
    error: str = ""
    counts: dict = field(default_factory=dict)
    params: object = None
    result: object = None
    resumed_from: str = ""
    log: list = field(default_factory=list)  # messages of the ``log`` family (filled by get_run)

    def to_dict(self):
        return asdict(self)

    def to_puts(self):
        """``{b"run:<field>": bytes}`` for every field."""
        puts = {}
        for name, value in asdict(self).items():
            if name == "log":
                continue
            if name in _MSGPACK_FIELDS:
                raw = msgpack.packb(value, use_bin_type=True)
            elif name in _INT_FIELDS:
                raw = str(int(value)).encode("ascii")
            else:
                raw = str(value).encode("utf-8")
            puts[b"run:" + name.encode("ascii")] = raw
        return puts

    @classmethod
    def from_row(cls, cells):
        values = {}
        for column, raw in cells.items():
            family, _, name = column.decode("ascii", "replace").partition(":")
            if family != "run" or name not in cls.__dataclass_fields__ or name == "log":
                continue
            if name in _MSGPACK_FIELDS:
                values[name] = msgpack.unpackb(raw, raw=False, strict_map_key=False)
            elif name in _INT_FIELDS:
                values[name] = int(raw or b"0")
            else:
                values[name] = raw.decode("utf-8")
        return cls(**values)


# -- the lease ------------------------------------------------------------------------------

def read_lease(backend, job):
    """The current lease record of ``job`` (a dict), or None when it is free."""
    raw = backend.get_row(keys.JOBS, keys.job_lease_key(job), [keys.COL_LEASE]).get(keys.COL_LEASE)
    return msgpack.unpackb(raw, raw=False) if raw else None


def holder_is_dead(holder, at_ms=None):
    """True when ``holder``'s heartbeat expired, or it ran on this host under a pid that is gone."""
    at_ms = now_ms() if at_ms is None else at_ms
    if at_ms - holder.get("heartbeat_ms", 0) > holder.get("ttl_ms", 0):
        return True
    if holder.get("host") == socket.gethostname() and holder.get("pid"):
        try:
            os.kill(holder["pid"], 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
    return False


class Lease:
    """The one-live-run lease of a job, held by one run.  See the module docstring."""

    def __init__(self, backend, job, run_id, ttl_ms, clock=None, lock=None):
        self.backend, self.job, self.run_id, self.ttl_ms = backend, job, run_id, int(ttl_ms)
        self.clock = clock or now_ms
        self.lock = lock  # a shared lease's name (held by this job's run), or None for the job's own
        self.row = keys.job_lease_key(job if lock is None else SHARED_LEASE_PREFIX + lock)
        self.value = None  # the bytes this run last wrote (what renew and release check against)
        self.renewed_ms = 0

    def _record(self):
        at = self.clock()
        self.renewed_ms = at
        return msgpack.packb({"run_id": self.run_id, "job": self.job, "host": socket.gethostname(),
                              "pid": os.getpid(),
                              "heartbeat_ms": at, "ttl_ms": self.ttl_ms}, use_bin_type=True)

    def acquire(self):
        """Take the lease.  Returns the dead holder taken over (a dict) or None.

        Raises :class:`JobLeaseHeld` when a live run holds it.  The lease cell is the only cell
        of the check-and-put, so the claim is atomic on every backend.
        """
        for _ in range(3):  # a lost race against another starter re-reads once or twice
            current = self.backend.get_row(keys.JOBS, self.row, [keys.COL_LEASE]).get(keys.COL_LEASE)
            holder = msgpack.unpackb(current, raw=False) if current else None
            if holder is not None and not holder_is_dead(holder, self.clock()):
                raise JobLeaseHeld(self.job, holder, self.lock)
            value = self._record()
            if self.backend.check_and_put(keys.JOBS, self.row, keys.COL_LEASE, current or None,
                                          {keys.COL_LEASE: value}):
                self.value = value
                return holder
        current = self.backend.get_row(keys.JOBS, self.row, [keys.COL_LEASE]).get(keys.COL_LEASE)
        raise JobLeaseHeld(self.job, msgpack.unpackb(current, raw=False) if current else {}, self.lock)

    def renew(self):
        """Write a fresh heartbeat; raise :class:`LeaseLost` if another run took the lease."""
        value = self._record()
        if not self.backend.check_and_put(keys.JOBS, self.row, keys.COL_LEASE, self.value,
                                          {keys.COL_LEASE: value}):
            current = self.backend.get_row(keys.JOBS, self.row, [keys.COL_LEASE]).get(keys.COL_LEASE)
            holder = msgpack.unpackb(current, raw=False) if current else {}
            raise LeaseLost(f"job {self.job!r} run {self.run_id} lost its lease to run "
                            f"{holder.get('run_id')} on {holder.get('host')} pid {holder.get('pid')}")
        self.value = value

    def release(self):
        """Free the lease if this run still holds it (an empty value; check-and-put)."""
        if self.value is not None:
            self.backend.check_and_put(keys.JOBS, self.row, keys.COL_LEASE, self.value, {keys.COL_LEASE: b""})
            self.value = None


#: Shared leases: jobs that touch the same rows exclude each other.  ``counters``: rollup, expire
#: and reconcile-queue (they put and delete counter cells); ``indexes``: verify-indexes --repair
#: and reconcile-queue (it counts the queue pointers repair writes).  Their rows are
#: ``lease:lock-<name>``, apart from the job leases.
SHARED_LEASE_PREFIX = "lock-"
COUNTERS_LEASE, INDEXES_LEASE = "counters", "indexes"


class LeaseGroup:
    """A run's own lease and the shared leases it needs, renewed and released together."""

    def __init__(self, leases):
        self.leases = leases
        self.main = leases[0]

    def __getattr__(self, name):  # clock, ttl_ms, renewed_ms, value, job of the run's lease
        return getattr(self.main, name)

    @property
    def backend(self):
        return self.main.backend

    @backend.setter
    def backend(self, value):
        for lease in self.leases:
            lease.backend = value

    def renew(self):
        for lease in self.leases:
            lease.renew()

    def release(self):
        for lease in reversed(self.leases):
            lease.release()

    @classmethod
    def acquire(cls, backend, job, run_id, ttl_ms, clock, locks=()):
        """Take the job's lease, then each shared lease in ``locks``; return ``(group, dead
        holder of the job lease or None)``.  If one is held, release what was taken and raise
        :class:`JobLeaseHeld` naming the holder."""
        lease = Lease(backend, job, run_id, ttl_ms, clock)
        previous = lease.acquire()
        taken = [lease]
        try:
            for lock in locks:
                shared = Lease(backend, job, run_id, ttl_ms, clock, lock=lock)
                shared.acquire()
                taken.append(shared)
        except BaseException:
            for held in reversed(taken):
                held.release()
            raise
        return cls(taken), previous


# -- a running job --------------------------------------------------------------------------

class RunContext:
    """What a job function gets: its run record, the checkpoint to resume from, and helpers.

    ``checkpoint`` is None for a fresh start.  Call :meth:`save` after each idempotent step with
    the new checkpoint; call :meth:`heartbeat` (cheap, throttled) inside long steps so the lease
    is renewed at least every ``ttl/3``.
    """

    def __init__(self, backend, run, lease, progress=None):
        self.backend, self.run, self.lease = backend, run, lease
        self.checkpoint = run.checkpoint
        self.progress = progress  # optional callable(phase, done, total) for progress bars
        self._log_seq = 0

    def _write(self, first=False):
        mutations = [RowMutation(keys.job_run_key(self.run.job, self.run.run_id), self.run.to_puts())]
        if first:  # the run-id row goes with the first record, in the same call
            mutations.insert(0, RowMutation(keys.run_id_key(self.run.run_id),
                                            {keys.COL_RUN_JOB: self.run.job.encode("ascii")}))
        self.backend.mutate_rows(keys.JOBS, mutations)

    def heartbeat(self, force=False):
        """Renew the lease (and record the heartbeat) if ttl/3 passed since the last renewal."""
        if force or self.lease.clock() - self.lease.renewed_ms >= self.lease.ttl_ms / 3:
            self.lease.renew()
            self.run.heartbeat_ms = self.lease.renewed_ms
            self._write()

    def set_phase(self, phase):
        self.run.phase = phase
        self.heartbeat(force=True)

    def add_counts(self, **deltas):
        for name, value in deltas.items():
            self.run.counts[name] = self.run.counts.get(name, 0) + value

    def save(self, checkpoint, phase=None):
        """Record ``checkpoint`` (msgpack-able) after a finished step; renews the lease first."""
        self.lease.renew()  # never record progress for a run that lost its lease
        self.run.checkpoint = self.checkpoint = checkpoint
        if phase is not None:
            self.run.phase = phase
        self.run.heartbeat_ms = self.lease.renewed_ms
        self._write()

    def log(self, message):
        """Append a message to the run's ``log`` family."""
        self._log_seq += 1
        column = b"log:" + f"{self._log_seq:06d}".encode("ascii")
        self.backend.mutate_rows(keys.JOBS, [RowMutation(keys.job_run_key(self.run.job, self.run.run_id),
                                                         {column: str(message).encode("utf-8")})])

    def report(self, phase, done, total):
        if self.progress is not None:
            self.progress(phase, done, total)


def _latest_run(backend, job):
    for _row, cells in backend.scan(keys.JOBS, prefix=keys.job_run_prefix(job), columns=[b"run"],
                                    reverse=True, limit=1):
        return JobRun.from_row(cells)
    return None


def start_run(backend, job, params=None, lease_ttl_s=DEFAULT_LEASE_TTL_S, resume=True, clock=None,
              progress=None, locks=()):
    """Take the job's lease and record a RUNNING run; return its :class:`RunContext`.

    Raises :class:`JobLeaseHeld` (nothing written) when a live run holds the lease, or another
    job's run holds one of the shared leases ``locks`` (:data:`COUNTERS_LEASE`, :data:`INDEXES_LEASE`).
    """
    keys.validate_job_name(job)
    for lock in locks:
        keys.validate_job_name(SHARED_LEASE_PREFIX + lock)
    if not is_number(lease_ttl_s) or lease_ttl_s <= 0:
        raise InvalidArgument(f"lease_ttl_s must be a positive number: {lease_ttl_s!r}")
    try:  # params must be storable before anything is written
        msgpack.packb(params, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidArgument(f"job params must be msgpack-able: {exc}") from None
    clock = clock or now_ms
    started = clock()
    run_id = keys.new_run_id(started, "%06x" % random.getrandbits(24))
    lease, previous_holder = LeaseGroup.acquire(backend, job, run_id, lease_ttl_s * 1000, clock, locks)
    run = JobRun(job, run_id, host=socket.gethostname(), pid=os.getpid(), started_ms=started,
                 heartbeat_ms=lease.renewed_ms, params=params)
    latest = _latest_run(backend, job)
    if latest is not None and latest.status == RUNNING and previous_holder is not None \
            and previous_holder.get("run_id") == latest.run_id:
        latest.status, latest.ended_ms = FAILED, started
        latest.error = (f"abandoned: no heartbeat since {latest.heartbeat_ms} ms (host {latest.host} "
                        f"pid {latest.pid}); lease taken over by run {run_id}")
        backend.mutate_rows(keys.JOBS, [RowMutation(keys.job_run_key(job, latest.run_id), latest.to_puts())])
    if latest is not None and latest.status != SUCCEEDED:
        run.attempt = latest.attempt + 1
        if resume and latest.status in (FAILED, CANCELLED) and latest.checkpoint is not None \
                and latest.params == params:
            run.checkpoint, run.resumed_from = latest.checkpoint, latest.run_id
    ctx = RunContext(backend, run, lease, progress)
    try:
        ctx._write(first=True)
    except BaseException:
        lease.release()
        raise
    return ctx


def finish_run(ctx, status, error="", result=None):
    """Record the end of a run and release its lease."""
    if status not in STATUSES or status == RUNNING:
        raise InvalidArgument(f"bad final status {status!r}")
    run = ctx.run
    run.status, run.error, run.result, run.ended_ms = status, error, result, ctx.lease.clock()
    try:
        ctx._write()
    finally:
        ctx.lease.release()
    return run


def _cause(exc):
    return f"{type(exc).__name__}: {exc}"


def run_job(backend, job, fn, params=None, *, max_attempts=3, backoff_s=2.0, backoff_max_s=60.0,
            lease_ttl_s=DEFAULT_LEASE_TTL_S, resume=True, sleep=time.sleep, clock=None, progress=None, locks=()):
    """Run ``fn(ctx)`` as job ``job`` with a lease, checkpoints and bounded retries.

    ``fn`` gets a :class:`RunContext` and returns a msgpack-able result, stored in the run record.
    Returns the SUCCEEDED :class:`JobRun`.  Raises :class:`JobLeaseHeld` if another live run holds
    the lease, :class:`JobFailed` (``__cause__`` = the last error) when every attempt failed.
    """
    if not is_int(max_attempts) or max_attempts < 1:
        raise InvalidArgument(f"max_attempts must be a positive int: {max_attempts!r}")
    for name, value in (("backoff_s", backoff_s), ("backoff_max_s", backoff_max_s)):
        if not is_number(value) or value < 0:
            raise InvalidArgument(f"{name} must be a number >= 0: {value!r}")
    for attempt in range(1, max_attempts + 1):
        ctx = start_run(backend, job, params, lease_ttl_s, resume, clock, progress, locks)
        try:
            result = fn(ctx)
        except KeyboardInterrupt:
            finish_run(ctx, CANCELLED, "cancelled (KeyboardInterrupt)")
            raise
        except Exception as exc:
            ctx.run.counts = dict(ctx.run.counts)
            try:
                ctx.log("".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:])
            except Exception:  # noqa: BLE001  (the store may be what failed; the status matters more)
                pass
            run = finish_run(ctx, FAILED, _cause(exc))
            if isinstance(exc, (InvalidArgument, LeaseLost)) or attempt == max_attempts:
                raise JobFailed(run) from exc
            sleep(min(backoff_max_s, backoff_s * 2 ** (attempt - 1)))
            continue
        return finish_run(ctx, SUCCEEDED, result=result)
    raise AssertionError("unreachable")


# -- listing --------------------------------------------------------------------------------

def list_runs(backend, job=None, limit=None):
    """Runs (newest first), of one job or of all jobs.  ``limit`` caps the number returned.

    Run keys of one job sort by start time, so one job's runs are a reverse scan that stops at
    ``limit``; all jobs' runs are every run row, sorted here.
    """
    if limit is not None and (not is_int(limit) or limit < 1):
        raise InvalidArgument(f"limit must be a positive int: {limit!r}")
    prefix = keys.job_run_prefix(job)
    if job is not None:
        return [JobRun.from_row(cells) for _row, cells in
                backend.scan(keys.JOBS, prefix=prefix, columns=[b"run"], reverse=True, limit=limit)]
    runs = [JobRun.from_row(cells) for _row, cells in backend.scan(keys.JOBS, prefix=prefix, columns=[b"run"])]
    runs.sort(key=lambda run: (run.started_ms, run.run_id), reverse=True)
    return runs[:limit] if limit is not None else runs


def get_run(backend, run_id):
    """The run with id ``run_id`` (any job), with its ``log`` messages in ``run.log``: two gets."""
    job = backend.get_row(keys.JOBS, keys.run_id_key(run_id), columns=[keys.COL_RUN_JOB]).get(keys.COL_RUN_JOB)
    full = backend.get_row(keys.JOBS, keys.job_run_key(job.decode("ascii"), run_id)) if job else {}
    if not full:
        raise JobRunNotFound(f"no job run {run_id!r}")
    run = JobRun.from_row(full)
    run.log = [value.decode("utf-8", "replace") for column, value in sorted(full.items())
               if column.startswith(b"log:")]
    return run
