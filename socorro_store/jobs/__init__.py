"""Batch jobs over a store, each run recorded in the ``jobs`` table.

- :mod:`.runs`: job-run records: leases, heartbeats, checkpoints, history.
- :mod:`.rollup`: exact counters for closed intervals.
- :mod:`.expiry`: drop detail a coarser level already holds.
- :mod:`.scrutiny`: reconcile-queue and verify-indexes.
"""
