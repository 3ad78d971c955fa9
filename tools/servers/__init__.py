"""Local servers for tests and benchmarks: a private Apache HBase (standalone or a cluster) and
``socorro-store serve`` as a child process."""
