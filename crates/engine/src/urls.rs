//! A mix's URLs in the form the event loops run: [`UrlTable`].
//!
//! A workload may hold millions of URLs (the c't 1,000,000-file set, a
//! CDN log), and every client of a mix shares one table, so a URL costs
//! what it must and no more (issue 27: ≤ 64 bytes a URL): its path bytes
//! in one arena, a `u32` end offset, its pick (an alias table of `f32` and
//! `u32`, nothing when all weights are equal), its expected size and
//! checksum only where some URL has one, and the index of its *kind* —
//! origin, class, request and expected status, interned, so a host or a
//! request head is held once, not per URL — only where there are several.
//! Nothing is allocated per URL; the hot loop reads a URL's path bytes
//! from the arena and writes them beside the kind's prepared head.
//!
//! The list itself, unresolved, is a [`UrlData`]: what the controller's
//! `UrlList` holds and sends its agents (the arena as one string, the
//! columns as arrays), built a URL at a time by a [`UrlTableBuilder`]. A
//! [`UrlTable`] is a `UrlData`, shared, with its origins resolved where
//! the load leaves from.

use crate::plan::{parse_url, resolve, Expect, PlanError, Scheme, Target, UrlPlan};
use crate::rng::SplitMix64;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

/// Where a URL's requests go, resolved once per origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub scheme: Scheme,
    /// Host name for TLS SNI and certificate checks.
    pub host: String,
    /// `Host` header value (host, plus `:port` when not the default).
    pub authority: String,
    pub addr: SocketAddr,
    /// The URL text before the path, as written (`http://host:8080`): a
    /// URL's text is this and its path.
    pub prefix: String,
}

impl Origin {
    /// The origin of `prefix` (`http://host:8080`), parsed and resolved.
    fn resolve(prefix: &str) -> Result<Origin, PlanError> {
        let (scheme, host, port, authority, _) = parse_url(prefix)?;
        Ok(Origin {
            scheme,
            addr: resolve(&host, port)?,
            host,
            authority,
            prefix: prefix.to_string(),
        })
    }
}

/// What URLs share besides their path: interned, so a URL holds an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Kind {
    /// Index into the origins (`UrlData::prefixes`).
    origin: u32,
    class: u32,
    request: u32,
    expect_status: u16,
    /// 0: status only, 1: size, 2: size and checksum.
    expect: u8,
}

/// How a URL is drawn.
#[derive(Debug, Clone, PartialEq)]
enum Pick {
    /// All weights equal (or one URL): a uniform draw.
    Uniform,
    /// Walker's alias method (Vose's construction): URL i is drawn when
    /// the draw lands in slot i below `prob[i]`, else `alias[i]` is.
    Alias { prob: Box<[f32]>, alias: Box<[u32]> },
}

/// A URL list, compact and unresolved: what a controller sends its agents
/// (serialised as the arena and its columns, not a list of strings) and
/// what every [`UrlTable`] of a process shares.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "Wire")]
pub struct UrlData {
    /// Each origin's text as written (`http://host:8080`), once.
    prefixes: Vec<String>,
    kinds: Vec<Kind>,
    /// Per URL: its kind; empty when every URL is of kind 0.
    kind_of: Box<[u32]>,
    /// Every path, each followed by `\n` (a URL has no line break), so the
    /// arena is also the wire's text.
    paths: String,
    /// Per URL: where its path ends in `paths` (the next one starts a byte
    /// later).
    ends: Box<[u32]>,
    /// Per URL: the expected body size; empty when no URL expects one.
    sizes: Box<[u64]>,
    /// Per URL: the expected XXH3-64; empty when no URL expects one.
    xxh3: Box<[u64]>,
    pick: Pick,
    /// Per class: the sum of its URLs' weights (the share of protocols in
    /// a mixed HTTP/1 and HTTP/2 client).
    class_weights: Vec<f64>,
    /// The sum of the weights as given, so [`UrlData::weights`] reads them
    /// back on their own scale.
    weight_total: f64,
    /// The first URL whose weight was not above 0, in words (refused by
    /// [`crate::ClientPlan::validate`]).
    bad_weight: Option<String>,
}

/// A mix's URLs in the form the event loops run: the shared [`UrlData`]
/// and its origins resolved where the load leaves from. It dereferences to
/// its data.
#[derive(Debug, Clone, PartialEq)]
pub struct UrlTable {
    origins: Vec<Origin>,
    data: Arc<UrlData>,
}

impl std::ops::Deref for UrlTable {
    type Target = UrlData;
    fn deref(&self) -> &UrlData {
        &self.data
    }
}

/// One URL of a [`UrlTable`], read out: cheap to make, nothing allocated.
#[derive(Debug, Clone, Copy)]
pub struct UrlRef<'a> {
    pub target: &'a Origin,
    /// Path and query, as sent on the request line.
    pub path: &'a str,
    /// Index of its origin in [`UrlTable::origins`].
    pub origin: u32,
    pub class: usize,
    pub expect_status: u16,
    pub expect: Expect,
    /// The request sent: 0 a plain GET, k the plan's `requests[k − 1]`.
    pub request: u32,
}

impl UrlRef<'_> {
    /// The URL's text: its origin as written and its path.
    pub fn url(&self) -> String {
        format!("{}{}", self.target.prefix, self.path)
    }

    /// The URL as a [`Target`] of its own (a probe, a preflight).
    pub fn to_target(&self) -> Target {
        Target {
            url: self.url(),
            scheme: self.target.scheme,
            host: self.target.host.clone(),
            authority: self.target.authority.clone(),
            path: self.path.to_string(),
            addr: self.target.addr,
        }
    }
}

