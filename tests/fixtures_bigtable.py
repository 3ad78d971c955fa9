"""Session fixture: Google's Bigtable emulator (``cbtemulator``) on a free loopback port.

The binary is found through ``$CBTEMULATOR``, else in the Google Cloud SDK: beside the ``gcloud``
on PATH (``SDK_ROOT/platform/bigtable-emulator/cbtemulator``), then the usual install roots.
Without the binary or without the ``bigtable`` extra (google-cloud-bigtable), the fixture skips
and says which one is missing.

While the session runs, ``BIGTABLE_EMULATOR_HOST`` points at the emulator (the client reads it
when a backend is opened).  The fixture returns ``bigtable://test-project/test-instance``;
``conftest.isolated_url`` appends ``-tXXXX`` so each test gets its own instance (the emulator
needs no instance to be created).  The emulator keeps data in memory only and is stopped at the
end of the session.
"""

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

EMULATOR_ENV = "BIGTABLE_EMULATOR_HOST"
BINARY_ENV = "CBTEMULATOR"
RELATIVE = Path("platform") / "bigtable-emulator" / "cbtemulator"
SDK_ROOTS = [
    "/usr/lib/google-cloud-sdk",          # Debian/Ubuntu google-cloud-cli packages
    "/usr/share/google-cloud-sdk",
    "/opt/google-cloud-sdk",
    "/usr/local/google-cloud-sdk",
    str(Path.home() / "google-cloud-sdk"),  # the interactive installer
]
STARTUP_SECONDS = 15.0


def find_emulator():
    """Path of ``cbtemulator``, or None.  ``$CBTEMULATOR`` wins; it must then exist."""
    explicit = os.environ.get(BINARY_ENV)
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    roots = []
    gcloud = shutil.which("gcloud")
    if gcloud:
        roots.append(Path(os.path.realpath(gcloud)).parent.parent)  # SDK_ROOT/bin/gcloud
    if os.environ.get("CLOUDSDK_ROOT_DIR"):
        roots.append(Path(os.environ["CLOUDSDK_ROOT_DIR"]))
    roots.extend(Path(r) for r in SDK_ROOTS)
    for root in roots:
        candidate = root / RELATIVE
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_listening(process, port, deadline):
    """True once the port accepts connections; False if the process died or time ran out."""
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def stop(process):
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def start_emulator(binary, log_path):
    """Start the emulator on a free port; retry if another process took the port meanwhile."""
    for _attempt in range(3):
        port = free_port()
        log = open(log_path, "ab")
        process = subprocess.Popen([binary, "-host", "127.0.0.1", "-port", str(port)],
                                   stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        if wait_until_listening(process, port, time.monotonic() + STARTUP_SECONDS):
            return process, port
        stop(process)
    raise RuntimeError(f"cbtemulator did not start; see {log_path}")


@pytest.fixture(scope="session")
def bigtable_emulator_url(tmp_path_factory):
    try:
        import google.cloud.bigtable.data  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"bigtable extra not installed (pip install 'socorro-store[bigtable]'): {exc}")
    binary = find_emulator()
    if binary is None:
        where = f"${BINARY_ENV} ({os.environ[BINARY_ENV]!r} is not executable)" if os.environ.get(BINARY_ENV) \
            else f"${BINARY_ENV} unset and no Cloud SDK with platform/bigtable-emulator/cbtemulator found"
        pytest.skip(f"Bigtable emulator not found: {where} "
                    "(install google-cloud-cli-bigtable-emulator or `gcloud components install bigtable`)")
    log_path = tmp_path_factory.mktemp("cbtemulator") / "cbtemulator.log"
    process, port = start_emulator(binary, log_path)
    previous = os.environ.get(EMULATOR_ENV)
    os.environ[EMULATOR_ENV] = f"127.0.0.1:{port}"
    try:
        yield "bigtable://test-project/test-instance"
    finally:
        if previous is None:
            os.environ.pop(EMULATOR_ENV, None)
        else:
            os.environ[EMULATOR_ENV] = previous
        stop(process)
