//! Java servlet containers as lab servers: `tomcat` is Apache Tomcat 10
//! (jakarta.servlet) standing alone, its own HTTP connector on the lab's
//! loopback port serving the file set at `/` (its DefaultServlet) and the
//! SPICE web application at `/spice`: `/spice/servlet/*` the servlet,
//! `/spice/jsp/*` the JSP page (docs/spice.md).
//!
//! Tomcat runs unprivileged from a CATALINA_BASE in the run dir (never the
//! system service): `run/tomcat/` holds its conf (the distribution's web.xml
//! and catalina.properties, read-only copies), work, temp and logs dirs,
//! and the web application, whose servlet `lab up` compiles with javac
//! from the sources compiled into benchlab. The JSP page is compiled by
//! Tomcat's JSP engine (Jasper) at its first request, with Eclipse's Java
//! compiler (Debian's libeclipse-jdt-core-java, linked into the base's lib).

use crate::profile::Profile;
use crate::{chmod, io, require, Error, Paths, ServerKind};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The SPIs a container runs.
pub const SPIS: &[&str] = &["servlet", "jsp"];

const SPICE_JAVA: &str = include_str!("../../../spice/servlet/spice/Spice.java");
const SERVLET_JAVA: &str = include_str!("../../../spice/servlet/spice/SpiceServlet.java");
const WEB_XML: &str = include_str!("../../../spice/servlet/WEB-INF/web.xml");
const SPICE_JSP: &str = include_str!("../../../spice/servlet/spice.jsp");

/// Debian's Tomcat 10 (package tomcat10).
const TOMCAT_HOME: &str = "/usr/share/tomcat10";
const TOMCAT_CONF: &str = "/etc/tomcat10";
/// Eclipse's compiler, for Jasper (package libeclipse-jdt-core-java).
const JDT_JAR: &str = "/usr/share/java/eclipse-jdt-core.jar";

/// Tomcat's default request threads, for `workers = 0`.
const TOMCAT_DEFAULT_THREADS: u32 = 200;

fn missing(what: &str, package: &str) -> Error {
    Error::Missing {
        program: what.to_owned(),
        package: package.to_owned(),
    }
}

/// Tomcat's start script, after checking what the SPICE application needs.
pub fn catalina() -> Result<PathBuf, Error> {
    let script = Path::new(TOMCAT_HOME).join("bin/catalina.sh");
    if !script.is_file() {
        return Err(missing(&format!("Tomcat 10 ({})", script.display()), "tomcat10"));
    }
    require("java", "default-jdk-headless")?;
    require("javac", "default-jdk-headless")?;
    if !Path::new(JDT_JAR).is_file() {
        return Err(missing(
            &format!("Eclipse's Java compiler for JSP pages ({JDT_JAR})"),
            "libeclipse-jdt-core-java",
        ));
    }
    Ok(script)
}

/// CATALINA_BASE inside the run dir.
pub fn base(p: &Paths) -> PathBuf {
    p.run.join("tomcat")
}

/// Makes CATALINA_BASE with the SPICE web application (the servlet compiled
/// by javac) and returns the command that runs Tomcat in the foreground
/// with the configuration `server_xml`.
pub fn prepare(p: &Paths, catalina: &Path, server_xml: &Path) -> Result<Command, Error> {
    let base = base(p);
    let app = base.join("webapps/spice");
    let classes = app.join("WEB-INF/classes");
    let src = p.state.join("src/servlet/spice");
    for d in [
        base.join("conf"),
        base.join("lib"),
        base.join("logs"),
        base.join("temp"),
        base.join("work"),
        classes.clone(),
        src.clone(),
    ] {
        fs::create_dir_all(&d).map_err(io(format!("create {}", d.display())))?;
    }
    for name in ["web.xml", "catalina.properties", "logging.properties"] {
        let from = Path::new(TOMCAT_CONF).join(name);
        fs::copy(&from, base.join("conf").join(name))
            .map_err(io(format!("copy {} (Debian's tomcat10 installs it)", from.display())))?;
    }
    std::os::unix::fs::symlink(JDT_JAR, base.join("lib/eclipse-jdt-core.jar"))
        .map_err(io("link the JSP compiler into CATALINA_BASE/lib"))?;
    for (name, text) in [("Spice.java", SPICE_JAVA), ("SpiceServlet.java", SERVLET_JAVA)] {
        fs::write(src.join(name), text).map_err(io(format!("write {name}")))?;
    }
    fs::write(app.join("WEB-INF/web.xml"), WEB_XML).map_err(io("write web.xml"))?;
    fs::write(app.join("spice.jsp"), SPICE_JSP).map_err(io("write spice.jsp"))?;
    let javac = require("javac", "default-jdk-headless")?;
    let res = Command::new(javac)
        .arg("-nowarn")
        .arg("-cp")
        .arg(Path::new(TOMCAT_HOME).join("lib/servlet-api.jar"))
        .arg("-d")
        .arg(&classes)
        .arg(src.join("Spice.java"))
        .arg(src.join("SpiceServlet.java"))
        .output()
        .map_err(io("run javac"))?;
    if !res.status.success() {
        return Err(Error::Start(format!(
            "compiling the SPICE servlet failed ({}):\n{}",
            res.status,
            String::from_utf8_lossy(&res.stderr)
        )));
    }
    chmod(&base, 0o755)?;
    // The lab's spawn clears SPICE_ROOT and SPICE_SESSION_LOG from what it
    // inherits: set on the command, with Tomcat's own two variables.
    let mut cmd = Command::new("env");
    cmd.arg(format!("SPICE_ROOT={}", p.root.display()))
        .arg(format!("SPICE_SESSION_LOG={}", p.session_log.display()))
        .arg(format!("CATALINA_HOME={TOMCAT_HOME}"))
        .arg(format!("CATALINA_BASE={}", base.display()))
        .arg(catalina)
        .arg("run")
        .arg("-config")
        .arg(server_xml);
    Ok(cmd)
}

