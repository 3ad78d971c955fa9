"""Shared by the benchmarks and the soak in tools/: fresh store namespaces, call attribution,
percentiles, resident memory and processed crashes.

Run the tools from a worktree root with ``PYTHONPATH=.`` so they measure that checkout's code
(``python tools/bench/x.py`` puts tools/bench/ and tools/, not the working directory, on
``sys.path``).
"""

import collections
import os
import queue
import resource
import threading
import time
import uuid
from datetime import datetime, timezone

from servers.gateway import proc_rss_kb  # noqa: F401 - re-exported for the benchmarks
from socorro_store.demo import processed_crash


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


def with_pool_size(url, size):
    """``url`` with ``pool_size=size`` for an hbase URL that names none (one connection per
    thread, as each Socorro thread had its own), else ``url`` unchanged."""
    if not url.startswith("hbase://") or "pool_size=" in url:
        return url
    return f"{url}{'&' if '?' in url else '?'}pool_size={size}"


def processed_for(crash_id, signature):
    """The processed crash a processor would save: its id, signature and completion time."""
    return {"uuid": crash_id, "signature": signature, "success": signature is not None,
            "completeddatetime": datetime.now(timezone.utc).isoformat()}


def percentile(sorted_values, fraction):
    """The value at ``fraction`` (0..1) of an ascending list; 0.0 for an empty one."""
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * fraction))]


