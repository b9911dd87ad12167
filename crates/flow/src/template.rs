//! `{{name}}` templates in URLs, header values, bodies and expected values
//! of checks. A template is parsed once, when the flow is compiled, into
//! literal and variable segments; each variable is resolved to a small
//! integer id then, so rendering a request is copying bytes — no parsing,
//! no string lookup, no allocation once the caller's buffer has grown.
//!
//! `{{{{` writes a literal `{{` (a `}}` outside a variable is literal).
//! Spaces inside the braces are allowed: `{{ user }}` is `{{user}}`.

use std::fmt;

/// A variable's id in its flow's [`VarTable`]: an index into [`Vars`].
pub type VarId = u16;

/// The most variables a flow defines (feeder columns and captures).
pub const MAX_VARS: usize = 1024;

/// The variables a flow defines, by name; ids are given in order of
/// definition.
#[derive(Debug, Clone, Default)]
pub struct VarTable {
    names: Vec<Box<str>>,
}

impl VarTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of `name`, defining it if it is new; `None` past
    /// [`MAX_VARS`].
    pub fn define(&mut self, name: &str) -> Option<VarId> {
        if let Some(id) = self.id(name) {
            return Some(id);
        }
        if self.names.len() >= MAX_VARS {
            return None;
        }
        self.names.push(name.into());
        Some((self.names.len() - 1) as VarId)
    }

    /// The id of a defined variable.
    pub fn id(&self, name: &str) -> Option<VarId> {
        self.names.iter().position(|n| &**n == name).map(|i| i as VarId)
    }

    pub fn name(&self, id: VarId) -> &str {
        self.names.get(id as usize).map(|n| &**n).unwrap_or("")
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// The most bytes one variable holds (a feeder cell, a captured value): a
/// server's answer never grows a user's memory without bound.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;

/// A virtual user's variable values, indexed by [`VarId`]. A variable not
/// yet set (a capture of a later step) renders empty.
#[derive(Debug, Clone, Default)]
pub struct Vars {
    values: Vec<Vec<u8>>,
}

impl Vars {
    /// Storage for the `n` variables of a table.
    pub fn new(n: usize) -> Self {
        Vars {
            values: vec![Vec::new(); n],
        }
    }

    #[inline]
    pub fn get(&self, id: VarId) -> &[u8] {
        self.values.get(id as usize).map(|v| &v[..]).unwrap_or(&[])
    }

    /// Sets a value, reusing the variable's buffer. Values over
    /// [`MAX_VALUE_BYTES`] are refused (false); the caller counts that.
    pub fn set(&mut self, id: VarId, value: &[u8]) -> bool {
        if value.len() > MAX_VALUE_BYTES {
            return false;
        }
        if let Some(v) = self.values.get_mut(id as usize) {
            v.clear();
            v.extend_from_slice(value);
        }
        true
    }

    /// Empties every value, keeping the buffers.
    pub fn clear(&mut self) {
        for v in &mut self.values {
            v.clear();
        }
    }
}

/// Where a template's text goes, which decides how a variable's value is
/// written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// A request target (path and query): a value is percent-encoded, every
    /// byte but RFC 3986's unreserved `A-Z a-z 0-9 - . _ ~` as `%XX`, so a
    /// value never adds a `/`, `?`, `&`, `=` or `#` of its own.
    Url,
    /// A header value: a value's CR, LF and NUL bytes are dropped, so a
    /// captured value cannot end the header or add one.
    Header,
    /// A body or an expected value: the value's bytes as they are.
    Raw,
}

#[derive(Debug, Clone, Copy)]
enum Seg {
    Lit { start: u32, end: u32 },
    Var { id: VarId, name: u16 },
}

/// A parsed template.
#[derive(Debug, Clone)]
pub struct Template {
    /// The literal bytes, escapes resolved; `Seg::Lit` ranges point here.
    text: Box<[u8]>,
    segs: Box<[Seg]>,
    /// Each variable reference: its name and byte offset in the source.
    refs: Box<[(Box<str>, usize)]>,
    context: Context,
    resolved: bool,
}

/// What is wrong with a template, at a byte offset of its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for TemplateError {}

/// The most bytes of a template's source (a URL, a header, a body: as
/// large as a step's `body_file` may be).
pub const MAX_TEMPLATE_BYTES: usize = 64 << 20;

/// A variable name: a letter or `_`, then letters, digits and `_`.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 64
}