impl UrlData {
    /// Number of URLs.
    #[inline]
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Number of kinds (origin, class, request, expected status).
    pub(crate) fn kinds(&self) -> usize {
        self.kinds.len()
    }

    /// Kind `k`'s origin and request.
    #[inline]
    pub(crate) fn kind_parts(&self, k: usize) -> (u32, u32) {
        (self.kinds[k].origin, self.kinds[k].request)
    }

    /// URL `i`'s kind.
    #[inline]
    pub(crate) fn kind(&self, i: usize) -> usize {
        if self.kind_of.is_empty() {
            0
        } else {
            self.kind_of[i] as usize
        }
    }

    /// URL `i`'s path.
    #[inline]
    pub fn path_str(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize + 1 };
        // Ends are found at `\n` bytes (`UrlData::check`), which are
        // character boundaries.
        self.paths.get(start..self.ends[i] as usize).unwrap_or_default()
    }

    /// URL `i`'s path bytes.
    #[inline]
    pub fn path(&self, i: usize) -> &[u8] {
        self.path_str(i).as_bytes()
    }

    /// URL `i`'s class (index into the plan's classes).
    #[inline]
    pub fn class(&self, i: usize) -> usize {
        self.kinds[self.kind(i)].class as usize
    }

    /// URL `i`'s origin's index (into [`UrlTable::origins`]).
    #[inline]
    pub fn origin_index(&self, i: usize) -> usize {
        self.kinds[self.kind(i)].origin as usize
    }

    /// The first URL whose weight was not above 0, in words.
    pub fn bad_weight(&self) -> Option<&str> {
        self.bad_weight.as_deref()
    }

    /// Whether any URL expects a checksum.
    pub fn any_checksum(&self) -> bool {
        !self.xxh3.is_empty()
    }

    /// The sum of class `c`'s URL weights (relative, as given).
    pub fn class_weight(&self, c: usize) -> f64 {
        self.class_weights.get(c).copied().unwrap_or(0.0)
    }

    /// Number of classes the URLs name (the highest index, plus one).
    pub fn classes(&self) -> usize {
        self.class_weights.len()
    }

    /// Every URL's weight as the pick draws it, on the scale given (to
    /// `f32` precision): read back from the alias table, so no weight is
    /// held per URL. For the rare uses outside the hot loop (splitting a
    /// client by protocol).
    pub fn weights(&self) -> Vec<f64> {
        let scale = self.weight_total / self.len().max(1) as f64;
        match &self.pick {
            Pick::Uniform => vec![scale; self.len()],
            Pick::Alias { prob, alias } => {
                let mut w: Vec<f64> = prob.iter().map(|&p| f64::from(p)).collect();
                for (j, &a) in alias.iter().enumerate() {
                    w[a as usize] += 1.0 - f64::from(prob[j]);
                }
                w.iter_mut().for_each(|x| *x *= scale);
                w
            }
        }
    }

    /// The URL a request goes to: one draw of `rng`, none when there is
    /// one URL.
    #[inline]
    pub fn pick(&self, rng: &mut SplitMix64) -> usize {
        let n = self.len();
        if n <= 1 {
            return 0;
        }
        let x = rng.unit() * n as f64;
        let i = (x as usize).min(n - 1);
        match &self.pick {
            Pick::Uniform => i,
            Pick::Alias { prob, alias } => {
                if ((x - i as f64) as f32) < prob[i] {
                    i
                } else {
                    alias[i] as usize
                }
            }
        }
    }
}

impl UrlTable {
    /// `data` with its origins resolved (one name lookup per origin).
    pub fn resolve(data: Arc<UrlData>) -> Result<UrlTable, PlanError> {
        let origins = data
            .prefixes
            .iter()
            .map(|p| Origin::resolve(p))
            .collect::<Result<Vec<_>, PlanError>>()?;
        Ok(UrlTable { origins, data })
    }

    /// The list this table runs (shared, not copied).
    pub fn data(&self) -> &Arc<UrlData> {
        &self.data
    }

    /// The distinct origins, in the order their first URL came.
    pub fn origins(&self) -> &[Origin] {
        &self.origins
    }

    /// URL `i`'s origin.
    #[inline]
    pub fn origin(&self, i: usize) -> &Origin {
        &self.origins[self.origin_index(i)]
    }

    /// URL `i`, read out.
    #[inline]
    pub fn get(&self, i: usize) -> UrlRef<'_> {
        let d = &*self.data;
        let k = d.kinds[d.kind(i)];
        let (_, _, expect) = self.expectation(i);
        UrlRef {
            target: &self.origins[k.origin as usize],
            path: d.path_str(i),
            origin: k.origin,
            class: k.class as usize,
            expect_status: k.expect_status,
            expect,
            request: k.request,
        }
    }

    /// URL `i`'s class, expected status and expected body: all a response
    /// is judged by, without the rest of a [`UrlRef`] (its path, its
    /// origin), which every protocol's completion would build for nothing.
    #[inline]
    pub(crate) fn expectation(&self, i: usize) -> (usize, u16, Expect) {
        let d = &*self.data;
        let k = d.kinds[d.kind(i)];
        let expect = match k.expect {
            0 => Expect::Status,
            1 => Expect::Size(d.sizes[i]),
            _ => Expect::Checksum {
                size: d.sizes[i],
                xxh3: d.xxh3[i],
            },
        };
        (k.class as usize, k.expect_status, expect)
    }

    /// Every URL, in order.
    pub fn iter(&self) -> impl Iterator<Item = UrlRef<'_>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// One URL of each kind (its first): what is checked once for all
    /// URLs of a kind (class, request, origin).
    pub fn kind_examples(&self) -> impl Iterator<Item = UrlRef<'_>> + '_ {
        let d = &*self.data;
        let mut seen = vec![false; d.kinds.len()];
        let firsts: Vec<usize> = if d.kind_of.is_empty() {
            (0..d.len().min(1)).collect()
        } else {
            (0..d.len())
                .filter(|&i| !std::mem::replace(&mut seen[d.kind_of[i] as usize], true))
                .collect()
        };
        firsts.into_iter().map(|i| self.get(i))
    }

    /// The URLs for which `keep(class)` holds, as a table of their own
    /// (a mixed client's HTTP/1 and HTTP/2 halves).
    pub fn filter_classes(&self, keep: impl Fn(usize) -> bool) -> Result<UrlTable, PlanError> {
        let weights = self.weights();
        let mut b = UrlTableBuilder::new();
        for (i, u) in self.iter().enumerate() {
            if keep(u.class) {
                b.push_ref(&u, weights[i])?;
            }
        }
        b.finish()
    }

    /// The URLs as separate plans (tests, small lists).
    pub fn to_plans(&self) -> Vec<UrlPlan> {
        let weights = self.weights();
        self.iter()
            .zip(weights)
            .map(|(u, weight)| UrlPlan {
                target: u.to_target(),
                weight,
                class: u.class,
                expect_status: u.expect_status,
                expect: u.expect,
                request: u.request,
            })
            .collect()
    }
}

