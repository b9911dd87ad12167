//! Every URL's HTTP/1 request, serialised once before the run
//! ([`Requests`]): the hot loop writes prepared bytes with one `write`
//! (the parts joined in the OS thread's send buffer) or, for a request
//! larger than that buffer, one `writev`, and allocates nothing, whatever
//! the method, headers or body.

use crate::plan::{ClientPlan, UrlTable};
use crate::request::RequestSpec;

/// Index of a request variant in [`Requests`]' tails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Variant {
    /// HTTP/1.1, connection kept.
    Http11 = 0,
    /// HTTP/1.1 with `Connection: close`.
    Http11Close = 1,
    /// HTTP/1.0 with `Connection: keep-alive`.
    Http10KeepAlive = 2,
    /// HTTP/1.0, server closes.
    Http10 = 3,
}

/// Every URL's request, serialised once, in four parts written with one
/// `writev`: the method and a space, the path (from the URL table's
/// arena), one of four tails per kind of URL (origin and request kind:
/// version, `Host`, headers, `Connection`, the body's framing header, the
/// blank line), and the body. Sharing the tails per kind keeps a workload
/// of a million URLs (the c't 1,000,000-page set) at the size of its paths
/// instead of four whole requests per URL, and nothing here is per URL.
#[derive(Debug)]
pub(crate) struct Requests {
    /// Per (origin, request kind): tails for HTTP/1.1, 1.1 close, 1.0
    /// keep-alive, 1.0.
    tails: Vec<[Box<[u8]>; 4]>,
    /// Per URL kind (`UrlTable::kind`): index of its tails.
    tail: Vec<u32>,
    /// Per request kind (0: plain GET, k: `ClientPlan::requests[k − 1]`):
    /// the method and a space, and the framed body.
    methods: Vec<Box<[u8]>>,
    bodies: Vec<Box<[u8]>>,
    /// Per request kind: the body waits for `100 Continue`.
    continues: Vec<bool>,
}

/// A request's parts: method, path, tail, body.
pub(crate) type Parts<'a> = [&'a [u8]; 4];

impl Requests {
    pub(crate) fn build(plan: &ClientPlan) -> Requests {
        let plain = RequestSpec::default();
        let spec = |k: u32| if k == 0 { &plain } else { &plan.requests[k as usize - 1] };
        let tail = |authority: &str, r: &RequestSpec, version: &str, connection: Option<&str>| -> Box<[u8]> {
            r.http1_tail(&plan.headers, authority, version, connection)
                .into_bytes()
                .into_boxed_slice()
        };
        let urls = &plan.urls;
        let mut keys: Vec<(&str, u32)> = Vec::new();
        let mut tails = Vec::new();
        let index = (0..urls.kinds())
            .map(|k| {
                let (origin, request) = urls.kind_parts(k);
                let key = (urls.origins()[origin as usize].authority.as_str(), request);
                let idx = match keys.iter().position(|x| *x == key) {
                    Some(i) => i,
                    None => {
                        keys.push(key);
                        let (a, r) = (key.0, spec(key.1));
                        tails.push([
                            tail(a, r, "1.1", None),
                            tail(a, r, "1.1", Some("close")),
                            tail(a, r, "1.0", Some("keep-alive")),
                            tail(a, r, "1.0", None),
                        ]);
                        keys.len() - 1
                    }
                };
                idx as u32
            })
            .collect();
        let kinds = (0..=plan.requests.len() as u32).map(spec);
        Requests {
            tails,
            tail: index,
            methods: kinds
                .clone()
                .map(|r| format!("{} ", r.method).into_bytes().into_boxed_slice())
                .collect(),
            bodies: kinds.clone().map(|r| r.framed_body().into_boxed_slice()).collect(),
            continues: kinds.map(RequestSpec::expects_continue).collect(),
        }
    }

    /// The request's four parts: method, path, tail, body.
    #[inline]
    pub(crate) fn parts<'a>(&'a self, urls: &'a UrlTable, url: usize, v: Variant) -> Parts<'a> {
        let kind = urls.kind(url);
        let k = urls.kind_parts(kind).1 as usize;
        [
            &self.methods[k],
            urls.path(url),
            &self.tails[self.tail[kind] as usize][v as usize],
            &self.bodies[k],
        ]
    }

