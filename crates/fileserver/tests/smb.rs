//! The SMB backend against a real Samba (smbd started unprivileged on a
//! loopback high port, see `benchlab_fileserver::smbd`): the two defects a
//! file-server benchmark must not inherit from its SMB client.

use benchlab_fileserver::backend::FileBackend;
use benchlab_fileserver::smb::{SmbBackend, SmbUrl};
use benchlab_fileserver::smbd::{start_smbd, Smbd};
use benchlab_fileserver::Status;
use benchlab_smb2::msg;
use std::sync::Mutex;
use std::time::Instant;

/// libsmbclient is not safe from two threads of one process, even with a
/// context each (measured: an abort in negotiation); the tests of this
/// binary take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn url(s: &Smbd) -> SmbUrl {
    SmbUrl::parse(&format!("smb://127.0.0.1:{}/bench", s.port)).unwrap()
}

#[test]
fn small_operations_take_under_2_ms_on_loopback() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(s) = start_smbd() else {
        eprintln!("skipped: smbd is not installed");
        return;
    };
    let mut b = SmbBackend::connect(&url(&s)).unwrap();
    b.mkdir("\\d").unwrap();
    b.create(1, "\\d\\f", 0, 2).unwrap();
    b.write(1, 0, b"x").unwrap();
    // The median of many small requests: a client without TCP_NODELAY
    // waits for the delayed ACK (~40 ms) on each.
    let mut us: Vec<u128> = (0..200)
        .map(|i| {
            let t = Instant::now();
            if i % 2 == 0 {
                b.query_path("\\d\\f", msg::FILE_BASIC_INFORMATION).unwrap();
            } else {
                b.write(1, 0, b"y").unwrap();
            }
            t.elapsed().as_micros()
        })
        .collect();
    us.sort();
    let median = us[us.len() / 2];
    assert!(median < 2000, "median small-operation latency {median} µs");
    b.close(1).unwrap();
}

#[test]
fn data_written_reads_back_identical_through_the_same_and_another_handle() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(s) = start_smbd() else {
        eprintln!("skipped: smbd is not installed");
        return;
    };
    let mut b = SmbBackend::connect(&url(&s)).unwrap();
    let mut other = SmbBackend::connect(&url(&s)).unwrap();
    let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    b.create(1, "\\f.bin", 0, 2).unwrap();
    b.write(1, 0, &data[..1000]).unwrap();
    // Past the end of file as the handle first saw it.
    b.write(1, 1000, &data[1000..]).unwrap();
    let mut back = vec![0u8; data.len() + 10];
    assert_eq!(b.read(1, 0, &mut back).unwrap(), data.len());
    assert_eq!(&back[..data.len()], &data[..]);
    other.create(7, "\\f.bin", 0, 1).unwrap();
    let mut back2 = vec![0u8; data.len()];
    assert_eq!(other.read(7, 0, &mut back2).unwrap(), data.len());
    assert_eq!(back2, data);
    // And on the server's disk.
    assert_eq!(std::fs::read(s.share.join("f.bin")).unwrap(), data);
    other.close(7).unwrap();
    b.close(1).unwrap();
    assert_eq!(
        b.query_path("\\nope", msg::FILE_BASIC_INFORMATION),
        Err(Status::ObjectNameNotFound)
    );
    assert_eq!(b.create(2, "\\f.bin", 0, 2), Err(Status::ObjectNameCollision));
}

/// `?sign=` and `?encrypt=` reach the library: smbd's own list of
/// sessions shows a user's session signed, then encrypted (a guest session
/// has no key to sign with, so a user with a password is made).
#[test]
fn signing_and_encryption_are_selectable() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(s) = start_smbd() else {
        eprintln!("skipped: smbd is not installed");
        return;
    };
    let me = benchlab_fileserver::smbd::user_name();
    s.add_user(&me, "b3nchlab").unwrap();
    let at = |q: &str| SmbUrl::parse(&format!("smb://{me}:b3nchlab@127.0.0.1:{}/bench?{q}", s.port)).unwrap();
    let mut plain = SmbBackend::connect(&at("sign=off&encrypt=none")).unwrap();
    plain.mkdir("\\plain").unwrap();
    let table = s.sessions();
    drop(plain);
    let row = table
        .lines()
        .find(|l| l.contains("127.0.0.1 ("))
        .unwrap_or_default()
        .to_string();
    let signed = {
        let mut b = SmbBackend::connect(&at("sign=required")).unwrap();
        b.mkdir("\\signed").unwrap();
        s.sessions()
    };
    let sealed = {
        let mut b = SmbBackend::connect(&at("encrypt=require")).unwrap();
        b.mkdir("\\sealed").unwrap();
        s.sessions()
    };
    // The last two columns of a session's row: encryption, signing.
    let cols = |row: &str| {
        let w: Vec<String> = row.split_whitespace().map(str::to_string).collect();
        (w[w.len() - 2].clone(), w[w.len() - 1].clone())
    };
    let session = |t: &str| {
        t.lines()
            .find(|l| l.contains("127.0.0.1 ("))
            .map(cols)
            .unwrap_or_default()
    };
    assert!(!row.is_empty(), "{table}");
    // Off: only the session setup is signed (SMB3 always signs it), nothing sealed.
    let (enc, sig) = cols(&row);
    assert_eq!(enc, "-", "{table}");
    assert!(sig.starts_with("partial("), "{table}");
    let (enc, sig) = session(&signed);
    assert_eq!(enc, "-", "{signed}");
    assert!(sig.starts_with("AES-"), "every message signed: {signed}");
    let (enc, _) = session(&sealed);
    assert!(enc.contains("AES-"), "encrypted: {sealed}");
    assert!(s.share.join("sealed").is_dir());
}
