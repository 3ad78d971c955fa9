"""Dropping versions beyond a family's VERSIONS after puts.

Each prune is ``(row, family, qualifier, versions - 1)``: the column keeps its VERSIONS newest
cells (by timestamp) and loses the older ones, as HBase's VERSIONS does at compaction (reads
never see them either way).
"""

import collections

_PRUNE = ("DELETE FROM cells WHERE row=?1 AND fam=?2 AND qual=?3 AND ts < ("
          "SELECT ts FROM cells WHERE row=?1 AND fam=?2 AND qual=?3 ORDER BY ts DESC LIMIT 1 OFFSET ?4)")
_MAX_PARAMETERS = 30000  # per query; SQLite (>= 3.32) allows 32766


def prune(conn, prunes):
    """Drop versions beyond the family's VERSIONS: ``[(row, fam, qual, versions - 1)]``."""
    if prunes:
        conn.executemany(_PRUNE, prunes)


def crowded(conn, prunes):
    """Of the ``prunes`` a batch of puts will need, those that may have something to drop.

    Called before the puts are written: a column whose cells now plus the puts to it number at
    most VERSIONS cannot hold more than VERSIONS afterwards, so pruning it would drop nothing.
    Batches mostly write new columns, so one indexed query over the batch (under 1 µs a
    column) spares most of the per-column deletes (3-6 µs each).  The query probes every
    (row, family, qualifier) combination of the batch, so when those outnumber the columns
    written, every column is pruned as before.
    """
    if len(prunes) <= 1:
        return prunes
    try:
        rows, fams, quals = ({p[i] for p in prunes} for i in range(3))
    except TypeError:  # unhashable keys (bytearray): prune every column
        return prunes
    if (len(rows) * len(fams) * len(quals) > 4 * len(prunes)
            or len(rows) + len(fams) + len(quals) > _MAX_PARAMETERS):
        return prunes
    one_per_column = len(rows) == len(prunes)  # one put per row (the usual batch), so per column
    rows, fams, quals = _padded(rows), _padded(fams), _padded(quals)
    sql = ("SELECT row, fam, qual, count(*) FROM cells WHERE row IN (%s) AND fam IN (%s) "
           "AND qual IN (%s) GROUP BY row, fam, qual"
           % (",".join("?" * len(rows)), ",".join("?" * len(fams)), ",".join("?" * len(quals))))
    existing = {(row, fam, qual): n for row, fam, qual, n in conn.execute(sql, (*rows, *fams, *quals))}
    if one_per_column:
        if not existing:
            return [p for p in prunes if p[3] < 0]  # only a family keeping no versions at all
        return [p for p in prunes if existing.get(p[:3], 0) > p[3]]
    puts = collections.Counter(p[:3] for p in prunes)
    return [p for p in prunes if existing.get(p[:3], 0) + puts[p[:3]] > p[3] + 1]


def _padded(values):
    """``values`` as a list repeated up to a power of two long, so a few statement shapes (which
    SQLite's statement cache keeps prepared) serve every batch size; repeats change no IN test."""
    values = list(values)
    size = 1 << (len(values) - 1).bit_length()
    return values + values[:1] * (size - len(values))
