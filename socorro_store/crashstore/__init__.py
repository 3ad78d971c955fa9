"""What collectors, processors, readers and operators use: :func:`open_store` and :class:`CrashStore`.

- :mod:`.store`: the CrashStore facade (Socorro's CrashStorage method names).
- :mod:`.crashes`: raw and processed crashes, dumps, index pointers (written before the row).
- :mod:`.group_commit`, :mod:`.grouped_saves`: concurrent one-crash calls written as one group.
- :mod:`.resubmissions`: a crash id saved again (collector retries are no-ops; conflicts refused).
- :mod:`.queue`, :mod:`.claims`, :mod:`.states`: the processing queue: merged salted scans,
  claims with leases on the queue rows, renewals, releases, dead letters.
- :mod:`.counters`: live metrics, signature and queue counters, first-seen signatures.
- :mod:`.inspect`, :mod:`.reports`, :mod:`.deletion`: what operators read and delete.
"""
