"""What collectors, processors and readers use: :func:`open_store` and :class:`CrashStore`.

- :mod:`.store`: the CrashStore facade (Socorro's CrashStorage method names).
- :mod:`.crashes`: raw and processed crashes, dumps, index pointers (written before the row).
- :mod:`.queue`: the processing queue: merged salted scans, claims with leases.
- :mod:`.counters`: live metrics, signature and queue counters, first-seen signatures.
"""