impl Template {
    /// Parses `source`; variables are unresolved until [`Template::resolve`].
    pub fn parse(source: &str, context: Context) -> Result<Template, TemplateError> {
        if source.len() > MAX_TEMPLATE_BYTES {
            return Err(TemplateError {
                offset: 0,
                message: format!("longer than {} MiB", MAX_TEMPLATE_BYTES >> 20),
            });
        }
        let src = source.as_bytes();
        let mut text = Vec::with_capacity(src.len());
        let mut segs = Vec::new();
        let mut refs: Vec<(Box<str>, usize)> = Vec::new();
        let mut lit_start = 0usize;
        let mut i = 0usize;
        let flush = |text: &mut Vec<u8>, segs: &mut Vec<Seg>, start: &mut usize| {
            if text.len() > *start {
                segs.push(Seg::Lit {
                    start: *start as u32,
                    end: text.len() as u32,
                });
            }
            *start = text.len();
        };
        while i < src.len() {
            if src[i..].starts_with(b"{{{{") {
                text.extend_from_slice(b"{{");
                i += 4;
            } else if src[i..].starts_with(b"{{") {
                let inner_start = i + 2;
                let Some(len) = source[inner_start..].find("}}") else {
                    return Err(TemplateError {
                        offset: i,
                        message: "`{{` is not closed by `}}` (write `{{{{` for a literal `{{`)".into(),
                    });
                };
                let name = source[inner_start..inner_start + len].trim();
                if !valid_name(name) {
                    return Err(TemplateError {
                        offset: i,
                        message: format!(
                            "`{{{{{}}}}}` is no variable name: expected a letter or `_`, then letters, digits \
                             and `_`, at most 64 (write `{{{{{{{{` for a literal `{{{{`)",
                            benchlab_input::excerpt(name)
                        ),
                    });
                }
                if refs.len() >= u16::MAX as usize {
                    return Err(TemplateError {
                        offset: i,
                        message: "more than 65535 variables in one template".into(),
                    });
                }
                flush(&mut text, &mut segs, &mut lit_start);
                segs.push(Seg::Var {
                    id: VarId::MAX,
                    name: refs.len() as u16,
                });
                refs.push((name.into(), i));
                i = inner_start + len + 2;
            } else {
                text.push(src[i]);
                i += 1;
            }
        }
        flush(&mut text, &mut segs, &mut lit_start);
        Ok(Template {
            text: text.into_boxed_slice(),
            segs: segs.into_boxed_slice(),
            resolved: refs.is_empty(),
            refs: refs.into_boxed_slice(),
            context,
        })
    }

    /// The variables this template names, each with its byte offset in the
    /// source, in order.
    pub fn variables(&self) -> impl Iterator<Item = (&str, usize)> {
        self.refs.iter().map(|(n, o)| (&**n, *o))
    }