impl From<Vec<UrlPlan>> for UrlTable {
    /// A table of resolved URLs. A weight that is not above 0 is kept as
    /// 0 here and refused by [`crate::ClientPlan::validate`].
    fn from(urls: Vec<UrlPlan>) -> UrlTable {
        let mut b = UrlTableBuilder::new();
        for u in &urls {
            b.push_plan(u);
        }
        // Every origin came resolved: nothing is looked up, nothing fails
        // but more than 2³² origins or path bytes, which no input makes.
        b.finish().unwrap_or_else(|_| UrlTable {
            origins: Vec::new(),
            data: Arc::new(UrlTableBuilder::new().finish_data()),
        })
    }
}

/// The wire form of [`UrlData`] (JSON): the arena as one string, the
/// columns as arrays; checked whole when read, since it comes from a peer.
#[derive(Serialize, Deserialize)]
struct Wire {
    prefixes: Vec<String>,
    kinds: Vec<Kind>,
    #[serde(default)]
    kind_of: Vec<u32>,
    paths: String,
    #[serde(default)]
    sizes: Vec<u64>,
    #[serde(default)]
    xxh3: Vec<u64>,
    /// The alias table; both empty for a uniform pick.
    #[serde(default)]
    prob: Vec<f32>,
    #[serde(default)]
    alias: Vec<u32>,
    class_weights: Vec<f64>,
    weight_total: f64,
    #[serde(default)]
    bad_weight: Option<String>,
}

/// [`Wire`], borrowed from the data: serialising copies nothing.
#[derive(Serialize)]
struct WireRef<'a> {
    prefixes: &'a [String],
    kinds: &'a [Kind],
    kind_of: &'a [u32],
    paths: &'a str,
    sizes: &'a [u64],
    xxh3: &'a [u64],
    prob: &'a [f32],
    alias: &'a [u32],
    class_weights: &'a [f64],
    weight_total: f64,
    bad_weight: &'a Option<String>,
}

impl Serialize for UrlData {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (prob, alias): (&[f32], &[u32]) = match &self.pick {
            Pick::Uniform => (&[], &[]),
            Pick::Alias { prob, alias } => (prob, alias),
        };
        WireRef {
            prefixes: &self.prefixes,
            kinds: &self.kinds,
            kind_of: &self.kind_of,
            paths: &self.paths,
            sizes: &self.sizes,
            xxh3: &self.xxh3,
            prob,
            alias,
            class_weights: &self.class_weights,
            weight_total: self.weight_total,
            bad_weight: &self.bad_weight,
        }
        .serialize(s)
    }
}

impl TryFrom<Wire> for UrlData {
    type Error = String;

    /// Checks every index and length, so a list from a peer cannot make
    /// the hot loop index out of bounds.
    fn try_from(w: Wire) -> Result<UrlData, String> {
        if !w.paths.is_empty() && !w.paths.ends_with('\n') {
            return Err("URL list: the paths must each end with a line break".into());
        }
        u32::try_from(w.paths.len()).map_err(|_| "URL list: more than 4 GiB of paths".to_string())?;
        // A path goes on a request line as it is: no carriage return or
        // other control byte but the line ends.
        if w.paths.bytes().any(|b| b != b'\n' && (b < 0x20 || b == 0x7f)) {
            return Err("URL list: a control character in a path".into());
        }
        // Counted first, so the column takes its room once (a list of
        // millions from a peer is not held twice while it grows).
        let mut ends = Vec::with_capacity(memchr::memchr_iter(b'\n', w.paths.as_bytes()).count());
        ends.extend(memchr::memchr_iter(b'\n', w.paths.as_bytes()).map(|e| e as u32));
        let ends = ends.into_boxed_slice();
        let n = ends.len();
        let column = |what: &str, len: usize| {
            if len == 0 || len == n {
                Ok(())
            } else {
                Err(format!("URL list: {what} has {len} entries for {n} URLs"))
            }
        };
        column("kind_of", w.kind_of.len())?;
        column("sizes", w.sizes.len())?;
        column("xxh3", w.xxh3.len())?;
        column("prob", w.prob.len())?;
        if w.prob.len() != w.alias.len() {
            return Err("URL list: prob and alias differ in length".into());
        }
        if n > 0 && w.kinds.is_empty() {
            return Err("URL list: URLs but no kinds".into());
        }
        if let Some(k) = w.kind_of.iter().find(|&&k| k as usize >= w.kinds.len()) {
            return Err(format!("URL list: kind {k} of {}", w.kinds.len()));
        }
        for k in &w.kinds {
            if k.origin as usize >= w.prefixes.len() {
                return Err(format!("URL list: origin {} of {}", k.origin, w.prefixes.len()));
            }
            if k.expect > 2 || (k.expect >= 1 && w.sizes.len() != n) || (k.expect == 2 && w.xxh3.len() != n) {
                return Err("URL list: a kind expects sizes or checksums the list lacks".into());
            }
        }
        if w.alias.iter().any(|&a| a as usize >= n) || w.prob.iter().any(|p| !p.is_finite()) {
            return Err("URL list: an alias table out of range".into());
        }
        let pick = if w.prob.is_empty() {
            Pick::Uniform
        } else {
            Pick::Alias {
                prob: w.prob.into_boxed_slice(),
                alias: w.alias.into_boxed_slice(),
            }
        };
        Ok(UrlData {
            prefixes: w.prefixes,
            kinds: w.kinds,
            kind_of: w.kind_of.into_boxed_slice(),
            paths: w.paths,
            ends,
            sizes: w.sizes.into_boxed_slice(),
            xxh3: w.xxh3.into_boxed_slice(),
            pick,
            class_weights: w.class_weights,
            weight_total: w.weight_total,
            bad_weight: w.bad_weight,
        })
    }
}

