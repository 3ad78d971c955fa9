"""The chaos harness's child roles: ``python tools/faults/chaos_children.py ROLE …`` (or
``python tools/faults/chaos_harness.py ROLE …``, the same roles).

``writer`` saves crashes (and processes some of them) and appends ``S <id> <latency µs>`` /
``P <id>`` to an acknowledgement file only after the call returned; ``processor`` takes crashes
from the queue, reads them and saves them processed.  An error is logged as ``E <type> <message>``
(typed) or ``X <type> <message>`` (anything else: a bug) and ends the child.  ``steady-writer`` and
``steady-processor`` ride through a server-side fault instead: they log ``R …`` and try again.
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

if not __package__:  # run as a file: tools/ goes on sys.path, so its packages import
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from faults.chaos_workload import AckLog, make_raw, processed_doc, read_acks  # noqa: E402
from socorro_store.errors import SocorroStoreError  # noqa: E402

# -- child roles -----------------------------------------------------------------------------

def _log_error(acks, exc):
    kind = "E" if isinstance(exc, SocorroStoreError) else "X"
    acks.write(kind, type(exc).__name__, str(exc)[:300])


def run_writer(url, seed, start, count, ack_path, process_every=0, flush_ms=None):
    """Save crashes ``start..start+count`` of ``seed``; process every ``process_every``-th one."""
    from socorro_store import open_store

    acks = AckLog(ack_path)
    try:
        with open_store(url, counter_flush_ms=flush_ms) as store:
            for i in range(start, start + count):
                crash_id, raw, dumps = make_raw(seed, i)
                began = time.perf_counter()
                store.save_raw_crash(raw, dumps, crash_id)
                acks.write("S", crash_id, int((time.perf_counter() - began) * 1e6))
                if process_every and i % process_every == 0:
                    store.save_processed(processed_doc(raw))
                    acks.write("P", crash_id)
    except Exception as exc:  # noqa: BLE001 - the parent classifies it
        _log_error(acks, exc)
        return 1
    finally:
        acks.close()
    return 0


def run_processor(url, ack_path, done_path, batch=20, name=None):
    """Take, read and process crashes until the queue is empty and ``done_path`` exists."""
    from socorro_store import open_store

    acks = AckLog(ack_path)
    name = name or f"chaos-{os.getpid()}"
    try:
        with open_store(url) as store:
            idle_after_done = 0
            while idle_after_done < 2:
                finished = os.path.exists(done_path)  # read before taking: no crash arrives after
                ids = list(store.new_crashes(limit=batch, processor_id=name))
                if not ids:
                    idle_after_done += finished
                    time.sleep(0.05)
                    continue
                for crash_id in ids:
                    raw = store.get_raw_crash(crash_id)
                    store.get_raw_dumps(crash_id)
                    store.save_processed(processed_doc(raw))
                    acks.write("P", crash_id)
    except Exception as exc:  # noqa: BLE001
        _log_error(acks, exc)
        return 1
    finally:
        acks.close()
    return 0


def spawn(role, *args):
    """Start ``python tools/faults/chaos_children.py ROLE ARGS…``; return the Popen."""
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), role, *map(str, args)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def spawn_writer(url, seed, start, count, ack_path, process_every=0, flush_ms=None):
    return spawn("writer", url, seed, start, count, ack_path, process_every, flush_ms or 0)


def wait_for_acks(path, n, proc, timeout=60, kind="S"):
    """Wait until ``path`` holds ``n`` acknowledgements of ``kind`` (``S`` saves, ``P`` processed
    saves), or the child exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(read_acks(path)[kind]) >= n or proc.poll() is not None:
            return
        time.sleep(0.01)


# -- steady children: they ride through a server-side fault (tools/faults/cluster_faults.py) --

