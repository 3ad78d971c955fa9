"""Shared by the benchmarks in tools/: a fresh store namespace per measured case."""

import os
import uuid


def isolated(url, workdir, tag):
    """A URL for ``tag`` that no other case shares: a sub-directory of ``workdir`` (embedded,
    the default when ``url`` is None) or a fresh table prefix (hbase)."""
    if url is None:
        return f"embedded://{os.path.join(workdir, tag)}"
    if url.startswith("hbase://"):
        return f"{url}{'&' if '?' in url else '?'}table_prefix=b{tag}{uuid.uuid4().hex[:6]}"
    if url.startswith("embedded://"):
        return f"{url.rstrip('/')}/{tag}"
    return url
