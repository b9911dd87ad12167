//! Local servers for the engine's allocation tests: keep-alive, a thread
//! per connection, one fixed response to every request, plain or TLS
//! (rustls, a self-signed certificate). `on_thread` runs first on each
//! server thread, so a counting allocator can leave the server's own
//! allocations out.

use std::borrow::Cow;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;

/// The one response: 100 bytes of body.
pub const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n\
    xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";

/// Answers every request on `s` with [`RESPONSE`] until the client closes.
pub fn serve(s: impl Read + Write) {
    serve_with(s, |_| (Cow::Borrowed(RESPONSE), true));
}

/// Answers each request on `s` (a head up to its blank line; bodies are
/// not read) with the response `answer` gives for its head (lent bytes
/// cost no allocation), and closes the connection after it when `answer`
/// says not to keep it. Ends when the client closes.
pub fn serve_with(mut s: impl Read + Write, mut answer: impl FnMut(&str) -> (Cow<'static, [u8]>, bool)) {
    // Room for the no-allocation test's request larger than the client's
    // send buffer (its `writev` path).
    let mut buf = [0u8; 16384];
    let mut have = 0;
    loop {
        match s.read(&mut buf[have..]) {
            Ok(0) | Err(_) => return,
            Ok(n) => have += n,
        }
        while let Some(end) = buf[..have].windows(4).position(|w| w == b"\r\n\r\n") {
            let head = std::str::from_utf8(&buf[..end]).unwrap_or_default();
            let (response, keep) = answer(head);
            if s.write_all(&response).and_then(|()| s.flush()).is_err() || !keep {
                return;
            }
            buf.copy_within(end + 4..have, 0);
            have -= end + 4;
        }
    }
}

/// Starts a server on 127.0.0.1 and returns its port.
pub fn server(tls: bool, on_thread: fn()) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    let config = tls.then(|| {
        let key = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("certificate");
        let der = rustls::pki_types::PrivateKeyDer::try_from(key.signing_key.serialize_der()).expect("key");
        let cfg = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(vec![key.cert.der().clone()], der)
            .expect("server config");
        Arc::new(cfg)
    });
    std::thread::spawn(move || {
        on_thread();
        for s in l.incoming() {
            let Ok(s) = s else { continue };
            let config = config.clone();
            std::thread::Builder::new()
                .stack_size(128 * 1024)
                .spawn(move || {
                    on_thread();
                    match config {
                        None => serve(s),
                        Some(cfg) => {
                            let Ok(conn) = rustls::ServerConnection::new(cfg) else {
                                return;
                            };
                            serve(rustls::StreamOwned::new(conn, s));
                        }
                    }
                })
                .expect("server thread");
        }
    });
    port
}
