"""The demo: a collector, several processors and the readers, on one store.

:func:`synthetic_crashes` makes crashes that look like production (``reference/crash-data.md``):
Socorro crash ids, ProductName/Version/BuildID/ReleaseChannel/ProcessType, hang pairs sharing a
HangID, a mix of legacy throttle results, dumps of realistic (compressible) size, a few user
comments and URLs (protected annotations), and signatures drawn from a Zipf distribution (s = 1)
over a few thousand names, submitted over one UTC day (or its part up to a moment) with a daily
cycle.  :func:`processed_crash` is what Socorro's processor writes for one of them: OS and its
version, CPU, crash reason and address, uptime, install age, process type, release channel,
build, notes, and a ``json_dump`` (``crash_info``, the crashing thread's frames, the other
thread, ``modules``, ``system_info``) whose top frames are the signature's functions.

:func:`run_demo` saves them in batches from a collector thread while processor threads drain the
queue and save processed crashes in batches, then reads back what the store says: crashes
stored, queue sizes, top signatures, hourly counts and crashes/s.  By default the crashes are
today's, up to now (so the web view's home page shows them); ``day`` gives a whole other day.
"""

import bisect
import hashlib
import itertools
import math
import random
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone

from .crashstore.store import open_store
from .schema import keys as K

PRODUCTS = [("Firefox", 0.70), ("Fenix", 0.15), ("Thunderbird", 0.08), ("Focus", 0.07)]
CHANNELS = [("release", 0.75), ("beta", 0.12), ("nightly", 0.06), ("esr", 0.05), ("aurora", 0.02)]
PROCESS_TYPES = [("default", 0.45), ("content", 0.35), ("gpu", 0.08), ("rdd", 0.04),
                 ("socket", 0.03), ("utility", 0.03), ("gmplugin", 0.02)]
THROTTLE = [(0, 0.6), (1, 0.3), (2, 0.1)]
_NAMESPACES = ["mozilla::dom", "mozilla::layers", "mozilla::ipc", "mozilla::net", "mozilla::gfx", "js::gc", "js::jit",
               "mozilla::widget", "mozilla::image", "mozilla::media", "mozilla::a11y", "mozilla::wr"]
_CLASSES = ["ScriptLoader", "Element", "Document", "CompositorBridgeParent", "MessageChannel", "HttpChannelChild",
            "DrawTargetD2D1", "Arena", "GCRuntime", "BaselineCompiler", "nsWindow", "RasterImage", "MediaDecoder",
            "DocAccessible", "RenderThread", "WorkerPrivate", "PresShell", "TextureClient", "ContentParent",
            "ServiceWorkerManager"]
_METHODS = ["ProcessRequest", "Finalize", "Send", "OnStopRequest", "Paint", "Destroy", "Shutdown", "Run",
            "HandleEvent", "Flush", "Init", "DispatchEvent", "RecvMessage", "Release", "Update", "Decode",
            "Notify", "Close"]
# Signatures that are not a function, as Socorro's signature generation writes them (a few of
# them rank high: the demo's top crashers look like crash-stats').
_SPECIAL = ["OOM | small", "IPCError-browser | ShutDownKill", "OOM | large | mozalloc_abort | xul.dll",
            "shutdownhang | nsThread::Shutdown", "core::panicking::panic_fmt | webrender::renderer::Renderer::render"]


def weighted_choice(rng, table):
    """A value of ``table`` (``[(value, weight)]``, weights summing to 1) drawn with ``rng``."""
    x, acc = rng.random(), 0.0
    for value, weight in table:
        acc += weight
        if x < acc:
            return value
    return table[-1][0]


