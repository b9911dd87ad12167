//! Java servlet containers as lab servers, standing alone: each one's own
//! HTTP connector on the lab's loopback port serves the file set at `/`
//! (its DefaultServlet) and the SPICE web application at `/spice`:
//! `/spice/servlet/*` the servlet, `/spice/jsp/*` the JSP page
//! (docs/spice.md). `tomcat` is Apache Tomcat 10 (jakarta.servlet), `jetty`
//! Eclipse Jetty 9 (javax.servlet: the same sources with the old package
//! name, and web.xml in the Java EE namespace).
//!
//! Each runs unprivileged from a base dir in the run dir (never the system
//! service): `run/tomcat/` (CATALINA_BASE: the distribution's web.xml,
//! catalina.properties and logging.properties copied, work, temp, logs) or
//! `run/jetty/` (JETTY_BASE: start.ini, webapps/ with `root.xml` for the
//! file set), and the web application, whose servlet `lab up` compiles with
//! javac from the sources compiled into benchlab. The JSP page is compiled
//! by the container's JSP engine (Apache Jasper in both) at its first
//! request; Tomcat's needs Eclipse's Java compiler (Debian's
//! libeclipse-jdt-core-java, linked into the base's lib).

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

/// Debian's Jetty 9 (package jetty9).
const JETTY_HOME: &str = "/usr/share/jetty9";

/// Debian's Tomcat 10 (package tomcat10).
const TOMCAT_HOME: &str = "/usr/share/tomcat10";
const TOMCAT_CONF: &str = "/etc/tomcat10";
/// Eclipse's compiler, for Jasper (package libeclipse-jdt-core-java).
const JDT_JAR: &str = "/usr/share/java/eclipse-jdt-core.jar";

/// Tomcat's default request threads, for `workers = 0`.
const TOMCAT_DEFAULT_THREADS: u32 = 200;
/// Jetty's, likewise.
const JETTY_DEFAULT_THREADS: u32 = 200;

fn missing(what: &str, package: &str) -> Error {
    Error::Missing {
        program: what.to_owned(),
        package: package.to_owned(),
    }
}

/// What starts the container (Tomcat's catalina.sh, Jetty's start.jar),
/// after checking what the SPICE application needs.
pub fn launcher(kind: ServerKind) -> Result<PathBuf, Error> {
    require("java", "default-jdk-headless")?;
    require("javac", "default-jdk-headless")?;
    if kind == ServerKind::Jetty {
        let jar = Path::new(JETTY_HOME).join("start.jar");
        if !jar.is_file() {
            return Err(missing(&format!("Jetty 9 ({})", jar.display()), "jetty9"));
        }
        return Ok(jar);
    }
    let script = Path::new(TOMCAT_HOME).join("bin/catalina.sh");
    if !script.is_file() {
        return Err(missing(&format!("Tomcat 10 ({})", script.display()), "tomcat10"));
    }
    if !Path::new(JDT_JAR).is_file() {
        return Err(missing(
            &format!("Eclipse's Java compiler for JSP pages ({JDT_JAR})"),
            "libeclipse-jdt-core-java",
        ));
    }
    Ok(script)
}

/// The container's base dir inside the run dir.
pub fn base(p: &Paths, kind: ServerKind) -> PathBuf {
    p.run.join(if kind == ServerKind::Jetty { "jetty" } else { "tomcat" })
}

/// The container's configuration, relative to the run dir, and its text.
pub fn config(kind: ServerKind, p: &Paths, port: u16, prof: &Profile) -> (&'static str, String) {
    if kind == ServerKind::Jetty {
        ("jetty/start.ini", start_ini(port, prof))
    } else {
        ("server.xml", server_xml(p, port, prof))
    }
}

/// Javax (Jetty 9) for jakarta (Tomcat 10): the servlet API's old names.
fn javax(text: &str) -> String {
    text.replace("jakarta.servlet", "javax.servlet").replace(
        "xmlns=\"https://jakarta.ee/xml/ns/jakartaee\" version=\"5.0\"",
        "xmlns=\"http://xmlns.jcp.org/xml/ns/javaee\" version=\"3.1\"",
    )
}