/// The head of a [`UrlData`] sent in chunks (the agents' wire): what is
/// not per URL, the totals the chunks must add up to, and which columns
/// each chunk carries. Small (a line per origin and kind), so JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkHead {
    prefixes: Vec<String>,
    kinds: Vec<Kind>,
    class_weights: Vec<f64>,
    weight_total: f64,
    #[serde(default)]
    bad_weight: Option<String>,
    /// URLs in all, and their path bytes (line ends included).
    pub urls: u64,
    pub path_bytes: u64,
    kind_of: bool,
    sizes: bool,
    xxh3: bool,
    alias: bool,
}

impl ChunkHead {
    /// Bytes per URL of the columns a chunk carries beside the paths.
    fn column_bytes(&self) -> u64 {
        4 * u64::from(self.kind_of) + 8 * u64::from(self.sizes) + 8 * u64::from(self.xxh3) + 8 * u64::from(self.alias)
    }

    /// What the chunks of this list hold in all, their 8-byte counts
    /// aside: the bound an agent checks before it takes any room.
    pub fn data_bytes(&self) -> u64 {
        self.path_bytes
            .saturating_add(self.urls.saturating_mul(self.column_bytes()))
    }
}

/// The chunk encoding (the agents' wire, docs/agents.md): a chunk holds
/// URLs `first..end` as little-endian `u32` count, `u32` path bytes, the
/// paths (each ending in `\n`), then each column the head names, in this
/// order: `kind_of` (`u32`), `sizes` (`u64`), `xxh3` (`u64`), the alias
/// table's `prob` (`f32`) and `alias` (`u32`). Binary and without
/// per-URL framing: about a URL's path plus 8 bytes for an unequal
/// weight, 16 for a checksum.
impl UrlData {
    /// The head of this list's chunked form.
    pub fn chunk_head(&self) -> ChunkHead {
        ChunkHead {
            prefixes: self.prefixes.clone(),
            kinds: self.kinds.clone(),
            class_weights: self.class_weights.clone(),
            weight_total: self.weight_total,
            bad_weight: self.bad_weight.clone(),
            urls: self.len() as u64,
            path_bytes: self.paths.len() as u64,
            kind_of: !self.kind_of.is_empty(),
            sizes: !self.sizes.is_empty(),
            xxh3: !self.xxh3.is_empty(),
            alias: matches!(self.pick, Pick::Alias { .. }),
        }
    }

    /// Where URL `i`'s path starts in the arena.
    fn path_start(&self, i: usize) -> usize {
        if i == 0 {
            0
        } else {
            self.ends[i - 1] as usize + 1
        }
    }

    /// The URLs of the chunk that starts at URL `first`: as many as fit
    /// in `max_bytes` of chunk, at least one (a path longer than a chunk
    /// travels alone). Returns the end (exclusive).
    pub fn chunk_end(&self, first: usize, max_bytes: usize) -> usize {
        let per_url = self.chunk_head_columns();
        let base = self.path_start(first);
        let room = max_bytes.saturating_sub(8);
        // The largest end whose bytes fit: the ends are increasing, so a
        // binary search over the arena offsets.
        let (mut lo, mut hi) = (first + 1, self.len());
        if lo > hi {
            return self.len();
        }
        let fits = |end: usize| (self.ends[end - 1] as usize + 1 - base) + (end - first) * per_url <= room;
        if !fits(lo) {
            return lo;
        }
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }

    fn chunk_head_columns(&self) -> usize {
        4 * usize::from(!self.kind_of.is_empty())
            + 8 * usize::from(!self.sizes.is_empty())
            + 8 * usize::from(!self.xxh3.is_empty())
            + 8 * usize::from(matches!(self.pick, Pick::Alias { .. }))
    }

