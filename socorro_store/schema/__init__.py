"""The vocabulary every layer shares: row-key layouts, time inputs, table specs, table admin.

- :mod:`.keys`: every row-key layout with its inverse, crash ids (the jobs table's in
  :mod:`.job_keys`, re-exported; the queue's claims and dead letters in :mod:`.queue_keys`).
- :mod:`.timeparse`: timestamps and durations as callers give them.
- :mod:`.stored`: stored data read in every format it was written in, ours and Socorro's.
- :mod:`.labels`: the internal markers (``##null##``, ``##other##``…) in the words people read.
- :mod:`.crash_facts`: what is read out of a raw crash (its process type).
- :mod:`.specs`: table and family spec types (a leaf: backends and the engine use them).
- :mod:`.spec_loader`: ``table_specs/*.toml`` loaded, compared and rendered as HBase shell DDL.
- :mod:`.table_admin`: create, verify and describe tables from the specs over a backend.
"""