def signature_names(count, rng):
    """``count`` distinct plausible signatures (``namespace::Class::Method``, some of two frames,
    some not a function: ``OOM | small``, ``libxul.so@0x…``); some are prefixes of others on purpose."""
    names, seen = [], set()
    special = iter(_SPECIAL)
    while len(names) < count:
        i = len(names)
        if i in (1, 3, 6, 10, 15):
            name = next(special, None) or f"libxul.so@0x{rng.randrange(16**6):06x}"
        elif rng.random() < 0.04:
            name = f"libxul.so@0x{rng.randrange(16**6):06x}"
        else:
            name = f"{rng.choice(_NAMESPACES)}::{rng.choice(_CLASSES)}::{rng.choice(_METHODS)}"
            if rng.random() < 0.3 or name in seen:
                name += f" | {rng.choice(_NAMESPACES)}::{rng.choice(_CLASSES)}::{rng.choice(_METHODS)}"
        if i % 97 == 1 and i > 96 and not names[-1].startswith("libxul"):
            name = names[-1] + " | " + name  # a signature extending another one
        if name not in seen:
            seen.add(name)
            names.append(name)
    return names


class Zipf:
    """Draw ranks 0..n-1 with probability proportional to 1/(rank+1)**s."""

    def __init__(self, n, s=1.0):
        weights = [1.0 / (k + 1) ** s for k in range(n)]
        self.cumulative = list(itertools.accumulate(weights))

    def draw(self, rng):
        return bisect.bisect_left(self.cumulative, rng.random() * self.cumulative[-1])


def crash_id_for(day, rng):
    """A Socorro crash id (random UUID, depth 2, the day's YYMMDD)."""
    text = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    return text[:-7] + "2" + day.strftime("%y%m%d")


def _daily_cycle_second(rng, seconds=86400):
    """A second of the day before ``seconds``, denser when Europe and the Americas are awake."""
    while True:
        second = rng.randrange(max(1, seconds))
        hour = second / 3600.0
        load = 0.55 + 0.45 * math.sin((hour - 9) / 24 * 2 * math.pi)
        if rng.random() < load:
            return second


MOBILE = {"Fenix", "Focus"}
DESKTOP_OS = [("Windows NT", 0.75), ("Mac OS X", 0.15), ("Linux", 0.10)]
_APP_NOTES = {
    "Windows NT": "AdapterVendorID: 0x10de, AdapterDeviceID: 0x2484, AdapterSubsysID: 00000000, "
                  "AdapterDriverVersion: 31.0.15.3623\nD3D11 Layers? D3D11 Layers+ D2D1.1? D2D1.1+ DWrite? DWrite+ ",
    "Mac OS X": "AdapterVendorID: 0x1002, AdapterDeviceID: 0x7340\nGL Context? GL Context+ WebGL? WebGL+ ",
    "Linux": "FP(D00-L1000-W00001000-T000) GLXtest process failed\nGL Context? GL Context+ WebGL? WebGL+ ",
    "Android": "AdapterDescription: 'Qualcomm -- Adreno (TM) 650'\nGL Context? GL Context+ WebGL? WebGL+ ",
}


def os_of(raw, rng):
    """The OS a crash of ``raw`` ran on: Android for the mobile products, else a desktop OS."""
    return "Android" if raw.get("ProductName") in MOBILE else weighted_choice(rng, DESKTOP_OS)