    /// URLs `first..end` as one chunk (the encoding above).
    pub fn chunk(&self, first: usize, end: usize) -> Vec<u8> {
        let end = end.min(self.len());
        let first = first.min(end);
        let (a, b) = if first == end {
            (0, 0)
        } else {
            (self.path_start(first), self.ends[end - 1] as usize + 1)
        };
        let n = end - first;
        let mut out = Vec::with_capacity(8 + (b - a) + n * self.chunk_head_columns());
        out.extend_from_slice(&(n as u32).to_le_bytes());
        out.extend_from_slice(&((b - a) as u32).to_le_bytes());
        out.extend_from_slice(&self.paths.as_bytes()[a..b]);
        if !self.kind_of.is_empty() {
            self.kind_of[first..end]
                .iter()
                .for_each(|k| out.extend_from_slice(&k.to_le_bytes()));
        }
        if !self.sizes.is_empty() {
            self.sizes[first..end]
                .iter()
                .for_each(|k| out.extend_from_slice(&k.to_le_bytes()));
        }
        if !self.xxh3.is_empty() {
            self.xxh3[first..end]
                .iter()
                .for_each(|k| out.extend_from_slice(&k.to_le_bytes()));
        }
        if let Pick::Alias { prob, alias } = &self.pick {
            prob[first..end]
                .iter()
                .for_each(|k| out.extend_from_slice(&k.to_le_bytes()));
            alias[first..end]
                .iter()
                .for_each(|k| out.extend_from_slice(&k.to_le_bytes()));
        }
        out
    }
}

/// Builds a [`UrlData`] from its chunked form a chunk at a time, holding
/// nothing of a chunk after its push: the columns take their final room
/// once, from the head's totals (bounded by `max_bytes`), so the list is
/// never held twice. Everything is checked as it arrives and again whole
/// at [`finish`](Self::finish), as the JSON form is.
#[derive(Debug)]
pub struct UrlDataReceiver {
    head: ChunkHead,
    paths: Vec<u8>,
    kind_of: Vec<u32>,
    sizes: Vec<u64>,
    xxh3: Vec<u64>,
    prob: Vec<f32>,
    alias: Vec<u32>,
    urls: u64,
}

impl UrlDataReceiver {
    /// A receiver for the list `head` announces, refused when its data
    /// would pass `max_bytes`.
    pub fn new(head: ChunkHead, max_bytes: u64) -> Result<UrlDataReceiver, String> {
        let bytes = head.data_bytes();
        if bytes > max_bytes {
            return Err(format!(
                "it announces {} URLs in {bytes} bytes, more than this agent takes ({max_bytes} bytes)",
                head.urls
            ));
        }
        if head.path_bytes > u64::from(u32::MAX) {
            return Err("more than 4 GiB of paths".into());
        }
        // Within the bound just checked, so these fit in memory by the
        // agent's own limit.
        let n = head.urls as usize;
        let col = |on: bool| if on { n } else { 0 };
        Ok(UrlDataReceiver {
            paths: Vec::with_capacity(head.path_bytes as usize),
            kind_of: Vec::with_capacity(col(head.kind_of)),
            sizes: Vec::with_capacity(col(head.sizes)),
            xxh3: Vec::with_capacity(col(head.xxh3)),
            prob: Vec::with_capacity(col(head.alias)),
            alias: Vec::with_capacity(col(head.alias)),
            urls: 0,
            head,
        })
    }

    /// URLs received so far.
    pub fn urls(&self) -> u64 {
        self.urls
    }

    /// Path and column bytes received so far.
    pub fn bytes(&self) -> u64 {
        self.paths.len() as u64 + self.urls * self.head.column_bytes()
    }

    /// Adds one chunk; an error names what is wrong with it.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), String> {
        let word = |at: usize| -> Result<u32, String> {
            chunk
                .get(at..at + 4)
                .and_then(|b| b.try_into().ok())
                .map(u32::from_le_bytes)
                .ok_or_else(|| "a chunk shorter than its counts".to_string())
        };
        let n = word(0)? as usize;
        let path_len = word(4)? as usize;
        if self.urls + n as u64 > self.head.urls {
            return Err(format!(
                "more URLs than its head announced ({} after this chunk, {} announced)",
                self.urls + n as u64,
                self.head.urls
            ));
        }
        if (self.paths.len() + path_len) as u64 > self.head.path_bytes {
            return Err(format!(
                "more path bytes than its head announced ({} announced)",
                self.head.path_bytes
            ));
        }
        let want = 8 + path_len + n * self.head.column_bytes() as usize;
        if chunk.len() != want {
            return Err(format!("a chunk of {} bytes where its counts say {want}", chunk.len()));
        }
        let paths = &chunk[8..8 + path_len];
        // Whole paths only, each ending in a line break: a chunk's paths
        // are checked alone (UTF-8, no control byte but the line ends).
        let lines = memchr::memchr_iter(b'\n', paths).count();
        if lines != n || (n > 0 && paths.last() != Some(&b'\n')) || (n == 0 && path_len != 0) {
            return Err(format!("a chunk of {n} URLs with {lines} paths"));
        }
        if std::str::from_utf8(paths).is_err() {
            return Err("a path that is not UTF-8".into());
        }
        if paths.iter().any(|&b| b != b'\n' && (b < 0x20 || b == 0x7f)) {
            return Err("a control character in a path".into());
        }
        self.paths.extend_from_slice(paths);
        let mut at = 8 + path_len;
        let mut take = |width: usize| {
            let s = &chunk[at..at + n * width];
            at += n * width;
            s.chunks_exact(width)
        };
        if self.head.kind_of {
            let col = take(4);
            self.kind_of
                .extend(col.map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])));
        }
        if self.head.sizes {
            let col = take(8);
            self.sizes
                .extend(col.map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default())));
        }
        if self.head.xxh3 {
            let col = take(8);
            self.xxh3
                .extend(col.map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default())));
        }
        if self.head.alias {
            let col = take(4);
            self.prob
                .extend(col.map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
            let col = take(4);
            self.alias
                .extend(col.map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])));
        }
        self.urls += n as u64;
        Ok(())
    }

    /// The list, once every URL the head announced has come; checked
    /// whole (every index in range) as a list from a peer must be.
    pub fn finish(self) -> Result<UrlData, String> {
        let h = self.head;
        if self.urls != h.urls || self.paths.len() as u64 != h.path_bytes {
            return Err(format!(
                "it stopped short: {} of {} URLs, {} of {} path bytes",
                self.urls,
                h.urls,
                self.paths.len(),
                h.path_bytes
            ));
        }
        let paths = String::from_utf8(self.paths).map_err(|_| "a path that is not UTF-8".to_string())?;
        UrlData::try_from(Wire {
            prefixes: h.prefixes,
            kinds: h.kinds,
            kind_of: self.kind_of,
            paths,
            sizes: self.sizes,
            xxh3: self.xxh3,
            prob: self.prob,
            alias: self.alias,
            class_weights: h.class_weights,
            weight_total: h.weight_total,
            bad_weight: h.bad_weight,
        })
    }
}

