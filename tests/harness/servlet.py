"""The servlet containers: Tomcat 10 (Debian's tomcat10) and Jetty 9 (Debian's jetty9), each
from a base directory of its own with one web application, tests/backends/apps/Echo.java mapped
to ``/*``, answering with ``getServletPath() + getPathInfo()``.  One JVM each: start them once
per test session."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from .echo import EchoServer

APP = Path(__file__).resolve().parent.parent / "backends" / "apps" / "Echo.java"
TOMCAT_HOME = Path("/usr/share/tomcat10")
JETTY_HOME = Path("/usr/share/jetty9")
TOMCAT_MISSING = "tomcat10 is not installed (run .ci/install-backends, or apt-get install tomcat10)"
JETTY_MISSING = "jetty9 is not installed (run .ci/install-backends, or apt-get install jetty9)"

_WEB_XML = """\
<?xml version="1.0" encoding="UTF-8"?>
<web-app xmlns="{ns}" version="{version}">
  <servlet><servlet-name>echo</servlet-name><servlet-class>Echo</servlet-class></servlet>
  <servlet-mapping><servlet-name>echo</servlet-name><url-pattern>/*</url-pattern></servlet-mapping>
</web-app>
"""

_TOMCAT_SERVER_XML = """\
<?xml version="1.0" encoding="UTF-8"?>
<Server port="-1" shutdown="SHUTDOWN">
  <Service name="Catalina">
    <Connector port="{port}" address="127.0.0.1" protocol="HTTP/1.1"
               connectionTimeout="20000" {attributes}/>
    <Engine name="Catalina" defaultHost="localhost">
      <Host name="localhost" appBase="webapps" unpackWARs="false" autoDeploy="false"/>
    </Engine>
  </Service>
</Server>
"""


def _webapp(base: Path, api: Path, jakarta: bool) -> None:
    """webapps/ROOT under ``base``: Echo compiled against ``api``, mapped to /*."""
    classes = base / "webapps" / "ROOT" / "WEB-INF" / "classes"
    classes.mkdir(parents=True)
    source = APP.read_text()
    if not jakarta:
        source = source.replace("jakarta.servlet", "javax.servlet")
    (classes / "Echo.java").write_text(source)
    subprocess.run(
        ["javac", "-nowarn", "-cp", str(api), "-d", str(classes), str(classes / "Echo.java")],
        check=True,
        capture_output=True,
    )
    ns, version = (
        ("https://jakarta.ee/xml/ns/jakartaee", "5.0")
        if jakarta
        else ("http://xmlns.jcp.org/xml/ns/javaee", "3.1")
    )
    (classes.parent / "web.xml").write_text(_WEB_XML.format(ns=ns, version=version))


def tomcat_version() -> str:
    out = subprocess.run(
        [
            "java",
            "-cp",
            str(TOMCAT_HOME / "lib" / "catalina.jar"),
            "org.apache.catalina.util.ServerInfo",
        ],
        capture_output=True,
        text=True,
    ).stdout
    m = re.search(r"Server number:\s*(\S+)", out)
    return m.group(1) if m else ""


class TomcatEcho(EchoServer):
    """Tomcat 10 from ``/usr/share/tomcat10`` with a base of its own; ``connector`` adds
    attributes to the HTTP connector (``encodedSolidusHandling="decode"``, ``allowBackslash``…)."""

    name = "tomcat"
    ready = re.compile(r"Server startup in")

    def __init__(self, **connector: str) -> None:
        super().__init__()
        self.connector = connector

    def command(self) -> tuple[Sequence[str], dict[str, str] | None]:
        if not (TOMCAT_HOME / "lib" / "catalina.jar").exists():
            raise RuntimeError(TOMCAT_MISSING)
        base = self.tmp
        for d in ("conf", "logs", "temp", "work"):
            (base / d).mkdir()
        attributes = " ".join(f'{k}="{v}"' for k, v in self.connector.items())
        (base / "conf" / "server.xml").write_text(
            _TOMCAT_SERVER_XML.format(port=self.port, attributes=attributes)
        )
        for name in ("web.xml", "catalina.properties"):
            src = Path("/etc/tomcat10") / name
            if src.exists():
                shutil.copy(src, base / "conf" / name)
        _webapp(base, TOMCAT_HOME / "lib" / "servlet-api.jar", jakarta=True)
        bin_ = TOMCAT_HOME / "bin"
        argv = [
            "java",
            "-Xshare:auto",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            f"{bin_ / 'bootstrap.jar'}:{bin_ / 'tomcat-juli.jar'}",
            f"-Dcatalina.home={TOMCAT_HOME}",
            f"-Dcatalina.base={base}",
            f"-Djava.io.tmpdir={base / 'temp'}",
            "org.apache.catalina.startup.Bootstrap",
            "start",
        ]
        return argv, None


def jetty_version() -> str:
    jars = list((JETTY_HOME / "lib").glob("jetty-server-*.jar"))
    return jars[0].stem.removeprefix("jetty-server-") if jars else ""


class JettyEcho(EchoServer):
    """Jetty 9 from ``/usr/share/jetty9`` (its start.jar and modules, the package's
    ``etc/jetty-http.xml``) with a base of its own; ``properties`` are start properties
    (``jetty.http.compliance=RFC7230``…)."""

    name = "jetty"
    ready = re.compile(r"Started @|Started Server@")

    def __init__(self, **properties: str) -> None:
        super().__init__()
        self.properties = properties

    def command(self) -> tuple[Sequence[str], dict[str, str] | None]:
        if not (JETTY_HOME / "start.jar").exists():
            raise RuntimeError(JETTY_MISSING)
        base = self.tmp
        (base / "start.ini").write_text("--module=deploy,http\n")
        api = next((JETTY_HOME / "lib").glob("servlet-api-*.jar"))
        _webapp(base, api, jakarta=False)
        props = {"jetty.http.host": "127.0.0.1", "jetty.http.port": str(self.port)}
        props.update(self.properties)
        argv = [
            "java",
            "-XX:TieredStopAtLevel=1",
            f"-Djava.io.tmpdir={base}",
            "-jar",
            str(JETTY_HOME / "start.jar"),
            f"jetty.home={JETTY_HOME}",
            f"jetty.base={base}",
        ] + [f"{k}={v}" for k, v in props.items()]
        return argv, dict(os.environ)