/// Tomcat's server.xml from the profile: the connector on 127.0.0.1:port,
/// the file set at `/`, the SPICE application at `/spice`.
pub fn server_xml(p: &Paths, port: u16, prof: &Profile) -> String {
    let base = base(p);
    let threads = match prof.workers {
        Some(0) | None => TOMCAT_DEFAULT_THREADS,
        Some(n) => n,
    };
    let keepalive_requests = if prof.keepalive == Some(false) {
        1
    } else {
        prof.keepalive_requests.unwrap_or(100_000)
    };
    let access = if prof.access_log == Some(true) {
        format!(
            "        <Valve className=\"org.apache.catalina.valves.AccessLogValve\" directory=\"{}\" prefix=\"access\" suffix=\".log\" rotatable=\"false\" pattern=\"common\"/>\n",
            p.run.display()
        )
    } else {
        String::new()
    };
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by benchlab lab up tomcat. No shutdown port: lab down stops
     the process group. -->
<Server port="-1" shutdown="SHUTDOWN">
  <Service name="Catalina">
    <Connector address="127.0.0.1" port="{port}" protocol="HTTP/1.1"
               maxThreads="{threads}" acceptCount="{backlog}"
               keepAliveTimeout="{keepalive_ms}" maxKeepAliveRequests="{keepalive_requests}"
               useSendfile="{sendfile}" maxConnections="4096"/>
    <Engine name="Catalina" defaultHost="localhost">
      <Host name="localhost" appBase="{base}/webapps" autoDeploy="false" deployOnStartup="false" unpackWARs="false">
{access}        <Context path="" docBase="{root}"/>
        <Context path="/spice" docBase="{base}/webapps/spice"/>
      </Host>
    </Engine>
  </Service>
</Server>
"#,
        backlog = prof.backlog.unwrap_or(511),
        keepalive_ms = u64::from(prof.keepalive_timeout_s.unwrap_or(75)) * 1000,
        sendfile = prof.sendfile != Some(false),
        base = base.display(),
        root = p.root.display(),
    )
}

/// `catalina.sh version`, for the disclosure.
pub fn version(catalina: &Path) -> String {
    Command::new(catalina)
        .arg("version")
        .env("CATALINA_HOME", TOMCAT_HOME)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// The SPICE application's web.xml (the servlet and JSP mappings).
pub fn web_xml() -> &'static str {
    WEB_XML
}

/// `lab up SERVER --container NAME`: only nginx and Apache proxy to a
/// container (seed 001's deployments), and Tomcat is the container.
pub fn check_proxy(kind: ServerKind, container: &str) -> Result<(), Error> {
    if container != "tomcat" {
        return Err(Error::Usage(format!(
            "--container {container:?}: expected tomcat (the servlet container the lab runs)"
        )));
    }
    if !matches!(
        kind,
        ServerKind::Nginx | ServerKind::ApacheEvent | ServerKind::ApachePrefork
    ) {
        return Err(Error::Usage(format!(
            "--container: {} does not proxy to a servlet container in the lab (nginx, apache-event and \
             apache-prefork do; `lab up tomcat` runs Tomcat standing alone)",
            kind.name()
        )));
    }
    Ok(())
}

/// nginx: proxy_pass of the container's SPIs (inside `server`), when one runs.
pub fn nginx(p: &Paths) -> String {
    let Some(port) = p.container_port else {
        return String::new();
    };
    let mut s = String::from("        # The servlet container (Tomcat) behind the proxy.\n");
    for spi in SPIS {
        s.push_str(&format!(
            "        location /spice/{spi}/ {{\n            proxy_pass http://127.0.0.1:{port};\n            \
             proxy_http_version 1.1;\n            proxy_set_header Host $host;\n        }}\n"
        ));
    }
    s
}

/// Apache: mod_proxy_http to the container, when one runs.
pub fn apache(p: &Paths) -> String {
    let Some(port) = p.container_port else {
        return String::new();
    };
    let mut s = String::from("\n# The servlet container (Tomcat) behind the proxy.\n");
    for spi in SPIS {
        s.push_str(&format!(
            "ProxyPass \"/spice/{spi}/\" \"http://127.0.0.1:{port}/spice/{spi}/\"\n"
        ));
    }
    s
}