/// Builds a URL list a URL at a time, without holding a URL's text past
/// its push: each distinct origin is parsed once.
#[derive(Debug, Default)]
pub struct UrlTableBuilder {
    prefixes: Vec<String>,
    /// Per origin: resolved already (URLs pushed as [`UrlPlan`]s), or not.
    resolved: Vec<Option<Origin>>,
    origin_of: HashMap<String, u32>,
    kinds: Vec<Kind>,
    kind_index: HashMap<Kind, u32>,
    kind_of: Vec<u32>,
    paths: String,
    ends: Vec<u32>,
    sizes: Vec<u64>,
    xxh3: Vec<u64>,
    /// Per URL its weight, until `finish` turns them into the alias table.
    weights: Vec<f32>,
    bad_weight: Option<String>,
    class_weights: Vec<f64>,
}

impl UrlTableBuilder {
    pub fn new() -> UrlTableBuilder {
        UrlTableBuilder::default()
    }

    /// A builder with room for `urls` URLs of `path_bytes` path bytes in
    /// all (no growth by doubling when both are known).
    pub fn with_capacity(urls: usize, path_bytes: usize) -> UrlTableBuilder {
        UrlTableBuilder {
            paths: String::with_capacity(path_bytes + urls),
            ends: Vec::with_capacity(urls),
            weights: Vec::with_capacity(urls),
            ..UrlTableBuilder::default()
        }
    }

    /// Number of URLs so far.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Adds URL `url` (text: `http://host[:port]/path`); its origin is
    /// checked and resolved by `finish` or [`UrlTable::resolve`].
    pub fn push_url(
        &mut self,
        url: &str,
        weight: f64,
        class: usize,
        expect_status: u16,
        expect: Expect,
        request: u32,
    ) -> Result<(), PlanError> {
        let after_scheme = url.find("://").map_or(url.len(), |i| i + 3);
        let origin_end = url[after_scheme..]
            .find(['/', '?', '#'])
            .map_or(url.len(), |j| after_scheme + j);
        let (prefix, rest) = url.split_at(origin_end);
        // A fragment stays with the client; `?q` alone asks for `/?q`.
        let rest = &rest[..rest.find('#').unwrap_or(rest.len())];
        let origin = match self.origin_of.get(prefix) {
            Some(&o) => o,
            // Checked when resolved (`UrlTable::resolve`), which names it.
            None => self.intern(prefix, None)?,
        };
        if rest.contains(['\n', '\r']) {
            return Err(PlanError::BadUrl {
                url: url.to_string(),
                why: "a line break in a URL".into(),
            });
        }
        let slash = if rest.starts_with('/') { "" } else { "/" };
        self.push_raw(origin, slash, rest, weight, class, expect_status, expect, request)
    }

    /// Adds a resolved URL.
    pub fn push_plan(&mut self, u: &UrlPlan) {
        let t = &u.target;
        let prefix = t.url.strip_suffix(t.path.as_str()).unwrap_or(&t.url);
        let origin = match self.origin_of.get(prefix) {
            Some(&o) if self.resolved[o as usize].as_ref().is_some_and(|r| r.addr == t.addr) => Ok(o),
            _ => {
                let resolved = Origin {
                    scheme: t.scheme,
                    host: t.host.clone(),
                    authority: t.authority.clone(),
                    addr: t.addr,
                    prefix: prefix.to_string(),
                };
                self.intern(prefix, Some(resolved))
            }
        };
        // Only more than 2³² origins or path bytes fail here; such a plan
        // cannot be made from any input benchlab reads.
        if let Ok(o) = origin {
            let path = t.path.replace(['\n', '\r'], "");
            let _ = self.push_raw(o, "", &path, u.weight, u.class, u.expect_status, u.expect, u.request);
        }
    }

    fn push_ref(&mut self, u: &UrlRef<'_>, weight: f64) -> Result<(), PlanError> {
        let o = match self.origin_of.get(&u.target.prefix) {
            Some(&o) => o,
            None => self.intern(&u.target.prefix, Some(u.target.clone()))?,
        };
        self.push_raw(o, "", u.path, weight, u.class, u.expect_status, u.expect, u.request)
    }

    fn intern(&mut self, prefix: &str, resolved: Option<Origin>) -> Result<u32, PlanError> {
        let o = u32::try_from(self.prefixes.len()).map_err(|_| too_many("origins"))?;
        self.prefixes.push(prefix.to_string());
        self.resolved.push(resolved);
        self.origin_of.insert(prefix.to_string(), o);
        Ok(o)
    }