def run_steady_writer(url, seed, start, count, ack_path, stop_path=None, give_up_s=300):
    """Save crashes ``start..start+count`` of ``seed`` one call each; a typed error is logged as
    ``R <type> <message>`` and the same crash is saved again (saves are idempotent) until it is
    acknowledged or it failed for ``give_up_s``.  It stops early, between two crashes, once
    ``stop_path`` exists (so crashes ``start..start+len(S lines)`` are all it tried).
    Acknowledgements are ``S <id> <µs>`` (from the first attempt) followed by ``T <id> <unix ms>``
    (when it was acknowledged)."""
    from socorro_store import open_store

    acks = AckLog(ack_path)
    try:
        with open_store(url) as store:
            for i in range(start, start + count):
                if stop_path and os.path.exists(stop_path):
                    break
                crash_id, raw, dumps = make_raw(seed, i)
                began = time.perf_counter()
                while True:
                    try:
                        store.save_raw_crash(raw, dumps, crash_id)
                        break
                    except SocorroStoreError as exc:
                        acks.write("R", type(exc).__name__, str(exc)[:200])
                        if time.perf_counter() - began > give_up_s:
                            raise
                        time.sleep(0.2)
                acks.write("S", crash_id, int((time.perf_counter() - began) * 1e6))
                acks.write("T", crash_id, int(time.time() * 1000))
    except Exception as exc:  # noqa: BLE001 - the parent classifies it
        _log_error(acks, exc)
        return 1
    finally:
        acks.close()
    return 0


def run_steady_processor(url, ack_path, done_path, batch=20, lease_s=20, give_up_s=300, name=None):
    """Take, read and process crashes until ``done_path`` exists and the queue yielded nothing for
    longer than a lease (a crash whose claim a failed call lost comes back when its ``lease_s``
    lease ends).  A typed
    error is logged as ``R …`` and the call is tried again; ``P <id>`` then ``T <id> <unix ms>``
    once a crash is saved processed."""
    from socorro_store import open_store

    acks = AckLog(ack_path)
    name = name or f"steady-{os.getpid()}"

    def patiently(call):
        began = time.monotonic()
        while True:
            try:
                return call()
            except SocorroStoreError as exc:
                acks.write("R", type(exc).__name__, str(exc)[:200])
                if time.monotonic() - began > give_up_s:
                    raise
                time.sleep(0.2)

    try:
        with open_store(url) as store:
            idle_since = None
            while True:
                finished = os.path.exists(done_path)  # read before taking: no crash arrives after
                ids = patiently(lambda: list(store.new_crashes(limit=batch, processor_id=name, lease_seconds=lease_s)))
                if not ids:
                    idle_since = idle_since or time.monotonic()
                    if finished and time.monotonic() - idle_since > lease_s + 2:
                        break  # longer than a lease: no claim a failed call lost is still out
                    time.sleep(0.1)
                    continue
                idle_since = None
                for crash_id in ids:
                    raw = patiently(lambda: store.get_raw_crash(crash_id))
                    patiently(lambda: store.get_raw_dumps(crash_id))
                    patiently(lambda: store.save_processed(processed_doc(raw)))
                    acks.write("P", crash_id)
                    acks.write("T", crash_id, int(time.time() * 1000))
    except Exception as exc:  # noqa: BLE001
        _log_error(acks, exc)
        return 1
    finally:
        acks.close()
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python tools/faults/chaos_children.py")
    sub = parser.add_subparsers(dest="role", required=True)
    w = sub.add_parser("writer")
    for name in ("url", "seed", "start", "count", "ack", "process_every", "flush_ms"):
        w.add_argument(name)
    p = sub.add_parser("processor")
    for name in ("url", "ack", "done", "batch"):
        p.add_argument(name)
    sw = sub.add_parser("steady-writer")
    for name in ("url", "seed", "start", "count", "ack"):
        sw.add_argument(name)
    sw.add_argument("stop", nargs="?")
    sp = sub.add_parser("steady-processor")
    for name in ("url", "ack", "done", "batch"):
        sp.add_argument(name)
    args = parser.parse_args(argv)
    if args.role == "steady-writer":
        return run_steady_writer(args.url, args.seed, int(args.start), int(args.count), args.ack, args.stop)
    if args.role == "steady-processor":
        return run_steady_processor(args.url, args.ack, args.done, int(args.batch))
    if args.role == "writer":
        return run_writer(args.url, args.seed, int(args.start), int(args.count), args.ack,
                          int(args.process_every), int(args.flush_ms) or None)
    return run_processor(args.url, args.ack, args.done, int(args.batch))


if __name__ == "__main__":
    sys.exit(main())
