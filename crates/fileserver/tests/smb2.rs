//! benchlab's own SMB2 client (`?client=benchlab`) against a real Samba
//! (smbd unprivileged on a loopback high port): every dialect, signing,
//! NT statuses by name, data read back.

use benchlab_fileserver::backend::FileBackend;
use benchlab_fileserver::smb::SmbUrl;
use benchlab_fileserver::smb2_backend::Smb2Backend;
use benchlab_fileserver::smbd::{start_smbd, start_smbd_with, user_name};
use benchlab_fileserver::Status;
use benchlab_smb2::msg;

fn connect(url: &str) -> Smb2Backend {
    Smb2Backend::connect(&SmbUrl::parse(url).unwrap()).unwrap_or_else(|e| panic!("{url}: {e}"))
}

/// Every operation at every dialect, as a guest; the three "not found"
/// statuses apart.
#[test]
fn every_operation_at_every_dialect() {
    let Some(s) = start_smbd() else {
        eprintln!("skipped: smbd is not installed");
        return;
    };
    for (i, (d, code)) in [
        ("2.0.2", 0x202),
        ("2.1", 0x210),
        ("3.0", 0x300),
        ("3.0.2", 0x302),
        ("3.1.1", 0x311),
    ]
    .into_iter()
    .enumerate()
    {
        let mut b = connect(&format!("smb://127.0.0.1:{}/bench?client=benchlab&dialect={d}", s.port));
        assert_eq!(b.dialect(), code);
        let w = format!("\\w{i}");
        b.mkdir(&w).unwrap();
        b.mkdir(&w).unwrap();
        assert_eq!(
            b.query_path(&format!("{w}\\a.txt"), msg::FILE_BASIC_INFORMATION),
            Err(Status::ObjectNameNotFound),
            "{d}"
        );
        assert_eq!(
            b.query_path(&format!("{w}\\nope\\a.txt"), msg::FILE_BASIC_INFORMATION),
            Err(Status::ObjectPathNotFound),
            "{d}"
        );
        assert_eq!(
            b.find(&format!("{w}\\*.txt"), msg::FILE_BOTH_DIRECTORY_INFORMATION),
            Err(Status::NoSuchFile),
            "{d}"
        );
        assert_eq!(
            b.find(&format!("{w}\\nope\\*.txt"), msg::FILE_BOTH_DIRECTORY_INFORMATION),
            Err(Status::ObjectPathNotFound),
            "{d}"
        );
        b.create(1, &format!("{w}\\a.txt"), 0, 2).unwrap();
        assert_eq!(
            b.create(2, &format!("{w}\\a.txt"), 0, 2),
            Err(Status::ObjectNameCollision)
        );
        let data: Vec<u8> = (0..150_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        assert_eq!(b.write(1, 0, &data).unwrap(), data.len());
        let mut back = vec![0u8; data.len() + 100];
        assert_eq!(b.read(1, 0, &mut back).unwrap(), data.len());
        assert_eq!(&back[..data.len()], &data[..]);
        b.lock(1, 0, 1, true).unwrap();
        b.lock(1, 0, 1, false).unwrap();
        assert_eq!(
            b.lock(1, 5, 1, false),
            Err(Status::Other("NT_STATUS_RANGE_NOT_LOCKED".into()))
        );
        b.flush(1).unwrap();
        b.set_file_info(1, msg::FILE_BASIC_INFORMATION).unwrap();
        b.query_file(1, msg::FILE_STANDARD_INFORMATION).unwrap();
        b.query_fs(msg::FILE_FS_SIZE_INFORMATION).unwrap();
        b.close(1).unwrap();
        assert_eq!(b.close(1), Err(Status::InvalidHandle));
        assert_eq!(std::fs::read(s.share.join(format!("w{i}/a.txt"))).unwrap(), data);
        assert_eq!(
            b.find(&format!("{w}\\*.TXT"), msg::FILE_BOTH_DIRECTORY_INFORMATION),
            Ok(1)
        );
        b.rename(&format!("{w}\\a.txt"), &format!("{w}\\b.txt")).unwrap();
        assert_eq!(b.unlink(&format!("{w}\\a.txt")), Err(Status::ObjectNameNotFound));
        b.create(3, &format!("{w}\\sub"), benchlab_fileserver::backend::DIRECTORY_FILE, 2)
            .unwrap();
        b.close(3).unwrap();
        b.create(4, &format!("{w}\\sub\\c"), 0, 2).unwrap();
        b.close(4).unwrap();
        b.deltree(&w).unwrap();
        b.deltree(&w).unwrap();
        assert!(!s.share.join(format!("w{i}")).exists(), "{d}");
        assert_eq!(b.create(5, "\\..\\x", 0, 2), Err(Status::AccessDenied));
    }
}

/// `?sign=required` signs every request of a server that does not ask it.
#[test]
fn sign_required_signs_where_the_server_does_not_ask() {
    let Some(s) = start_smbd() else {
        eprintln!("skipped: smbd is not installed");
        return;
    };
    let me = user_name();
    s.add_user(&me, "b3nchlab").unwrap();
    let plain = connect(&format!(
        "smb://{me}:b3nchlab@127.0.0.1:{}/bench?client=benchlab",
        s.port
    ));
    assert!(!plain.signing());
    drop(plain);
    let mut b = connect(&format!(
        "smb://{me}:b3nchlab@127.0.0.1:{}/bench?client=benchlab&sign=required",
        s.port
    ));
    assert!(b.signing());
    b.mkdir("\\signed").unwrap();
    let table = s.sessions();
    assert!(
        table
            .lines()
            .any(|l| l.contains("127.0.0.1 (") && l.trim_end().ends_with("AES-128-GMAC")),
        "{table}"
    );
}

/// `server signing = mandatory`: a user's session signs every request,
/// at 2.1 (HMAC-SHA256), 3.0 (AES-CMAC) and 3.1.1 (AES-GMAC); smbd's
/// own session list agrees.
#[test]
fn signing_is_required_and_done() {
    let Some(s) = start_smbd_with(" server signing = mandatory\n") else {
        eprintln!("skipped: smbd is not installed");
        return;
    };
    let me = user_name();
    s.add_user(&me, "b3nchlab").unwrap();
    for d in ["2.0.2", "2.1", "3.0", "3.1.1"] {
        let mut b = connect(&format!(
            "smb://{me}:b3nchlab@127.0.0.1:{}/bench?client=benchlab&dialect={d}",
            s.port
        ));
        assert!(b.signing(), "{d}");
        b.mkdir("\\signed").unwrap();
        b.create(1, "\\signed\\f", 0, 5).unwrap();
        assert_eq!(b.write(1, 0, b"hello").unwrap(), 5);
        b.close(1).unwrap();
        let table = s.sessions();
        // The session row's last column: how smbd saw it signed.
        // 3.1.1 negotiates AES-GMAC (offered first; Samba's preference).
        let want = match d {
            "3.1.1" => "AES-128-GMAC",
            "3.0" => "AES-128-CMAC",
            _ => "HMAC-SHA256",
        };
        assert!(
            table
                .lines()
                .any(|l| l.contains("127.0.0.1 (") && l.trim_end().ends_with(want)),
            "{d}: {table}"
        );
        drop(b);
    }
    // A wrong password is refused, and the error never shows it.
    let e = Smb2Backend::connect(
        &SmbUrl::parse(&format!(
            "smb://{me}:WRONGPW@127.0.0.1:{}/bench?client=benchlab",
            s.port
        ))
        .unwrap(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("NT_STATUS_LOGON_FAILURE") && !e.contains("WRONGPW"), "{e}");
}

/// Encryption: `smb encrypt = required` at 3.0, 3.0.2 (AES-128-CCM) and
/// 3.1.1 (AES-128-GCM, the cipher offered first), and `?encrypt=require`
/// against a server that does not ask: every request sealed, smbd's own
/// session list agrees, data read back and on disk.
#[test]
fn encryption_seals_every_request() {
    let Some(s) = start_smbd_with(" smb encrypt = required\n") else {
        eprintln!("skipped: smbd is not installed");
        return;
    };
    let me = user_name();
    s.add_user(&me, "b3nchlab").unwrap();
    for (d, cipher, shown) in [
        ("3.0", 1, "AES-128-CCM"),
        ("3.0.2", 1, "AES-128-CCM"),
        ("3.1.1", 2, "AES-128-GCM"),
    ] {
        let mut b = connect(&format!(
            "smb://{me}:b3nchlab@127.0.0.1:{}/bench?client=benchlab&dialect={d}",
            s.port
        ));
        assert_eq!(b.cipher(), Some(cipher), "{d}");
        b.mkdir("\\sealed").unwrap();
        b.create(1, &format!("\\sealed\\{d}"), 0, 5).unwrap();
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(b.write(1, 0, &data).unwrap(), data.len());
        let mut back = vec![0u8; data.len()];
        assert_eq!(b.read(1, 0, &mut back).unwrap(), data.len());
        assert_eq!(back, data);
        b.close(1).unwrap();
        assert_eq!(std::fs::read(s.share.join(format!("sealed/{d}"))).unwrap(), data);
        let table = s.sessions();
        assert!(
            table.lines().any(|l| l.contains("127.0.0.1 (") && l.contains(shown)),
            "{d}: {table}"
        );
        drop(b);
    }
    // 2.1 has no encryption: smbd refuses the session, said by name.
    let e = Smb2Backend::connect(
        &SmbUrl::parse(&format!(
            "smb://{me}:b3nchlab@127.0.0.1:{}/bench?client=benchlab&dialect=2.1",
            s.port
        ))
        .unwrap(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("SESSION_SETUP answered NT_STATUS_ACCESS_DENIED"), "{e}");
    let Some(plain) = start_smbd() else { return };
    plain.add_user(&me, "b3nchlab").unwrap();
    let mut b = connect(&format!(
        "smb://{me}:b3nchlab@127.0.0.1:{}/bench?client=benchlab&encrypt=require",
        plain.port
    ));
    assert_eq!(b.cipher(), Some(2));
    b.mkdir("\\x").unwrap();
    let table = plain.sessions();
    assert!(
        table
            .lines()
            .any(|l| l.contains("127.0.0.1 (") && l.contains("AES-128-GCM")),
        "{table}"
    );
}