    #[allow(clippy::too_many_arguments)]
    fn push_raw(
        &mut self,
        origin: u32,
        lead: &str,
        path: &str,
        weight: f64,
        class: usize,
        expect_status: u16,
        expect: Expect,
        request: u32,
    ) -> Result<(), PlanError> {
        let i = self.ends.len();
        let (tag, size, xxh3) = match expect {
            Expect::Status => (0, None, None),
            Expect::Size(s) => (1, Some(s), None),
            Expect::Checksum { size, xxh3 } => (2, Some(size), Some(xxh3)),
        };
        let kind = Kind {
            origin,
            class: u32::try_from(class).map_err(|_| too_many("classes"))?,
            request,
            expect_status,
            expect: tag,
        };
        let k = match self.kind_index.get(&kind) {
            Some(&k) => k,
            None => {
                let k = u32::try_from(self.kinds.len()).map_err(|_| too_many("kinds"))?;
                self.kinds.push(kind);
                self.kind_index.insert(kind, k);
                k
            }
        };
        let room = self.ends.capacity().max(i + 1);
        // A column a URL needs takes its room at once, the first URL's
        // too (an empty column grown by pushes would double, and its
        // shrink at `finish` copy it).
        if k != 0 && (self.kind_of.len() != i || self.kind_of.capacity() == 0) {
            // The first URL not of kind 0: the earlier ones all were.
            self.kind_of = Vec::with_capacity(room);
            self.kind_of.resize(i, 0);
        }
        if k != 0 || (i > 0 && self.kind_of.len() == i) {
            self.kind_of.push(k);
        }
        // A column is kept once a URL needs it: it then has an entry for
        // every URL so far.
        if size.is_some() && (self.sizes.len() != i || self.sizes.capacity() == 0) {
            self.sizes = Vec::with_capacity(room);
            self.sizes.resize(i, 0);
        }
        if size.is_some() || (i > 0 && self.sizes.len() == i) {
            self.sizes.push(size.unwrap_or(0));
        }
        if xxh3.is_some() && (self.xxh3.len() != i || self.xxh3.capacity() == 0) {
            self.xxh3 = Vec::with_capacity(room);
            self.xxh3.resize(i, 0);
        }
        if xxh3.is_some() || (i > 0 && self.xxh3.len() == i) {
            self.xxh3.push(xxh3.unwrap_or(0));
        }
        self.paths.push_str(lead);
        self.paths.push_str(path);
        let end = u32::try_from(self.paths.len()).map_err(|_| too_many("path bytes"))?;
        self.paths.push('\n');
        self.ends.push(end);
        if !(weight > 0.0 && weight.is_finite()) && self.bad_weight.is_none() {
            self.bad_weight = Some(format!(
                "{}{lead}{path}: weight must be above 0",
                self.prefixes[origin as usize]
            ));
        }
        self.weights.push(weight as f32);
        if self.class_weights.len() <= class {
            self.class_weights.resize(class + 1, 0.0);
        }
        self.class_weights[class] += weight;
        Ok(())
    }

    /// The list, unresolved: the weights become the alias table.
    pub fn finish_data(self) -> UrlData {
        self.split().0
    }

    /// The table: the list, and its origins resolved (those not resolved
    /// already, one name lookup each).
    pub fn finish(self) -> Result<UrlTable, PlanError> {
        let (data, resolved) = self.split();
        let origins = resolved
            .into_iter()
            .zip(&data.prefixes)
            .map(|(r, p)| r.map_or_else(|| Origin::resolve(p), Ok))
            .collect::<Result<Vec<_>, PlanError>>()?;
        Ok(UrlTable {
            origins,
            data: Arc::new(data),
        })
    }

    fn split(self) -> (UrlData, Vec<Option<Origin>>) {
        let pick = alias_table(self.weights);
        let weight_total = self.class_weights.iter().sum();
        let data = UrlData {
            prefixes: self.prefixes,
            kinds: self.kinds,
            kind_of: self.kind_of.into_boxed_slice(),
            paths: shrink(self.paths),
            ends: self.ends.into_boxed_slice(),
            sizes: self.sizes.into_boxed_slice(),
            xxh3: self.xxh3.into_boxed_slice(),
            pick,
            class_weights: self.class_weights,
            weight_total,
            bad_weight: self.bad_weight,
        };
        (data, self.resolved)
    }
}

fn shrink(mut s: String) -> String {
    s.shrink_to_fit();
    s
}

fn too_many(what: &str) -> PlanError {
    PlanError::Invalid(format!("too many {what} for one URL list: at most 2^32"))
}

