"""Session fixture: a real HBase in Docker (testcontainers), serving Thrift1 on 9090.

The image comes from ``$SOCORRO_HBASE_IMAGE`` (default ``harisekhon/hbase``, the image Feast's
HBase tests use: a standalone HBase whose Thrift1 server listens on 9090).  The container's port is
published on 127.0.0.1 only.  Startup waits until a Thrift ``getTableNames`` call answers, up to
``$SOCORRO_HBASE_START_TIMEOUT`` seconds (default 240: a cold HBase takes a minute or more).

Where no Docker engine answers, every test that needs this fixture is skipped with the reason.
"""

import os
import time

import pytest

DEFAULT_IMAGE = "harisekhon/hbase"
THRIFT_PORT = 9090


def _docker_unavailable_reason():
    """None when a Docker engine answers a ping, else why not (one line)."""
    try:
        import docker
    except ImportError as exc:  # the test extra installs it with testcontainers
        return f"docker SDK not installed: {exc}"
    try:
        client = docker.from_env()
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # DockerException, connection refused, missing socket, ...
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no answer'}"
    return None


def _wait_for_thrift(host, port, deadline):
    """Poll until HBase's Thrift server answers getTableNames; raise TimeoutError at ``deadline``.

    A port that accepts connections is not enough: the Thrift server starts before the master and
    region server are ready, and calls fail until they are.
    """
    import happybase

    last_error = None
    while time.monotonic() < deadline:
        connection = None
        try:
            connection = happybase.Connection(host, port, timeout=10000)
            connection.tables()
            return
        except Exception as exc:  # refused, reset, IOError from a master still starting
            last_error = exc
            time.sleep(2)
        finally:
            if connection is not None:
                connection.close()
    raise TimeoutError(f"HBase Thrift on {host}:{port} did not answer: {last_error!r}")


@pytest.fixture(scope="session")
def hbase_docker_url():
    """``hbase://HOST:PORT`` of a throwaway HBase container (skips without a Docker engine)."""
    reason = _docker_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no Docker engine: real-HBase tests need one ({reason})")
    from testcontainers.core.container import DockerContainer

    image = os.environ.get("SOCORRO_HBASE_IMAGE", DEFAULT_IMAGE)
    timeout_s = float(os.environ.get("SOCORRO_HBASE_START_TIMEOUT", "240"))
    container = DockerContainer(image).with_exposed_ports(THRIFT_PORT)
    # Publish on loopback only (docker-py accepts (host_ip, host_port); None = any free port).
    container.ports[f"{THRIFT_PORT}"] = ("127.0.0.1", None)
    try:
        container.start()
    except Exception as exc:  # engine went away, image pull refused, ...
        pytest.skip(f"no Docker engine: real-HBase tests need one (starting {image} failed: "
                    f"{type(exc).__name__}: {exc})")
    try:
        host = container.get_container_host_ip()
        port = int(container.get_exposed_port(THRIFT_PORT))
        _wait_for_thrift(host, port, time.monotonic() + timeout_s)
        yield f"hbase://{host}:{port}"
    finally:
        container.stop()
