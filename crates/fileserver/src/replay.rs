//! Replaying a dbench loadfile: line after line, in the user's own
//! `\clients\clientN`, each operation's outcome compared with the status
//! the line expects. A read or write that moves other bytes than the line
//! says ends as a short transfer.

use crate::backend::FileBackend;
use crate::diskmix::Record;
use crate::loadfile::{client_path, Loadfile, Op};
use crate::status::Status;
use std::time::Instant;

/// A user's place in the loadfile.
pub struct LoadfileUser<'a> {
    file: &'a Loadfile,
    user: u32,
    next: usize,
    buf: Vec<u8>,
    p1: String,
    p2: String,
}

impl<'a> LoadfileUser<'a> {
    pub fn new(file: &'a Loadfile, user: u32) -> LoadfileUser<'a> {
        let max = file
            .lines
            .iter()
            .map(|l| match l.op {
                Op::ReadX { size, .. } | Op::WriteX { size, .. } => size as usize,
                _ => 0,
            })
            .max()
            .unwrap_or(0);
        // Written bytes: a fixed pattern (servers that compress or
        // deduplicate see the same bytes as from dbench's buffers).
        let buf = (0..max)
            .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3])
            .collect();
        LoadfileUser {
            file,
            user,
            next: 0,
            buf,
            p1: String::new(),
            p2: String::new(),
        }
    }

    /// Does the next line; true when it ended a pass of the file.
    pub fn step(&mut self, b: &mut dyn FileBackend, record: Record<'_>) -> bool {
        let line = &self.file.lines[self.next];
        let n = self.user;
        let t = Instant::now();
        let mut moved = 0u64;
        let got: Status = {
            let (p1, p2, buf) = (&mut self.p1, &mut self.p2, &mut self.buf);
            let r = match &line.op {
                Op::NtCreateX {
                    path,
                    options,
                    disposition,
                    fnum,
                } => {
                    client_path(path, n, p1);
                    b.create(*fnum as u64, p1, *options, *disposition)
                }
                Op::Close { fnum } => b.close(*fnum as u64),
                Op::ReadX {
                    fnum,
                    offset,
                    size,
                    ret,
                } => b.read(*fnum as u64, *offset, &mut buf[..*size as usize]).and_then(|r| {
                    moved = r as u64;
                    if r == *ret as usize {
                        Ok(())
                    } else {
                        Err(Status::ShortTransfer)
                    }
                }),
                Op::WriteX {
                    fnum,
                    offset,
                    size,
                    ret,
                } => b.write(*fnum as u64, *offset, &buf[..*size as usize]).and_then(|w| {
                    moved = w as u64;
                    if w == *ret as usize {
                        Ok(())
                    } else {
                        Err(Status::ShortTransfer)
                    }
                }),
                Op::Rename { from, to } => {
                    client_path(from, n, p1);
                    client_path(to, n, p2);
                    b.rename(p1, p2)
                }
                Op::Unlink { path, .. } => {
                    client_path(path, n, p1);
                    b.unlink(p1)
                }
                Op::QueryPathInformation { path, class, .. } => {
                    client_path(path, n, p1);
                    b.query_path(p1, *class)
                }
                Op::QueryFileInformation { fnum, class, .. } => b.query_file(*fnum as u64, *class),
                Op::QueryFsInformation { class, .. } => b.query_fs(*class),
                Op::SetFileInformation { fnum, class, .. } => b.set_file_info(*fnum as u64, *class),
                Op::FindFirst { pattern, class, .. } => {
                    client_path(pattern, n, p1);
                    b.find(p1, *class).map(drop)
                }
                Op::LockX { fnum, offset, len } => b.lock(*fnum as u64, *offset, *len, true),
                Op::UnlockX { fnum, offset, len } => b.lock(*fnum as u64, *offset, *len, false),
                Op::Flush { fnum } => b.flush(*fnum as u64),
                Op::Deltree { path } => {
                    client_path(path, n, p1);
                    b.deltree(p1)
                }
                Op::Mkdir { path } => {
                    client_path(path, n, p1);
                    b.mkdir(p1)
                }
            };
            match r.err().unwrap_or(Status::Ok) {
                s if !b.distinguishes_not_found()
                    && crate::backend::is_not_found(&s)
                    && crate::backend::is_not_found(&line.expect) =>
                {
                    line.expect.clone()
                }
                s => s,
            }
        };
        record(
            line.op.kind(),
            line.expect.clone(),
            got,
            t.elapsed().as_micros() as u64,
            moved,
        );
        self.next += 1;
        if self.next == self.file.lines.len() {
            self.next = 0;
            return true;
        }
        false
    }
}