/// Vose's alias table for `weights`, built in place: the weights become
/// the probabilities, and one work array holds the small slots from its
/// front and the large ones from its back (a slot is in one at most), so
/// building costs 4 bytes a URL beyond the table. `Uniform` when all
/// weights are equal.
fn alias_table(mut weights: Vec<f32>) -> Pick {
    let n = weights.len();
    if n <= 1 || weights.iter().all(|&w| w == weights[0]) {
        return Pick::Uniform;
    }
    // A weight not above 0 is refused by validation; drawn never here.
    for w in weights.iter_mut() {
        if !(*w > 0.0 && w.is_finite()) {
            *w = 0.0;
        }
    }
    let total: f64 = weights.iter().map(|&w| f64::from(w)).sum();
    if total <= 0.0 || !total.is_finite() {
        return Pick::Uniform;
    }
    let scale = n as f64 / total;
    let mut work = vec![0u32; n];
    let (mut small, mut large) = (0usize, n);
    for (i, w) in weights.iter_mut().enumerate() {
        *w = (f64::from(*w) * scale) as f32;
        if *w < 1.0 {
            work[small] = i as u32;
            small += 1;
        } else {
            large -= 1;
            work[large] = i as u32;
        }
    }
    let mut alias: Vec<u32> = (0..n as u32).collect();
    // The large slot being filled, its share kept in f64: a popular URL
    // gives to thousands of small ones, and f32 steps would drift.
    let mut current: Option<(u32, f64)> = None;
    while small > 0 {
        let l = match current {
            Some(c) => c,
            None if large < n => {
                let l = work[large];
                large += 1;
                (l, f64::from(weights[l as usize]))
            }
            None => break,
        };
        small -= 1;
        let s = work[small] as usize;
        alias[s] = l.0;
        let left = l.1 - (1.0 - f64::from(weights[s]));
        if left < 1.0 {
            weights[l.0 as usize] = left.max(0.0) as f32;
            work[small] = l.0;
            small += 1;
            current = None;
        } else {
            current = Some((l.0, left));
        }
    }
    // What is left is full (up to rounding).
    if let Some((l, _)) = current {
        weights[l as usize] = 1.0;
    }
    for &l in &work[large..] {
        weights[l as usize] = 1.0;
    }
    for &s in &work[..small] {
        weights[s as usize] = 1.0;
    }
    Pick::Alias {
        prob: weights.into_boxed_slice(),
        alias: alias.into_boxed_slice(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(weights: &[f64]) -> UrlTable {
        let mut b = UrlTableBuilder::new();
        for (i, &w) in weights.iter().enumerate() {
            b.push_url(&format!("http://127.0.0.1:81/f{i}"), w, 0, 200, Expect::Status, 0)
                .unwrap();
        }
        b.finish().unwrap()
    }

    #[test]
    fn the_alias_table_draws_the_weights() {
        let w = [1.0, 2.0, 3.0, 10.0, 0.5, 0.5];
        let t = table(&w);
        let total: f64 = w.iter().sum();
        let back = t.weights();
        for (i, &x) in w.iter().enumerate() {
            assert!((back[i] - x).abs() < 1e-5, "{i}: {} against {x}", back[i]);
        }
        let mut rng = SplitMix64::new(7);
        let mut counts = [0u64; 6];
        let draws = 1_000_000;
        for _ in 0..draws {
            counts[t.pick(&mut rng)] += 1;
        }
        for (i, &x) in w.iter().enumerate() {
            let share = counts[i] as f64 / draws as f64;
            assert!((share - x / total).abs() < 0.003, "{i}: {share}");
        }
    }

    #[test]
    fn a_zipf_head_keeps_its_share() {
        // A URL with half the weight of 100,000: its residue must not
        // drift over the thousands of slots it fills.
        let mut w = vec![1.0; 100_000];
        w[0] = 99_999.0;
        let back = table(&w).weights();
        assert!((back[0] - 99_999.0).abs() < 1.0, "{}", back[0]);
        let sum: f64 = back.iter().sum();
        assert!((sum - 199_998.0).abs() < 1.0, "{sum}");
    }

    #[test]
    fn urls_read_back_exactly() {
        let mut b = UrlTableBuilder::new();
        b.push_url("http://127.0.0.1:81/a?x=1", 1.0, 0, 200, Expect::Size(5), 0)
            .unwrap();
        b.push_url("http://127.0.0.1:81/b", 1.0, 1, 404, Expect::Status, 0)
            .unwrap();
        b.push_url(
            "http://localhost:82",
            1.0,
            0,
            200,
            Expect::Checksum { size: 3, xxh3: 9 },
            1,
        )
        .unwrap();
        b.push_url("http://localhost:82?q#top", 2.0, 0, 200, Expect::Status, 0)
            .unwrap();
        let t = b.finish().unwrap();
        assert_eq!(t.len(), 4);
        assert_eq!(t.origins().len(), 2);
        assert_eq!(t.get(3).url(), "http://localhost:82/?q");
        assert_eq!(t.get(0).url(), "http://127.0.0.1:81/a?x=1");
        assert_eq!(t.get(0).expect, Expect::Size(5));
        assert_eq!((t.get(1).path, t.get(1).class, t.get(1).expect_status), ("/b", 1, 404));
        assert_eq!(t.get(1).expect, Expect::Status);
        let c = t.get(2);
        assert_eq!(
            (c.path, c.target.authority.as_str(), c.request),
            ("/", "localhost:82", 1)
        );
        assert_eq!(c.expect, Expect::Checksum { size: 3, xxh3: 9 });
        let w = t.weights();
        assert!(
            w.iter().zip([1.0, 1.0, 1.0, 2.0]).all(|(a, b)| (a - b).abs() < 1e-6),
            "{w:?}"
        );
        let mut rng = SplitMix64::new(1);
        assert!((0..100).all(|_| t.pick(&mut rng) < 4));
        let half = t.filter_classes(|c| c == 0).unwrap();
        assert_eq!(half.len(), 3);
        assert_eq!(half.get(1).url(), "http://localhost:82/");
        // The wire: the same list back, every column checked.
        let json = serde_json::to_string(&**t.data()).unwrap();
        let back: UrlData = serde_json::from_str(&json).unwrap();
        assert_eq!(&back, &**t.data());
        let broken = json.replace("\"kind_of\":[0,1,2,3]", "\"kind_of\":[0,1,9,3]");
        assert_ne!(broken, json);
        let e = serde_json::from_str::<UrlData>(&broken).unwrap_err().to_string();
        assert!(e.contains("URL list: kind 9 of"), "{e}");
        let smuggled = json.replace("/b\\n", "/b\\r\\nX: y\\n");
        assert_ne!(smuggled, json);
        let e = serde_json::from_str::<UrlData>(&smuggled).unwrap_err().to_string();
        assert!(e.contains("a control character in a path"), "{e}");
    }
}