/// Makes the container's base dir with the SPICE web application (the
/// servlet compiled by javac) and returns the command that runs the
/// container in the foreground with the configuration `conf`.
pub fn prepare(kind: ServerKind, p: &Paths, launcher: &Path, conf: &Path) -> Result<Command, Error> {
    let jetty = kind == ServerKind::Jetty;
    let base = base(p, kind);
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
    let adapt = |t: &str| if jetty { javax(t) } else { t.to_owned() };
    if jetty {
        // The file set as a web application of its own at `/`.
        let root = format!(
            "<?xml version=\"1.0\"?>\n<!DOCTYPE Configure PUBLIC \"-//Jetty//Configure//EN\" \
             \"http://www.eclipse.org/jetty/configure_9_3.dtd\">\n\
             <Configure class=\"org.eclipse.jetty.webapp.WebAppContext\">\n  \
             <Set name=\"contextPath\">/</Set>\n  <Set name=\"war\">{}</Set>\n</Configure>\n",
            p.root.display()
        );
        fs::write(base.join("webapps/root.xml"), root).map_err(io("write root.xml"))?;
    } else {
        for name in ["web.xml", "catalina.properties", "logging.properties"] {
            let from = Path::new(TOMCAT_CONF).join(name);
            fs::copy(&from, base.join("conf").join(name))
                .map_err(io(format!("copy {} (Debian's tomcat10 installs it)", from.display())))?;
        }
        // A second try on a fresh port finds the link of the first.
        let link = base.join("lib/eclipse-jdt-core.jar");
        let _ = fs::remove_file(&link);
        std::os::unix::fs::symlink(JDT_JAR, &link).map_err(io("link the JSP compiler into CATALINA_BASE/lib"))?;
    }
    for (name, text) in [("Spice.java", SPICE_JAVA), ("SpiceServlet.java", SERVLET_JAVA)] {
        fs::write(src.join(name), adapt(text)).map_err(io(format!("write {name}")))?;
    }
    fs::write(app.join("WEB-INF/web.xml"), adapt(WEB_XML)).map_err(io("write web.xml"))?;
    fs::write(app.join("spice.jsp"), SPICE_JSP).map_err(io("write spice.jsp"))?;
    let api = if jetty {
        Path::new(JETTY_HOME).join("lib/servlet-api-3.1.jar")
    } else {
        Path::new(TOMCAT_HOME).join("lib/servlet-api.jar")
    };
    let javac = require("javac", "default-jdk-headless")?;
    let res = Command::new(javac)
        .arg("-nowarn")
        .arg("-cp")
        .arg(api)
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
    // inherits: set on the command, with the container's own variables.
    let mut cmd = Command::new("env");
    cmd.arg(format!("SPICE_ROOT={}", p.root.display()))
        .arg(format!("SPICE_SESSION_LOG={}", p.session_log.display()));
    if jetty {
        // start.jar runs Jetty in this JVM; its temp files (the JSP
        // engine's work dirs) stay in the base.
        cmd.arg(require("java", "default-jdk-headless")?)
            .arg(format!("-Djava.io.tmpdir={}", base.join("temp").display()))
            .arg("-jar")
            .arg(launcher)
            .arg(format!("jetty.home={JETTY_HOME}"))
            .arg(format!("jetty.base={}", base.display()));
    } else {
        cmd.arg(format!("CATALINA_HOME={TOMCAT_HOME}"))
            .arg(format!("CATALINA_BASE={}", base.display()))
            .arg(launcher)
            .arg("run")
            .arg("-config")
            .arg(conf);
    }
    Ok(cmd)
}

/// Jetty's start.ini from the profile: the HTTP connector on
/// 127.0.0.1:port, deploying webapps/ (the file set's root.xml, the SPICE
/// application) once at start, JSP.
fn start_ini(port: u16, prof: &Profile) -> String {
    let threads = match prof.workers {
        Some(0) | None => JETTY_DEFAULT_THREADS,
        Some(n) => n,
    };
    format!(
        "# Generated by benchlab lab up jetty.\n--module=deploy,http,jsp\njetty.http.host=127.0.0.1\n\
         jetty.http.port={port}\njetty.http.idleTimeout={idle_ms}\njetty.http.acceptQueueSize={backlog}\n\
         jetty.threadPool.maxThreads={threads}\njetty.deploy.scanInterval=0\n",
        idle_ms = u64::from(prof.keepalive_timeout_s.unwrap_or(75)) * 1000,
        backlog = prof.backlog.unwrap_or(511),
    )
}

/// Tomcat's server.xml from the profile: the connector on 127.0.0.1:port,
/// the file set at `/`, the SPICE application at `/spice`.
fn server_xml(p: &Paths, port: u16, prof: &Profile) -> String {
    let base = base(p, ServerKind::Tomcat);
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

/// `catalina.sh version` or `start.jar --version`, for the disclosure.
pub fn version(kind: ServerKind, launcher: &Path) -> String {
    let out = if kind == ServerKind::Jetty {
        Command::new("java")
            .arg("-jar")
            .arg(launcher)
            .arg(format!("jetty.home={JETTY_HOME}"))
            .arg("--version")
            .output()
    } else {
        Command::new(launcher)
            .arg("version")
            .env("CATALINA_HOME", TOMCAT_HOME)
            .output()
    };
    out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// The container a `--container NAME` names.
pub fn parse(name: &str) -> Result<ServerKind, Error> {
    ServerKind::CONTAINERS
        .iter()
        .copied()
        .find(|k| k.name() == name)
        .ok_or_else(|| {
            Error::Usage(format!(
                "--container {name:?}: expected tomcat or jetty (the servlet containers the lab runs)"
            ))
        })
}

/// The SPICE application's web.xml (the servlet and JSP mappings).
pub fn web_xml() -> &'static str {
    WEB_XML
}

/// `lab up SERVER --container NAME`: only nginx and Apache proxy to a
/// container (seed 001's deployments), Tomcat or Jetty.
pub fn check_proxy(kind: ServerKind, container: &str) -> Result<(), Error> {
    parse(container)?;
    if !matches!(
        kind,
        ServerKind::Nginx | ServerKind::ApacheEvent | ServerKind::ApachePrefork
    ) {
        return Err(Error::Usage(format!(
            "--container: {} does not proxy to a servlet container in the lab (nginx, apache-event and \
             apache-prefork do; `lab up tomcat` or `lab up jetty` runs one standing alone)",
            kind.name()
        )));
    }
    Ok(())
}

/// nginx: proxy_pass of the container's SPIs (inside `server`), when one runs.
pub fn nginx(p: &Paths) -> String {
    let Some((_, port)) = p.container_port else {
        return String::new();
    };
    let mut s = String::from("        # The servlet container behind the proxy.\n");
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
    let Some((_, port)) = p.container_port else {
        return String::new();
    };
    let mut s = String::from("\n# The servlet container behind the proxy.\n");
    for spi in SPIS {
        s.push_str(&format!(
            "ProxyPass \"/spice/{spi}/\" \"http://127.0.0.1:{port}/spice/{spi}/\"\n"
        ));
    }
    s
}