    /// Resolves every variable against `table`; the unknown ones are the
    /// errors, each at its offset (the caller turns them into file:line).
    pub fn resolve(&mut self, table: &VarTable) -> Result<(), Vec<TemplateError>> {
        let mut errors = Vec::new();
        for seg in self.segs.iter_mut() {
            if let Seg::Var { id, name } = seg {
                let (n, offset) = &self.refs[*name as usize];
                match table.id(n) {
                    Some(found) => *id = found,
                    None => errors.push(TemplateError {
                        offset: *offset,
                        message: format!(
                            "unknown variable `{n}`: a flow's variables are its feeders' columns and its \
                             captures"
                        ),
                    }),
                }
            }
        }
        self.resolved = errors.is_empty();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// True when the template has no variable: it renders the same bytes
    /// every time.
    pub fn is_literal(&self) -> bool {
        self.refs.is_empty()
    }

    /// The literal bytes (the whole rendering when [`Template::is_literal`]).
    pub fn literal(&self) -> &[u8] {
        &self.text
    }

    /// Appends the rendering to `out`. An unresolved variable renders
    /// empty (a compiled flow has none).
    #[inline]
    pub fn render(&self, vars: &Vars, out: &mut Vec<u8>) {
        for seg in self.segs.iter() {
            match *seg {
                Seg::Lit { start, end } => out.extend_from_slice(&self.text[start as usize..end as usize]),
                Seg::Var { id, .. } => {
                    let value = vars.get(id);
                    match self.context {
                        Context::Raw => out.extend_from_slice(value),
                        Context::Url => percent_encode(value, out),
                        Context::Header => {
                            out.extend(value.iter().copied().filter(|b| !matches!(b, b'\r' | b'\n' | 0)))
                        }
                    }
                }
            }
        }
    }
}

/// Appends `value` percent-encoded: every byte but RFC 3986's unreserved
/// characters becomes `%XX` (upper-case hex).
pub fn percent_encode(value: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in value {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(names: &[&str]) -> VarTable {
        let mut t = VarTable::new();
        for n in names {
            t.define(n);
        }
        t
    }

    fn render(src: &str, ctx: Context, vals: &[(&str, &str)]) -> String {
        let names: Vec<&str> = vals.iter().map(|(n, _)| *n).collect();
        let t = table(&names);
        let mut vars = Vars::new(t.len());
        for (n, v) in vals {
            vars.set(t.id(n).unwrap(), v.as_bytes());
        }
        let mut tpl = Template::parse(src, ctx).unwrap();
        tpl.resolve(&t).unwrap();
        let mut out = b"prefix:".to_vec();
        tpl.render(&vars, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn renders_table() {
        // (template, context, values, rendering after "prefix:")
        type Case<'a> = (&'a str, Context, &'a [(&'a str, &'a str)], &'a str);
        let cases: &[Case] = &[
            ("plain", Context::Raw, &[], "prefix:plain"),
            ("", Context::Raw, &[], "prefix:"),
            ("{{a}}", Context::Raw, &[("a", "1")], "prefix:1"),
            (
                "x{{ a }}y{{b}}",
                Context::Raw,
                &[("a", "1"), ("b", "22")],
                "prefix:x1y22",
            ),
            ("{{a}}{{a}}", Context::Raw, &[("a", "ab")], "prefix:abab"),
            ("{{{{a}}", Context::Raw, &[], "prefix:{{a}}"),
            ("{{{{{{a}}", Context::Raw, &[("a", "v")], "prefix:{{v"),
            ("a}}b", Context::Raw, &[], "prefix:a}}b"),
            ("{ {a} }", Context::Raw, &[], "prefix:{ {a} }"),
            (
                "/s?q={{q}}",
                Context::Url,
                &[("q", "a b&c=d/é")],
                "prefix:/s?q=a%20b%26c%3Dd%2F%C3%A9",
            ),
            ("/u/{{q}}", Context::Url, &[("q", "A-z.0_~")], "prefix:/u/A-z.0_~"),
            (
                "t {{v}}",
                Context::Header,
                &[("v", "a\r\nX-Evil: 1\0")],
                "prefix:t aX-Evil: 1",
            ),
            (
                "{\"n\": \"{{v}}\"}",
                Context::Raw,
                &[("v", "a\r\n")],
                "prefix:{\"n\": \"a\r\n\"}",
            ),
        ];
        for (src, ctx, vals, want) in cases {
            assert_eq!(render(src, *ctx, vals), *want, "{src:?}");
        }
    }

    #[test]
    fn errors_name_the_position() {
        let cases: &[(&str, usize, &str)] = &[
            ("ab{{x", 2, "not closed"),
            ("{{}}", 0, "no variable name"),
            ("abc{{1x}}", 3, "no variable name"),
            ("a{{x y}}", 1, "no variable name"),
            ("a{{x-y}}", 1, "no variable name"),
        ];
        for (src, offset, msg) in cases {
            let e = Template::parse(src, Context::Raw).unwrap_err();
            assert_eq!(e.offset, *offset, "{src:?}");
            assert!(e.message.contains(msg), "{src:?}: {}", e.message);
        }
    }

    #[test]
    fn unknown_variables_are_listed_with_offsets() {
        let mut t = Template::parse("/{{a}}/{{nope}}?{{ b }}&{{gone}}", Context::Url).unwrap();
        let errs = t.resolve(&table(&["a", "b"])).unwrap_err();
        let got: Vec<(usize, bool)> = errs.iter().map(|e| (e.offset, e.message.contains("`nope`"))).collect();
        assert_eq!(got, vec![(7, true), (24, false)]);
        assert!(errs[1].message.contains("`gone`"));
        let vars: Vec<_> = t.variables().collect();
        assert_eq!(vars, vec![("a", 1), ("nope", 7), ("b", 16), ("gone", 24)]);
    }

    #[test]
    fn literal_templates_say_so() {
        let t = Template::parse("/index.html", Context::Url).unwrap();
        assert!(t.is_literal());
        assert_eq!(t.literal(), b"/index.html");
        assert!(!Template::parse("/{{a}}", Context::Url).unwrap().is_literal());
    }

    #[test]
    fn values_are_bounded() {
        let mut v = Vars::new(1);
        assert!(v.set(0, &vec![b'x'; MAX_VALUE_BYTES]));
        assert!(!v.set(0, &vec![b'x'; MAX_VALUE_BYTES + 1]));
        assert_eq!(v.get(0).len(), MAX_VALUE_BYTES);
        assert_eq!(v.get(7), b"");
    }
}
