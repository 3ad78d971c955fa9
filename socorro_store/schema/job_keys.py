"""Row keys of the ``jobs`` table (batch-job runs and their leases), each with its inverse.

Split out of :mod:`socorro_store.schema.keys`, which re-exports every name here.
"""

import re
from datetime import datetime, timezone

from ..errors import InvalidArgument

# -- jobs table (batch-job runs; added by the jobs/rollup issue) ----------------------------------
#
#   jobs    b"run:" + job name + b":" + run id     one run record (family run, log)
#           b"lease:" + job name                   the one-live-run-per-job lease (family lease)
#
# Job names are ``[a-z0-9_-]`` (no ``:``), run ids are ``YYYYMMDDTHHMMSSfffZ-xxxxxx`` (UTC start
# time + 6 random hex), so the runs of one job sort by start time and the newest is the last row.

JOBS = "jobs"
# \A…\Z with fullmatch: ``$`` would accept a trailing newline; [0-9], not \d (other scripts' digits)
_JOB_NAME_RE = re.compile(r"\A[a-z0-9_\-]{1,64}\Z")
_RUN_ID_RE = re.compile(r"\A[0-9]{8}T[0-9]{9}Z-[0-9a-f]{6}\Z")
COL_LEASE = b"lease:holder"
COL_RUN_JOB = b"run:job"  # of a run-id row (:func:`run_id_key`)


def validate_job_name(name):
    """A job name: 1-64 of ``a-z 0-9 _ -``; InvalidArgument otherwise."""
    if not isinstance(name, str) or not _JOB_NAME_RE.fullmatch(name):
        raise InvalidArgument(f"bad job name {name!r}: expected 1-64 of a-z, 0-9, '_', '-'")
    return name


def validate_run_id(run_id):
    """A run id as made by :func:`new_run_id`; InvalidArgument otherwise."""
    if not isinstance(run_id, str) or not _RUN_ID_RE.fullmatch(run_id):
        raise InvalidArgument(f"bad run id {run_id!r}: expected YYYYMMDDTHHMMSSfffZ-xxxxxx")
    return run_id


def new_run_id(now_ms, random_hex):
    """``YYYYMMDDTHHMMSSfffZ-xxxxxx`` from a start time in ms and 6 random hex characters."""
    moment = datetime.fromtimestamp(now_ms / 1000, tz=timezone.utc)
    return validate_run_id(moment.strftime("%Y%m%dT%H%M%S") + f"{now_ms % 1000:03d}Z-{random_hex}")


def job_run_prefix(job=None):
    """Prefix of every run row (of one job when ``job`` is given)."""
    return b"run:" + (validate_job_name(job).encode("ascii") + b":" if job is not None else b"")


def job_run_key(job, run_id):
    """``run:<job>:<run id>``."""
    return job_run_prefix(job) + validate_run_id(run_id).encode("ascii")


def run_id_key(run_id):
    """``runid:<run id>``: the row naming a run's job (``run:job``), so a run is found by id."""
    return b"runid:" + validate_run_id(run_id).encode("ascii")


def parse_run_id_key(key):
    """Inverse of :func:`run_id_key`: the run id."""
    if not isinstance(key, bytes) or not key.startswith(b"runid:"):
        raise InvalidArgument(f"not a run id key: {key!r}")
    return validate_run_id(key[6:].decode("ascii", "replace"))


def parse_job_run_key(key):
    """Inverse of :func:`job_run_key`: ``(job, run id)``."""
    if not isinstance(key, bytes) or not key.startswith(b"run:"):
        raise InvalidArgument(f"not a job run key: {key!r}")
    job, sep, run_id = key[4:].decode("ascii", "replace").partition(":")
    if not sep:
        raise InvalidArgument(f"not a job run key: {key!r}")
    return validate_job_name(job), validate_run_id(run_id)


def job_lease_key(job):
    """``lease:<job>``."""
    return b"lease:" + validate_job_name(job).encode("ascii")
