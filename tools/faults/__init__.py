"""Fault trials: the chaos harness and its runner, the fault-injecting proxy, faults on a real HBase
cluster, and the soak."""