def peak_rss_mb():
    """This process's peak resident memory so far, in MiB.

    ``VmHWM`` where /proc has it: a spawned child's ``ru_maxrss`` starts at its parent's peak
    (Linux keeps it across exec), ``VmHWM`` belongs to this process image only.
    """
    peak_kb = proc_rss_kb(os.getpid(), "VmHWM")
    return round((peak_kb or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024, 1)


class PhaseCalls:
    """Attributes a single-threaded run's backend calls to lifecycle phases: each :meth:`mark`
    charges the calls made since the previous mark to one phase."""

    def __init__(self, backend):
        self.backend, self.totals, self._seen = backend, {}, 0

    def mark(self, phase):
        """Charge the calls since the last mark to ``phase``; return how many there were."""
        now = sum(self.backend.calls.values())
        delta = now - self._seen
        self.totals[phase] = self.totals.get(phase, 0) + delta
        self._seen = now
        return delta


class RoleCalls:
    """Attributes a threaded run's backend calls to the role of the thread that made them.

    A thread's role is its name up to the first ``-`` (``collector-3`` -> ``collector``); calls
    from threads the tool did not name (a backend's helper threads, a store's committer) count
    as ``other``.  It wraps the backend instance's ``count_call``, which every backend calls once
    per round trip; :meth:`detach` restores it.
    """

    ROLES = ("collector", "processor")

    def __init__(self, backend):
        self.backend = backend
        self.by_role = collections.Counter()
        self._lock = threading.Lock()
        original = backend.count_call

        def count_call(kind, n=1):
            role = threading.current_thread().name.split("-", 1)[0]
            with self._lock:
                self.by_role[role if role in self.ROLES else "other"] += n
            original(kind, n)

        backend.count_call = count_call

    def detach(self):
        self.backend.__dict__.pop("count_call", None)


# -- what bounds a run: CPU of the client, the servers and everyone else ------------------------

def cpu_seconds(pid):
    """User + system CPU seconds process ``pid`` (all its threads) has used; 0.0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()  # the name may hold spaces
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def machine_busy_seconds():
    """``(busy, total)`` CPU seconds of the whole machine, all cores, since boot (/proc/stat)."""
    with open("/proc/stat") as handle:
        values = [int(v) for v in handle.readline().split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    tick = os.sysconf("SC_CLK_TCK")
    return (sum(values[:8]) - idle) / tick, sum(values[:8]) / tick


class CpuShare:
    """CPU used over an interval by named server processes and by the whole machine.

    ``servers`` maps a name (``hbase``, ``thrift``, ``gateway``) to a pid.  :meth:`stop` returns
    ``{name: cores}``: each server's CPU seconds over the wall time (1.0 = one core busy), plus
    ``machine`` (every process, ours and other users', in cores) and ``cores`` (how many the
    machine has).  A client that reports its own CPU (``time.process_time()``) completes the
    picture: whatever is near a full core (a Python client under the GIL) or near ``cores`` in
    total bounds the run; when nothing is, round trips (latency) do.
    """

    def __init__(self, servers):
        self.servers = dict(servers)

    def start(self):
        self._t0 = time.perf_counter()
        self._cpu0 = {name: cpu_seconds(pid) for name, pid in self.servers.items()}
        self._machine0 = machine_busy_seconds()[0]
        return self

    def stop(self):
        wall = max(1e-9, time.perf_counter() - self._t0)
        out = {name: round((cpu_seconds(pid) - self._cpu0[name]) / wall, 2) for name, pid in self.servers.items()}
        out["machine"] = round((machine_busy_seconds()[0] - self._machine0) / wall, 2)
        out["cores"] = os.cpu_count()
        return out


def start_local_hbase(directory, log, thrift2=False):
    """A :class:`servers.hbase_standalone.LocalHBase` under ``directory``, started (with its Thrift2 server
    too if asked); ``(hbase, {name: pid})``."""
    from servers.hbase_standalone import LocalHBase  # noqa: PLC0415 - Java only when asked for

    hbase = LocalHBase(directory, log=log, thrift2=thrift2).start()
    log(f"local HBase {hbase.lib.parent.name} ready in {hbase.started_in_s:.1f} s at {hbase.url}"
        + (f" and {hbase.thrift2_url}" if thrift2 else ""))
    servers = {"hbase": hbase.master.pid, "thrift": hbase.thrift.pid}
    if thrift2:
        servers["thrift2"] = hbase.thrift2.pid
    return hbase, servers


def paced_lifecycle(store, data, plans, rate, seconds, collectors, processors, acks, processor_id, idle=None):
    """Production shape, paced, for the freshness benchmarks.

    ``collectors`` threads (``collector-N``) save the raw crashes of ``data`` (``(raw, dumps,
    crash id, signature)``), ``rate`` a second between them (0: as fast as they can), for
    ``seconds``; a crash whose slot falls after the window is not saved, so the rate stays as
    asked.  ``processors`` threads (``processor-N``) take them 4 at a time, save each processed
    (``plans``: crash id -> (raw, signature)) and put ``(crash id, ack time)`` on ``acks``, until
    2 s after the window.  ``idle``: ``(mark, idle_since)`` to charge a poll that took nothing to
    (see ``bench_derive_freshness._Roles``).  Returns ``{"elapsed", "saved_raw", "processed"}``.
    """
    stop = time.monotonic() + seconds
    feed = iter(data)
    lock, taken, stored, processed = threading.Lock(), [0], [0], [0]
    start = time.monotonic()

    def collect():
        while time.monotonic() < stop:
            with lock:
                item = next(feed, None)
                n = taken[0]
                taken[0] += 1
            if item is None:
                return
            if rate:
                delay = start + n / rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                if time.monotonic() >= stop:
                    return
            raw, dumps, cid, _sig = item
            store.save_raw_crash(raw, dumps, cid)
            with lock:
                stored[0] += 1

    def process(n):
        while time.monotonic() < stop + 2:
            got, mark = False, idle[0]() if idle else None
            for cid in store.new_crashes(processor_id=f"{processor_id}-{n}", limit=4):
                raw, sig = plans[cid]
                store.save_processed(processed_crash(raw, cid, sig))
                acks.put((cid, time.time()))
                with lock:
                    processed[0] += 1
                got = True
            if not got:
                if idle:
                    idle[1](mark)
                time.sleep(0.01)

    threads = [threading.Thread(target=collect, name=f"collector-{n}") for n in range(collectors)]
    threads += [threading.Thread(target=process, args=(n,), name=f"processor-{n}") for n in range(processors)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"elapsed": time.monotonic() - start, "saved_raw": stored[0], "processed": processed[0]}


def drain_acks(acks, pending, wait_s):
    """Move the ``(crash id, ack time)`` items arriving on ``acks`` within ``wait_s`` seconds into
    ``pending`` (a freshness observer's poll); True when the end marker (None) came."""
    deadline, ended = time.time() + wait_s, False
    while True:
        try:
            item = acks.get(timeout=max(0.0, deadline - time.time()))
        except queue.Empty:
            return ended
        if item is None:
            ended = True
        else:
            pending[item[0]] = item[1]
