//! The SMB backend against a real Samba (smbd started unprivileged on a
//! loopback high port, see `benchlab_fileserver::smbd`): the two defects a
//! file-server benchmark must not inherit from its SMB client.

use benchlab_fileserver::backend::FileBackend;
use benchlab_fileserver::smb::{SmbBackend, SmbUrl};
use benchlab_fileserver::smbd::{start_smbd, Smbd};
use benchlab_fileserver::Status;
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
    b.create(1, "\\d\\f", false, 2).unwrap();
    b.write(1, 0, b"x").unwrap();
    // The median of many small requests: a client without TCP_NODELAY
    // waits for the delayed ACK (~40 ms) on each.
    let mut us: Vec<u128> = (0..200)
        .map(|i| {
            let t = Instant::now();
            if i % 2 == 0 {
                b.query_path("\\d\\f").unwrap();
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
    b.create(1, "\\f.bin", false, 2).unwrap();
    b.write(1, 0, &data[..1000]).unwrap();
    // Past the end of file as the handle first saw it.
    b.write(1, 1000, &data[1000..]).unwrap();
    let mut back = vec![0u8; data.len() + 10];
    assert_eq!(b.read(1, 0, &mut back).unwrap(), data.len());
    assert_eq!(&back[..data.len()], &data[..]);
    other.create(7, "\\f.bin", false, 1).unwrap();
    let mut back2 = vec![0u8; data.len()];
    assert_eq!(other.read(7, 0, &mut back2).unwrap(), data.len());
    assert_eq!(back2, data);
    // And on the server's disk.
    assert_eq!(std::fs::read(s.share.join("f.bin")).unwrap(), data);
    other.close(7).unwrap();
    b.close(1).unwrap();
    assert_eq!(b.query_path("\\nope"), Err(Status::ObjectNameNotFound));
    assert_eq!(b.create(2, "\\f.bin", false, 2), Err(Status::ObjectNameCollision));
}