def synthetic_crashes(n, day, seed=None, dump_kb=150, signatures=3000, until=None):
    """``n`` crashes as ``[(raw_crash, dumps, crash_id, planned signature)]`` in submit order.

    Submitted over the UTC day ``day``, or, with ``until`` (a moment of that day), from its
    midnight up to ``until``.  The planned signature is what a processor would compute (None:
    processing fails).  The raw crash also carries ``OS`` (a public annotation some crash reporters
    send; :func:`processed_crash` takes the OS from it, as a processor from the minidump).
    """
    rng = random.Random(seed)
    names = signature_names(signatures, rng)
    zipf = Zipf(len(names))
    start = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
    span = 86400 if until is None else max(1, int((until - start).total_seconds()))
    seconds = sorted(min(span - 1e-6, _daily_cycle_second(rng, span) + rng.random()) for _ in range(n))
    out, pending_hang = [], None
    for second in seconds:
        crash_id = crash_id_for(day, rng)
        submitted = start + timedelta(seconds=second)
        product = weighted_choice(rng, PRODUCTS)
        major = rng.randint(115, 125)
        build = submitted - timedelta(days=rng.randint(1, 40))
        raw = {
            "ProductName": product, "Version": f"{major}.0.{rng.randint(0, 3)}",
            "BuildID": build.strftime("%Y%m%d%H%M%S"), "ReleaseChannel": weighted_choice(rng, CHANNELS),
            "ProcessType": weighted_choice(rng, PROCESS_TYPES), "CPUArchitecture": None,  # below: one the OS runs on
            "CrashTime": str(int(submitted.timestamp()) - rng.randint(0, 60)),
            "InstallTime": str(int(build.timestamp())), "AvailablePhysicalMemory": str(rng.randrange(2**30, 2**35)),
            "submitted_timestamp": submitted.isoformat(), "uuid": crash_id,
            "legacy_processing": weighted_choice(rng, THROTTLE), "throttle_rate": 10,
        }
        raw["OS"] = os_of(raw, rng)
        raw["CPUArchitecture"] = rng.choice(_OS_DETAILS[raw["OS"]][1])  # so the processed cpu_arch agrees
        raw["Notes"] = _APP_NOTES[raw["OS"]]
        if rng.random() < 0.03:  # protected annotations: shown only with web --unredacted
            raw["Comments"] = f"It crashed when I opened a tab. Mail me: user{rng.randrange(10**6)}@example.com"
            raw["URL"] = f"https://intranet.example/login?session={rng.getrandbits(64):016x}"
        if pending_hang is not None:  # second half of a hang pair: the child side
            raw["HangID"], raw["ProcessType"] = pending_hang, rng.choice(["plugin", "content"])
            pending_hang = None
        elif rng.random() < 0.03:
            pending_hang = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            raw["HangID"], raw["ProcessType"] = pending_hang, "default"
        size = max(1024, int(rng.lognormvariate(math.log(dump_kb * 1024) - 0.18, 0.6))) if dump_kb else 0
        dumps = {}
        if size:
            # Minidumps are mostly zero-filled regions plus some entropy: compressible, as real ones.
            noise = rng.randbytes(size // 8)
            dumps["upload_file_minidump"] = noise + bytes(size - len(noise))
        roll = rng.random()
        signature = None if roll < 0.01 else ("" if roll < 0.015 else names[zipf.draw(rng)])
        out.append((raw, dumps, crash_id, signature))
    return out


# -- what a processor writes: Socorro's processed crash --------------------------------------

_OS_DETAILS = {  # os_name: ([(pretty version, os_ver)], CPU architectures, main module, system modules, first frames)
    "Windows NT": ([("Windows 11", "10.0.22631"), ("Windows 10", "10.0.19045"), ("Windows 7", "6.1.7601 Service Pack 1")],
                   ["amd64", "x86", "arm64"], ("xul.dll", "xul.pdb"),
                   [("ntdll.dll", "ntdll.pdb"), ("kernel32.dll", "kernel32.pdb"), ("KERNELBASE.dll", "kernelbase.pdb"),
                    ("ucrtbase.dll", "ucrtbase.pdb"), ("d3d11.dll", "d3d11.pdb")],
                   [("kernel32.dll", "BaseThreadInitThunk"), ("ntdll.dll", "RtlUserThreadStart")]),
    "Mac OS X": ([("macOS 14.6.1", "14.6.1 23G93"), ("macOS 13.6.9", "13.6.9 22G830")], ["arm64", "amd64"],
                 ("XUL", "XUL"), [("libsystem_kernel.dylib", "libsystem_kernel.dylib"),
                                  ("CoreFoundation", "CoreFoundation"), ("AppKit", "AppKit")],
                 [("dyld", "start")]),
    "Linux": ([("Ubuntu 22.04.4 LTS", "0.0.0 Linux 6.5.0-41-generic"), ("Fedora 40", "0.0.0 Linux 6.9.7-200.fc40")],
              ["amd64"], ("libxul.so", "libxul.so"),
              [("libc.so.6", "libc.so.6"), ("libglib-2.0.so.0", "libglib-2.0.so.0"), ("libgtk-3.so.0", "libgtk-3.so.0")],
              [("libc.so.6", "__libc_start_main"), ("firefox-bin", "_start")]),
    "Android": ([("Android 14 (REL)", "0.0.0 Linux 5.10.198"), ("Android 13 (REL)", "0.0.0 Linux 5.4.233")],
                ["arm64", "arm"], ("libxul.so", "libxul.so"), [("libc.so", "libc.so"), ("libart.so", "libart.so")],
                [("libc.so", "__start_thread")]),
}
_REASONS = {"Windows NT": ["EXCEPTION_ACCESS_VIOLATION_READ", "EXCEPTION_ACCESS_VIOLATION_WRITE", "EXCEPTION_BREAKPOINT",
                           "EXCEPTION_STACK_OVERFLOW"],
            "Mac OS X": ["EXC_BAD_ACCESS / KERN_INVALID_ADDRESS", "EXC_BAD_ACCESS / KERN_PROTECTION_FAILURE",
                         "EXC_BAD_INSTRUCTION / EXC_I386_INVOP"],
            "Linux": ["SIGSEGV / SEGV_MAPERR", "SIGSEGV / SEGV_ACCERR", "SIGABRT", "SIGILL / ILL_ILLOPN"],
            "Android": ["SIGSEGV / SEGV_MAPERR", "SIGABRT", "SIGBUS / BUS_ADRALN"]}
#: where a process's modules are mapped: high in a 64-bit address space, under 2 GB in a 32-bit one
#: (frames, modules and the crash address of one crash all agree with its cpu_arch)
_ADDRESS_BASE_64 = 0x7ff800000000
_ADDRESS_BASE_32 = {"x86": 0x60000000, "arm": 0x40000000}
_CPU_INFO = {"amd64": "GenuineIntel family 6 model 154 stepping 3", "x86": "GenuineIntel family 6 model 142 stepping 10",
             "arm64": "ARM 0x41 part 0xd0c", "arm": "ARM 0x41 part 0xd05"}
_LOOP = [("nsThread::ProcessNextEvent(bool, bool*)", "xpcom/threads/nsThread.cpp", 1148),
         ("NS_ProcessNextEvent(nsIThread*, bool)", "xpcom/threads/nsThreadUtils.cpp", 465),
         ("mozilla::ipc::MessagePump::Run(base::MessagePump::Delegate*)", "ipc/glue/MessagePump.cpp", 85),
         ("MessageLoop::Run()", "ipc/chromium/src/base/message_loop.cc", 369),
         ("nsBaseAppShell::Run()", "widget/nsBaseAppShell.cpp", 149),
         ("XRE_main(int, char**, mozilla::BootstrapConfig const&)", "toolkit/xre/nsAppRunner.cpp", 5961)]
_OOM = [("mozalloc_abort(char const*)", "memory/mozalloc/mozalloc_abort.cpp", 33),
        ("mozalloc_handle_oom(unsigned long)", "memory/mozalloc/mozalloc_oom.cpp", 51),
        ("moz_xmalloc(unsigned long)", "memory/mozalloc/mozalloc.cpp", 52)]


def signature_functions(signature):
    """The functions a crash of ``signature`` has on top of its crashing thread, in order: the
    signature's frames that are functions (``a::b::C``, not ``OOM``, ``small``, ``module@0x…``)."""
    return [part for part in (signature or "").split(" | ") if "::" in part or part.startswith("moz")]


def _stable(*parts):
    """A 128-bit number of ``parts``, the same in every run: debug ids, file revisions."""
    return int.from_bytes(hashlib.sha256("|".join(parts).encode("utf-8", "surrogatepass")).digest()[:16], "big")


def _source(function):
    """A plausible source file of a Gecko function (the same for the same class)."""
    scope = function.split("(")[0].rsplit("::", 1)[0]
    folder = scope.split("::")[-2].lower() if scope.count("::") >= 1 else "xpcom"
    return f"{folder}/{scope.split('::')[-1]}.cpp"


def _address_base(arch):
    return _ADDRESS_BASE_32.get(arch, _ADDRESS_BASE_64)


def _frames(signature, os_name, main, rng, revision, base=_ADDRESS_BASE_64):
    """The crashing thread's frames: the signature's own, then the event loop, then the OS's;
    their addresses from ``base`` (:func:`_address_base` of the crash's CPU)."""
    module = main[0]
    frames = []

    def add(function, file=None, line=None, module=module, trust="cfi"):
        frame = {"frame": len(frames), "module": module, "trust": "context" if not frames else trust,
                 "module_offset": f"0x{rng.randrange(0x1000, 0x8000000):x}"}
        frame["offset"] = f"0x{base + int(frame['module_offset'], 16):x}"
        if function is not None:
            frame["function"] = function
            frame["function_offset"] = f"0x{rng.randrange(8, 600):x}"
        if file is not None:
            frame["file"] = f"hg:hg.mozilla.org/releases/mozilla-release:{file}:{revision}"
            frame["line"] = line
        frames.append(frame)

    for part in (signature or "").split(" | "):
        if "@0x" in part:
            name, _, offset = part.partition("@")
            frames.append({"frame": len(frames), "module": main[0] if name.startswith(("libxul", "xul")) else name,
                           "module_offset": offset, "offset": f"0x{base + int(offset, 16):x}",
                           "trust": "context" if not frames else "scan"})
    if (signature or "").startswith("OOM"):
        for function, file, line in _OOM:
            add(function, file, line)
    for function in signature_functions(signature):
        if function.startswith("moz") and "::" not in function:
            continue  # mozalloc_abort: the OOM frames above
        add(f"{function}()", _source(function), rng.randrange(40, 4000))
    for function, file, line in _LOOP[rng.randrange(0, 3):]:
        add(function, file, line)
    for system, function in _OS_DETAILS[os_name][4]:
        add(function, module=system, trust="scan")
    return frames


def _modules(os_name, main, version, os_ver, rng, base=_ADDRESS_BASE_64):
    """``json_dump.modules``: the main module (Gecko, the product's version) and the system's,
    mapped one after the other from ``base``."""
    out = []
    for filename, debug_file in [main] + list(_OS_DETAILS[os_name][3]):
        gecko = filename == main[0]
        size = rng.randrange(0x100000, 0x8000000) if gecko else rng.randrange(0x10000, 0x400000)
        ident = _stable(filename, version if gecko else os_ver)
        out.append({"filename": filename, "version": version if gecko else os_ver.split(" ")[0],
                    "debug_id": f"{ident:032X}0"[:33], "debug_file": debug_file, "code_id": f"{ident >> 64:016X}",
                    "base_addr": f"0x{base:x}", "end_addr": f"0x{base + size:x}", "loaded_symbols": gecko,
                    "missing_symbols": False})
        base += size + 0x10000
    return out


def processed_crash(raw, crash_id, signature, processor="demo-processor", now=None):
    """The processed crash Socorro's processor would write for ``raw`` (planned ``signature``;
    None: the processing failed).  The same inputs give the same document, apart from the
    processing times (``now``, default the wall clock)."""
    now = now or datetime.now(timezone.utc)
    # Older processors copied the Email annotation: one of the store's forbidden keys, redacted by
    # get_processed (the CLI's tests read it back).
    contact = {"email": "someone@example.com"}
    if signature is None:
        return {"uuid": crash_id, "signature": None, "success": False, "completeddatetime": now.isoformat(),
                "completed_datetime": now.isoformat(), **contact,
                "processor_notes": f"{processor}: MinidumpStackwalkRule: stackwalker failed: no crashing thread"}
    rng = random.Random(_stable(crash_id))
    os_name = raw.get("OS") if raw.get("OS") in _OS_DETAILS else "Windows NT"
    versions, arches, main, _system, _tail = _OS_DETAILS[os_name]
    pretty, os_ver = versions[_stable(crash_id, "os") % len(versions)]
    arch = raw.get("CPUArchitecture") if raw.get("CPUArchitecture") in arches else arches[0]
    # an Intel-only exception code on an ARM Mac would contradict cpu_arch
    reasons = [r.replace("EXC_I386_INVOP", "EXC_ARM_UNDEFINED") if arch.startswith("arm") else r
               for r in _REASONS[os_name]]
    reason = reasons[_stable(signature, os_name) % len(reasons)] if rng.random() < 0.9 else rng.choice(reasons)
    top = 0x7fffffff if arch in _ADDRESS_BASE_32 else 0x7fffffffffff
    address = "0x0" if rng.random() < 0.3 else f"0x{rng.randrange(0x1000, top):x}"
    submitted = datetime.fromisoformat(raw["submitted_timestamp"])
    crash_time = int(raw.get("CrashTime") or submitted.timestamp())
    install_time = int(raw.get("InstallTime") or crash_time)
    uptime = max(1, int(rng.lognormvariate(6, 1.8)))
    frames = _frames(signature, os_name, main, rng, f"{_stable(raw.get('BuildID', '')) % 16**12:012x}",
                     _address_base(arch))
    crashing = {"thread_index": 0, "thread_name": "Main Thread" if raw.get("ProcessType") in (None, "default") else
                "MainThread", "frame_count": len(frames), "frames": frames}
    other = {"thread_name": "Timer", "frame_count": 2, "frames": [
        {"frame": 0, "module": _OS_DETAILS[os_name][3][0][0], "function": "NtWaitForAlertByThreadId" if os_name ==
         "Windows NT" else "__psynch_cvwait" if os_name == "Mac OS X" else "futex_wait", "trust": "context"},
        {"frame": 1, "module": main[0], "function": "mozilla::detail::ConditionVariableImpl::wait(mozilla::detail::MutexImpl&)",
         "trust": "cfi"}]}
    modules = _modules(os_name, main, raw.get("Version", ""), os_ver, rng, _address_base(arch))
    cpu_count = rng.choice([2, 4, 8, 12, 16])
    doc = {
        "uuid": crash_id, "crash_id": crash_id, "signature": signature, "success": True,
        "product": raw.get("ProductName"), "version": raw.get("Version"), "release_channel": raw.get("ReleaseChannel"),
        "build": raw.get("BuildID"), "process_type": raw.get("ProcessType") or "parent",
        "os_name": os_name, "os_pretty_version": pretty, "os_version": os_ver, "cpu_arch": arch,
        "cpu_info": _CPU_INFO.get(arch, arch), "cpu_count": cpu_count, "reason": reason, "address": address,
        "uptime": uptime, "install_age": max(0, crash_time - install_time), "install_time": install_time,
        "crash_time": crash_time, "startup_crash": uptime < 60, "app_notes": raw.get("Notes", ""),
        "processor_notes": f"{processor}; SignatureGenerationRule: ok",
        "date_processed": submitted.isoformat(), "started_datetime": now.isoformat(), "completed_datetime": now.isoformat(),
        "completeddatetime": now.isoformat(),  # the name this store's processors save under
        "crashing_thread": 0, "thread_count": 2, "hang": "HangID" in raw,
        "json_dump": {
            "status": "OK", "pid": rng.randrange(1000, 60000), "thread_count": 2, "main_module": 0,
            "crash_info": {"type": reason, "address": address, "crashing_thread": 0},
            "crashing_thread": crashing, "threads": [crashing, other], "modules": modules,
            "system_info": {"os": os_name, "os_ver": os_ver, "cpu_arch": arch, "cpu_info": _CPU_INFO.get(arch, arch),
                            "cpu_count": cpu_count},
        },
    }
    doc.update(contact)
    if "Comments" in raw:
        doc["user_comments"] = raw["Comments"]
    if "URL" in raw:
        doc["url"] = raw["URL"]
    return doc


def run_demo(url=None, crashes=2000, processors=4, batch_size=100, seed=None, dump_kb=150,
             day=None, progress=None, now=None):
    """Run the collector and ``processors`` processor threads; return a report dict.

    The crashes are submitted today (UTC) up to ``now`` (default: the wall clock), or over the
    whole of ``day`` when given.  Collector and processors save in batches of ``batch_size``
    (``save_raw_crashes``, ``save_processed_crashes``).  ``progress(n)`` is called with the
    number of crashes processed since the last call.
    """
    now = now or datetime.now(timezone.utc)
    until = None if day is not None else now
    day = day or now.date()
    data = synthetic_crashes(crashes, day, seed, dump_kb, until=until)
    planned = {crash_id: signature for _raw, _dumps, crash_id, signature in data}
    with open_store(url) as store:
        store.create_tables()
        collected = threading.Event()
        errors = []
        processed_count = [0]
        lock = threading.Lock()

        def collector():
            try:
                for i in range(0, len(data), batch_size):
                    store.save_raw_crashes([(r, d, c) for r, d, c, _s in data[i:i + batch_size]])
            except BaseException as exc:  # surface in the main thread
                errors.append(exc)
            finally:
                collected.set()

        def processor(number):
            name = f"demo-processor-{number}"
            try:
                while True:
                    done = collected.is_set()
                    ids = list(store.new_crashes(limit=batch_size, processor_id=name))
                    if not ids:
                        if done:
                            return
                        time.sleep(0.01)
                        continue
                    results = [processed_crash(store.get_raw_crash(crash_id), crash_id, planned.get(crash_id, "unknown"),
                                               name) for crash_id in ids]
                    store.save_processed_crashes(results)
                    with lock:
                        processed_count[0] += len(ids)
                    if progress:
                        progress(len(ids))
            except BaseException as exc:
                errors.append(exc)

        started = time.perf_counter()
        threads = [threading.Thread(target=collector)]
        threads += [threading.Thread(target=processor, args=(i,)) for i in range(processors)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        if errors:
            raise errors[0]
        store.settle()  # the counters sent and the search index fed: what the report and the pages read
        return _report(store, day, crashes, processed_count[0], elapsed)


def _report(store, day, submitted, processed, elapsed):
    start = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
    stored = sum(1 for _ in store.crashes_submitted(start, start + timedelta(days=1)))
    daily = K.signature_counter_columns(start)["day"]
    counts = []
    for row, cells in store.backend.scan(K.SIGNATURES, columns=[daily], page_size=1000):
        if daily in cells:
            counts.append((K.decode_counter(cells[daily]), K.signature_from_row(row)))
    counts.sort(key=lambda item: (-item[0], item[1]))
    hourly = {}
    for hour in range(24):
        row = K.metrics_row(start + timedelta(hours=hour), "hour")
        hourly[row.decode()] = store.get_metrics(row).get("submitted_crash_reports", 0)
    day_metrics = store.get_metrics(K.metrics_row(start, "day"))
    return {
        "url": getattr(store.backend, "url", None),
        "day": day.isoformat(),
        "crashes_submitted": submitted,
        "crashes_processed": processed,
        "crashes_stored_for_day": stored,
        "queue_sizes": store.queue_sizes(),
        "queue_drained": store.queue_sizes()["standard"] == 0,
        "unique_signatures_for_day": day_metrics.get("unique_crash_signatures", 0),
        "processing_errors_for_day": day_metrics.get("crash_report_processing_errors", 0),
        "hang_pairs_for_day": day_metrics.get("submitted_crash_report_hang_pairs", 0),
        "top_signatures": [{"signature": s, "count": c} for c, s in counts[:10]],
        "hourly_counts": hourly,
        "elapsed_seconds": round(elapsed, 3),
        "crashes_per_second": round(processed / elapsed, 1) if elapsed else None,
        "backend_calls": dict(store.backend.calls),
    }
