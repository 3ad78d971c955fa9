"""The vocabulary every layer shares: row-key layouts, time inputs, table specs, table admin.

- :mod:`.keys`: every row-key layout with its inverse, crash ids.
- :mod:`.timeparse`: timestamps and durations as callers give them, and as stored data holds them.
- :mod:`.specs`: table and family spec types (a leaf: backends and the engine use them).
- :mod:`.spec_loader`: ``table_specs/*.toml`` loaded, compared and rendered as HBase shell DDL.
- :mod:`.table_admin`: create, verify and describe tables from the specs over a backend.
"""
