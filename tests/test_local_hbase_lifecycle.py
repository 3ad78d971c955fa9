"""Issue 32, defect 11: nothing ``tools/servers/local_hbase.py`` starts may outlive it.

Its JVMs run in sessions of their own (a terminal's Ctrl-C reaches none of them), so a failure
while starting, or a second Ctrl-C while stopping, used to leave the master running.  Stand-in
processes (``sleep`` in a session of its own, as the JVMs are started) take the JVMs' places.
"""

import signal
import subprocess

import pytest
from servers.hbase_standalone import LocalHBase


def _stand_in():
    return subprocess.Popen(["sleep", "300"], start_new_session=True)


@pytest.fixture
def hbase(tmp_path, monkeypatch):
    local = LocalHBase(tmp_path, log=lambda msg: None)
    monkeypatch.setattr("servers.hbase_standalone.fetch_jars", lambda version, log=None: tmp_path)
    monkeypatch.setattr(local, "_configure", lambda: None)
    started = []
    yield local, started
    for proc in started:  # whatever a failing test left: never outlive the test either
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_thrift_server_that_cannot_start_takes_the_master_down(hbase, monkeypatch):
    local, started = hbase

    def start_master():
        local.master = _stand_in()
        started.append(local.master)

    def start_thrift():
        raise OSError("no java for the Thrift server")

    monkeypatch.setattr(local, "start_master", start_master)
    monkeypatch.setattr(local, "start_thrift", start_thrift)
    with pytest.raises(OSError):
        local.start(timeout_s=5)
    assert started and all(proc.poll() is not None for proc in started)


def test_a_second_ctrl_c_while_stopping_still_ends_every_process(hbase, monkeypatch):
    local, started = hbase
    local.master, local.thrift = _stand_in(), _stand_in()
    started += [local.master, local.thrift]
    real_end = LocalHBase._end

    def interrupted_end(proc, sig, grace_s):
        if proc is local.thrift:  # the first wait, on the Thrift server, is interrupted
            raise KeyboardInterrupt
        real_end(proc, sig, grace_s)

    monkeypatch.setattr(LocalHBase, "_end", staticmethod(interrupted_end))
    with pytest.raises(KeyboardInterrupt):
        local.stop(grace_s=5)
    for proc in started:
        proc.wait(5)
        assert proc.returncode == -signal.SIGKILL


# -- the cluster (tools/servers/local_hbase_cluster.py): 3 + 2N processes, the same guarantees ------------

@pytest.fixture
def cluster(tmp_path, monkeypatch):
    from servers.local_hbase_cluster import LocalHBaseCluster

    local = LocalHBaseCluster(tmp_path, region_servers=2, thrift2=True, log=lambda msg: None)
    monkeypatch.setattr("servers.local_hbase_cluster.fetch_jars", lambda version, log=None: tmp_path)
    monkeypatch.setattr(local, "_configure", lambda: None)
    monkeypatch.setattr(local, "_wait_zookeeper", lambda deadline: None)
    local.ports = {role: [0] * len(procs) for role, procs in local.procs.items()}
    started = []
    yield local, started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_cluster_process_that_cannot_start_takes_every_started_one_down(cluster, monkeypatch):
    local, started = cluster

    def launch(role, index):
        if role == "thrift" and index == 1:
            raise OSError("no java for the second Thrift server")
        proc = _stand_in()
        local.procs[role][index] = proc
        started.append(proc)
        return proc

    monkeypatch.setattr(local, "_launch", launch)
    with pytest.raises(OSError):
        local.start(timeout_s=5)
    assert len(started) == 1 + 1 + 2 + 1  # zookeeper, master, 2 region servers, thrift 0
    assert all(proc.poll() is not None for proc in started)


def test_a_second_ctrl_c_while_stopping_a_cluster_still_ends_every_process(cluster, monkeypatch):
    local, started = cluster
    for role, procs in local.procs.items():
        for index in range(len(procs)):
            procs[index] = _stand_in()
            started.append(procs[index])
    real_end = LocalHBase._end

    def interrupted_end(proc, sig, grace_s):
        if proc is local.procs["regionserver"][0]:  # the wait on a region server is interrupted
            raise KeyboardInterrupt
        real_end(proc, sig, grace_s)

    monkeypatch.setattr(LocalHBase, "_end", staticmethod(interrupted_end))
    with pytest.raises(KeyboardInterrupt):
        local.stop(grace_s=5)
    assert len(started) == 1 + 1 + 3 * 2
    for proc in started:
        proc.wait(5)
        assert proc.returncode in (-signal.SIGKILL, -signal.SIGTERM)
    assert any(proc.returncode == -signal.SIGKILL for proc in started)  # those not stopped yet