    /// Whether URL `url`'s body waits for the server's `100 Continue`.
    #[inline]
    pub(crate) fn expects_continue(&self, urls: &UrlTable, url: usize) -> bool {
        self.continues[urls.kind_parts(urls.kind(url)).1 as usize]
    }
}

/// Total length of request parts.
#[inline]
pub(crate) fn parts_len(parts: &Parts<'_>) -> usize {
    parts.iter().map(|p| p.len()).sum()
}

/// Length of the request's head (all but the body).
#[inline]
pub(crate) fn head_len(parts: &Parts<'_>) -> usize {
    parts[0].len() + parts[1].len() + parts[2].len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{ClassPlan, Target, UrlPlan};

    fn plan(url: &str, requests: Vec<RequestSpec>) -> ClientPlan {
        let t = Target::parse(url).unwrap();
        let urls: Vec<UrlPlan> = (0..=requests.len() as u32)
            .map(|k| UrlPlan {
                request: k,
                ..UrlPlan::get(t.clone())
            })
            .collect();
        let mut p = ClientPlan::new(urls, vec![ClassPlan { name: "all".into() }]);
        p.requests = requests;
        p
    }

    #[test]
    fn serialises_variants() {
        let mut p = plan("http://127.0.0.1:81/x", vec![]);
        p.headers.push(("X-A".into(), "b".into()));
        let r = Requests::build(&p);
        let get = |v| String::from_utf8(r.parts(&p.urls, 0, v).concat()).unwrap();
        let ua = concat!("User-Agent: benchlab/", env!("CARGO_PKG_VERSION"));
        assert_eq!(
            get(Variant::Http11),
            format!("GET /x HTTP/1.1\r\nHost: 127.0.0.1:81\r\n{ua}\r\nX-A: b\r\n\r\n")
        );
        assert!(get(Variant::Http11Close).ends_with("Connection: close\r\n\r\n"));
        assert!(get(Variant::Http10KeepAlive).ends_with("Connection: keep-alive\r\n\r\n"));
        assert!(get(Variant::Http10).starts_with("GET /x HTTP/1.0\r\n"));
    }

    #[test]
    fn methods_headers_and_bodies_are_framed_exactly() {
        let post = RequestSpec {
            method: "POST".into(),
            headers: vec![
                ("Content-Type".into(), "application/json".into()),
                ("X-A".into(), "own".into()),
            ],
            body: Some(b"{\"a\":1}".to_vec()),
            chunked: false,
        };
        let chunked = RequestSpec {
            method: "PUT".into(),
            body: Some(b"hello".to_vec()),
            chunked: true,
            ..RequestSpec::default()
        };
        let empty_post = RequestSpec {
            method: "POST".into(),
            ..RequestSpec::default()
        };
        let delete = RequestSpec {
            method: "DELETE".into(),
            ..RequestSpec::default()
        };
        let mut p = plan("http://localhost:81/x", vec![post, chunked, empty_post, delete]);
        p.headers.push(("X-A".into(), "client".into()));
        let r = Requests::build(&p);
        let text = |k: usize| String::from_utf8(r.parts(&p.urls, k, Variant::Http11).concat()).unwrap();
        let ua = concat!("User-Agent: benchlab/", env!("CARGO_PKG_VERSION"));
        assert_eq!(
            text(1),
            format!(
                "POST /x HTTP/1.1\r\nHost: localhost:81\r\n{ua}\r\nContent-Type: application/json\r\nX-A: own\r\nContent-Length: 7\r\n\r\n{{\"a\":1}}"
            )
        );
        assert_eq!(
            text(2),
            format!(
                "PUT /x HTTP/1.1\r\nHost: localhost:81\r\n{ua}\r\nX-A: client\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
            )
        );
        assert!(text(3).starts_with("POST /x HTTP/1.1\r\n") && text(3).ends_with("Content-Length: 0\r\n\r\n"));
        assert!(text(4).starts_with("DELETE /x ") && !text(4).contains("Content-Length"));
        let parts = r.parts(&p.urls, 1, Variant::Http11);
        assert_eq!(parts_len(&parts) - head_len(&parts), 7);
    }
}
