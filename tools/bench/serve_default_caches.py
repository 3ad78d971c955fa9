#!/usr/bin/env python
"""``socorro-store`` with SQLite's default page cache (2,000 KiB) on every engine connection.

Tools only: the "before" side of the gateway-memory comparison (issue 23, item 3), started by
``tools/bench/bench_crashes.py --gateway --gateway-caches default`` in place of
``python -m socorro_store``.  Everything else is the installed code.
"""

import sys

from socorro_store.engine import engine, pool

SQLITE_DEFAULT_KIB = 2000
engine.READER_CACHE_KIB = engine.WRITER_CACHE_KIB = SQLITE_DEFAULT_KIB
pool.ReaderPool.__init__.__defaults__ = (pool.DEFAULT_MAX_OPEN, SQLITE_DEFAULT_KIB)

if __name__ == "__main__":
    from socorro_store.cli import main

    sys.exit(main())
