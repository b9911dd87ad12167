//! Writes a synthetic Combined Log Format access log for `bench/log-parse.sh`:
//! Zipf URL popularity (α = 1.3 over 6,400 URLs, so about 700 URLs cover
//! 94 % of the requests, as in seed 002), SPECweb99-like paths and sizes, a
//! few non-GETs, 404s and 304s, and realistic line lengths (about 200 bytes
//! with referer and agent).
//!
//! `cargo run --release -p benchlab-logs --example gen_log -- OUT BYTES [URLS] [ALPHA] [SEED]`
//!
//! The lines are formatted by hand into one large buffer written in 8 MiB
//! chunks, so a gigabyte takes seconds: the benchmark should measure the
//! parser, not wait for its input.

use std::fs::File;
use std::io::Write;
use std::process::ExitCode;

/// SplitMix64: tiny, fast, and fixed, so the same arguments give the same log.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn push_num(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

fn push_2(out: &mut Vec<u8>, n: u64) {
    out.push(b'0' + (n / 10 % 10) as u8);
    out.push(b'0' + (n % 10) as u8);
}

const AGENTS: [&str; 4] = [
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0",
    "Mozilla/4.0 (compatible; MSIE 5.0; Windows NT)",
    "curl/8.5.0",
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: gen_log OUT BYTES [URLS=6400] [ALPHA=1.3] [SEED=1]");
        return ExitCode::from(2);
    }
    let parse = |i: usize, default: &str| args.get(i).map_or(default, String::as_str).to_owned();
    let (Ok(bytes), Ok(urls), Ok(alpha), Ok(seed)) = (
        parse(2, "0").parse::<u64>(),
        parse(3, "6400").parse::<usize>(),
        parse(4, "1.3").parse::<f64>(),
        parse(5, "1").parse::<u64>(),
    ) else {
        eprintln!("gen_log: BYTES, URLS, ALPHA and SEED must be numbers");
        return ExitCode::from(2);
    };
    if urls == 0 {
        eprintln!("gen_log: URLS must be at least 1");
        return ExitCode::from(2);
    }
    let mut rng = Rng(seed);

    // URL r (from 0) has weight 1/(r+1)^alpha; draw by the cumulative table.
    let mut cdf = Vec::with_capacity(urls);
    let mut sum = 0.0;
    for r in 0..urls {
        sum += 1.0 / ((r + 1) as f64).powf(alpha);
        cdf.push(sum);
    }
    // Paths and sizes of a SPECweb99-like tree (docs/filesets.md): `classC_K` is
    // (K+1) × 102.4 bytes × 10^C, so 102 B to 900 KiB.
    let paths: Vec<String> = (0..urls)
        .map(|r| format!("/dir{:05}/class{}_{}", r / 36, r % 36 / 9, r % 9))
        .collect();
    let sizes: Vec<u64> = (0..urls)
        .map(|r| (r as u64 % 9 + 1) * 1024 * 10u64.pow((r % 36 / 9) as u32) / 10)
        .collect();

    let mut file = match File::create(&args[1]) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("gen_log: cannot create {}: {e}", args[1]);
            return ExitCode::from(1);
        }
    };
    let mut buf: Vec<u8> = Vec::with_capacity(9 << 20);
    let mut written = 0u64;
    let mut second = 0u64;
    while written < bytes {
        while buf.len() < 8 << 20 {
            let x = rng.unit() * sum;
            let u = cdf.partition_point(|&c| c < x).min(urls - 1);
            let roll = rng.below(1000);
            let (method, status) = match roll {
                0..=29 => ("POST", 200),
                30..=39 => ("HEAD", 200),
                40..=69 => ("GET", 404),
                70..=74 => ("GET", 500),
                75..=174 => ("GET", 304),
                _ => ("GET", 200),
            };
            let ip = rng.next();
            push_num(&mut buf, 10 + (ip & 0x7f));
            buf.push(b'.');
            push_num(&mut buf, (ip >> 8) & 0xff);
            buf.push(b'.');
            push_num(&mut buf, (ip >> 16) & 0xff);
            buf.push(b'.');
            push_num(&mut buf, (ip >> 24) & 0xff);
            buf.extend_from_slice(b" - - [");
            let t = second / 64;
            push_2(&mut buf, 1 + t / 86_400 % 28);
            buf.extend_from_slice(b"/Oct/2000:");
            push_2(&mut buf, t / 3600 % 24);
            buf.push(b':');
            push_2(&mut buf, t / 60 % 60);
            buf.push(b':');
            push_2(&mut buf, t % 60);
            buf.extend_from_slice(b" -0700] \"");
            second += 1;
            buf.extend_from_slice(method.as_bytes());
            buf.push(b' ');
            buf.extend_from_slice(paths[u].as_bytes());
            buf.extend_from_slice(b" HTTP/1.1\" ");
            push_num(&mut buf, status);
            buf.push(b' ');
            match status {
                304 => buf.push(b'-'),
                404 => push_num(&mut buf, 209),
                500 => push_num(&mut buf, 531),
                _ => push_num(&mut buf, sizes[u]),
            }
            buf.extend_from_slice(b" \"http://www.example.com");
            buf.extend_from_slice(paths[(u + 1) % urls].as_bytes());
            buf.extend_from_slice(b"\" \"");
            buf.extend_from_slice(AGENTS[(ip >> 40) as usize % AGENTS.len()].as_bytes());
            buf.extend_from_slice(b"\"\n");
        }
        let take = buf.len().min(usize::try_from(bytes - written).unwrap_or(usize::MAX));
        // End on a whole line: cut after the last newline within `take`.
        let cut = buf[..take].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        if let Err(e) = file.write_all(&buf[..cut]) {
            eprintln!("gen_log: cannot write {}: {e}", args[1]);
            return ExitCode::from(1);
        }
        written += cut as u64;
        buf.drain(..cut);
        if cut < take {
            break;
        }
    }
    eprintln!("gen_log: wrote {written} bytes to {}", args[1]);
    ExitCode::SUCCESS
}
