"""Batch jobs over a store, each run recorded in the ``jobs`` table.

- :mod:`.runs`: job-run records: leases (one live run per job, shared leases between jobs that
  touch the same rows), heartbeats, checkpoints, history.
- :mod:`.rollup` with :mod:`.recount`: exact counters for closed intervals, in bounded memory.
- :mod:`.expiry`: drop detail a coarser level already holds.
- :mod:`.scrutiny`: reconcile-queue and verify-indexes (repair from the crash rows).
- :mod:`.transfer`: export and import a msgpack stream of crashes between stores.
"""
