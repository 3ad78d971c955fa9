"""What every local HBase process needs before it starts: HBase's jars, Java's flags, its
configuration files and free loopback ports.  Shared by :mod:`servers.hbase_standalone` and
:mod:`servers.local_hbase_cluster`.

* **Jars.**  HBase's Thrift server (``org.apache.hbase:hbase-thrift``), the pure-Java codecs
  (``hbase-compression-aircompressor``: LZO, LZ4, Snappy, Zstd without native libraries) and a
  log4j2 binding are resolved with Maven into a cache outside the repository
  (``$SOCORRO_STORE_HBASE_CACHE``, default ``~/.cache/socorro-store/hbase/VERSION``), once.
  The version is the newest 2.6.x Maven Central lists, a ``-hadoop3`` build first (the next one
  when Maven cannot resolve it); ``$SOCORRO_STORE_HBASE_VERSION`` pins one.
* Without Java or Maven, :func:`require_tools` and :func:`fetch_jars` raise
  :class:`HBaseUnavailable` with one line saying what is missing.
"""

import os
import re
import shutil
import socket
import subprocess
import urllib.request
from pathlib import Path

MAVEN_REPO = os.environ.get("SOCORRO_STORE_MAVEN_REPO", "https://repo.maven.apache.org/maven2")
FALLBACK_VERSION = "2.6.1"
LOG4J_VERSION = "2.17.2"

# Java 17 closes the JDK internals HBase and Hadoop reach into (HBase's own bin/hbase passes these).
JAVA_FLAGS = [
    *[f"--add-opens=java.base/{pkg}=ALL-UNNAMED" for pkg in (
        "java.io", "java.nio", "sun.nio.ch", "java.lang", "jdk.internal.ref", "java.lang.reflect",
        "java.util", "java.util.concurrent")],
    "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
    "--add-exports=java.base/sun.net.dns=ALL-UNNAMED",
    "--add-exports=java.base/sun.net.util=ALL-UNNAMED",
    "--add-modules=jdk.unsupported",
    "-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true",
    "-XX:+UseSerialGC",  # two cores: the parallel collectors' threads only compete with HBase's
    "-XX:TieredStopAtLevel=1",  # C1 only: a short-lived test instance starts and warms up sooner
]

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local</groupId><artifactId>socorro-store-hbase</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.hbase</groupId><artifactId>hbase-thrift</artifactId>
      <version>{version}</version>
      <exclusions>
        <exclusion><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId></exclusion>
        <exclusion><groupId>ch.qos.reload4j</groupId><artifactId>reload4j</artifactId></exclusion>
      </exclusions>
    </dependency>
    <dependency><groupId>org.apache.hbase</groupId><artifactId>hbase-compression-aircompressor</artifactId>
      <version>{version}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId>
      <version>{log4j}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId>
      <version>{log4j}</version></dependency>
    <!-- Hadoop 2's classes call log4j 1 directly: the bridge, instead of reload4j -->
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-1.2-api</artifactId>
      <version>{log4j}</version></dependency>
  </dependencies>
</project>
"""

LOG4J2_PROPERTIES = """status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:hbase.log.file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %m%n
rootLogger = WARN,file
"""


class HBaseUnavailable(RuntimeError):
    """HBase cannot run here (no Java, no Maven, jars unresolvable) or did not come up."""


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cache_root():
    return Path(os.environ.get("SOCORRO_STORE_HBASE_CACHE", Path.home() / ".cache" / "socorro-store" / "hbase"))


def require_tools():
    """Raise :class:`HBaseUnavailable` naming what is missing: java (17) or mvn."""
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    if missing:
        raise HBaseUnavailable(f"real HBase needs {' and '.join(missing)} on PATH "
                               "(a JDK 17 and Maven 3; HBase's jars come from Maven Central)")


def _version_key(version):
    return [int(part) for part in re.findall(r"\d+", version.split("-")[0])]


def candidate_versions(series="2.6"):
    """``series``.x versions Maven Central lists, best first: ``-hadoop3`` builds, then newest.

    Falls back to the versions already cached, then to :data:`FALLBACK_VERSION`, when the
    repository cannot be read.
    """
    url = f"{MAVEN_REPO}/org/apache/hbase/hbase-thrift/maven-metadata.xml"
    try:
        with urllib.request.urlopen(url, timeout=30) as reply:
            listed = re.findall(r"<version>([^<]+)</version>", reply.read().decode())
    except OSError:
        listed = []
    listed = [v for v in listed if v.startswith(series + ".") and "alpha" not in v and "beta" not in v]
    if not listed:
        cached = [p.name for p in cache_root().glob(series + ".*") if (p / "complete").exists()]
        listed = cached or [FALLBACK_VERSION]
    return sorted(set(listed), key=lambda v: (v.endswith("-hadoop3"), _version_key(v)), reverse=True)


def fetch_jars(version=None, log=print):
    """The directory holding HBase's runtime jars, resolved with Maven on first use.

    ``version`` (or ``$SOCORRO_STORE_HBASE_VERSION``) pins one; otherwise the candidates are tried
    best first; a candidate already in the cache is used as it is.
    """
    require_tools()
    pinned = version or os.environ.get("SOCORRO_STORE_HBASE_VERSION")
    candidates = [pinned] if pinned else candidate_versions()
    errors = []
    for candidate in candidates:
        try:
            return _fetch_version(candidate, log)
        except HBaseUnavailable as exc:
            errors.append(str(exc))
    raise HBaseUnavailable("; ".join(errors))


def _fetch_version(version, log):
    home = cache_root() / version
    lib = home / "lib"
    if (home / "complete").exists():
        return lib
    home.mkdir(parents=True, exist_ok=True)
    (home / "pom.xml").write_text(_POM.format(version=version, log4j=LOG4J_VERSION))
    log(f"fetching HBase {version} jars with Maven into {lib} (once)")
    shutil.rmtree(lib, ignore_errors=True)
    result = subprocess.run(
        ["mvn", "-B", "-q", "-f", str(home / "pom.xml"), "dependency:copy-dependencies",
         "-DincludeScope=runtime", f"-DoutputDirectory={lib}"],
        capture_output=True, text=True)
    if result.returncode != 0:
        tail = " | ".join(line for line in (result.stdout + result.stderr).splitlines()
                          if "ERROR" in line)[:600]
        raise HBaseUnavailable(f"Maven could not resolve org.apache.hbase:hbase-thrift:{version}: {tail}")
    (home / "complete").write_text(version + "\n")
    return lib


def site_xml(properties):
    body = "\n".join(f"  <property><name>{k}</name><value>{v}</value></property>"
                     for k, v in properties.items())
    return f"<?xml version=\"1.0\"?>\n<configuration>\n{body}\n</configuration>\n"

