//! What HTTP/2 and HTTP/3 share above their connections: the virtual users
//! that queue on a connection slot for a stream of it, and how a request
//! ends — counted, then think time or the next request.
//!
//! The two protocols differ in their connections (TCP, TLS and HPACK
//! frames; QUIC and QPACK) and keep those in `h2/` and `h3/`. A user's
//! life on a stream is the same in both, so it is written once here: a
//! change to how a multiplexed request is counted is made in one place.

use crate::event_loop::{check_response, Core, Measured, Shared};
use crate::plan::Load;
use crate::stats::ErrorKind;
use std::collections::VecDeque;
use std::time::Instant;

/// The connections thread `index` of `threads` drives, as a range of the
/// client's connection numbers, and the users on each.
pub(crate) fn thread_share(connections: u32, users: u32, threads: usize, index: usize) -> (u32, Vec<u32>) {
    let n = threads as u32;
    let t = index as u32;
    let mine = connections / n + u32::from(t < connections % n);
    let first = t * (connections / n) + t.min(connections % n);
    let per = (first..first + mine)
        .map(|k| users / connections + u32::from(k < users % connections))
        .collect();
    (first, per)
}

/// A connection slot: the users that share it and its current connection
/// (an older one may still be finishing its streams).
pub(crate) struct Slot {
    pub(crate) current: Option<usize>,
    /// Users waiting for a stream, oldest first.
    pub(crate) queue: VecDeque<u32>,
    /// The last connection was closed while idle: the next one re-opens it.
    pub(crate) reconnect_pending: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UState {
    Thinking,
    Queued,
    Streaming,
    Done,
}

pub(crate) struct User {
    pub(crate) state: UState,
    pub(crate) slot: u32,
    pub(crate) url: u32,
    /// The connection its stream is on (`usize::MAX`: none).
    pub(crate) link: usize,
    pub(crate) queued_at: Instant,
    pub(crate) start: Instant,
    pub(crate) deadline: Instant,
    /// HTTP/2: this request was already refused by a GOAWAY once and sent
    /// again.
    pub(crate) retried: bool,
    pub(crate) arrived: bool,
    /// Open loop: when the schedule meant this request to be sent; its
    /// latency counts from here (`start` gives the as-sent latency).
    pub(crate) intended: Option<Instant>,
    /// Bytes of the request's frames (0 until its stream opens).
    pub(crate) sent: u64,
}

/// One OS thread's users of a multiplexed protocol and their slots.
pub(crate) struct StreamUsers {
    pub(crate) users: Vec<User>,
    pub(crate) slots: Vec<Slot>,
    /// Open loop: the users — request slots here, one stream each — with
    /// no request, the next to take one on top. A closed loop has none.
    pub(crate) open: bool,
    pub(crate) free: Vec<u32>,
}

impl StreamUsers {
    /// Thread `index`'s share of the client's `connections` and of its
    /// users (in an open loop the users are request slots: the cap on
    /// streams in flight, `ClientPlan::slots`), spread over its connections.
    pub(crate) fn new(shared: &Shared, connections: u32, index: usize) -> StreamUsers {
        let plan = &shared.plan;
        let (_, per_conn) = thread_share(connections, plan.slots(), plan.os_threads, index);
        let now = Instant::now();
        let mut users = Vec::new();
        for (slot, &n) in per_conn.iter().enumerate() {
            for _ in 0..n {
                users.push(User {
                    state: UState::Thinking,
                    slot: slot as u32,
                    url: 0,
                    link: usize::MAX,
                    queued_at: now,
                    start: now,
                    deadline: now,
                    retried: false,
                    arrived: false,
                    intended: None,
                    sent: 0,
                });
            }
        }
        let slots = per_conn
            .iter()
            .map(|_| Slot {
                current: None,
                queue: VecDeque::new(),
                reconnect_pending: false,
            })
            .collect();
        let open = matches!(plan.load, Load::Open(_));
        // Popped from the end: user 0 (on the thread's first connection)
        // first, so a low rate keeps to few connections.
        let free = if open {
            (0..users.len() as u32).rev().collect()
        } else {
            Vec::new()
        };
        StreamUsers {
            users,
            slots,
            open,
            free,
        }
    }

    /// A stream open is a request in flight; a user queued for a stream
    /// (its connection not up yet, or every stream it allows busy) has
    /// sent nothing: it is waiting, as an HTTP/1 user waiting to connect.
    pub(crate) fn in_flight(&self) -> (u64, u64) {
        let in_flight = self.users.iter().filter(|u| u.state == UState::Streaming).count() as u64;
        let waiting = self.users.iter().filter(|u| u.state == UState::Queued).count() as u64;
        (in_flight, waiting)
    }

    /// User `u`'s response is complete: counted and checked, then its next.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn complete(
        &mut self,
        core: &mut Core,
        shared: &Shared,
        u: usize,
        status: u16,
        bytes: u64,
        body: u64,
        xxh3: Option<u64>,
    ) {
        let now = Instant::now();
        let user = &mut self.users[u];
        let (class, expect_status, expect) = shared.plan.urls.expectation(user.url as usize);
        // From the intended send in an open loop, from the HEADERS (or
        // the connect) otherwise; see docs/counting.md.
        let as_sent = now - user.start;
        let latency = user.intended.map_or(as_sent, |t| now - t);
        let verdict = check_response(expect_status, expect, status, body, || xxh3);
        let ended = Measured {
            latency,
            as_sent,
            wire: bytes,
            body,
            sent: user.sent,
        };
        core.record_response(class, verdict, ended, now);
        core.arrived(!std::mem::replace(&mut user.arrived, true));
        self.next(core, shared, u, true);
    }

    /// User `u`'s request failed as `kind` after `bytes` of its response.
    pub(crate) fn fail(&mut self, core: &mut Core, shared: &Shared, u: usize, kind: ErrorKind, bytes: u64) {
        let now = Instant::now();
        let user = &self.users[u];
        let class = shared.plan.urls.class(user.url as usize);
        let latency = user.intended.map_or(now - user.start, |t| now - t);
        core.record_error(class, kind, latency, bytes, user.sent, now);
        self.next(core, shared, u, false);
    }

    /// After a request ended: think, then the next one. A success with no
    /// think time starts the next at once (its stream is free now); a
    /// failure waits for the next loop turn, so that a failure found while
    /// opening a connection cannot recurse.
    fn next(&mut self, core: &mut Core, shared: &Shared, u: usize, at_once: bool) {
        self.users[u].state = UState::Thinking;
        self.users[u].link = usize::MAX;
        if self.open {
            // Open loop: the slot is free for the schedule's next send.
            self.users[u].intended = None;
            self.free.push(u as u32);
        } else if !at_once {
            core.rest(u as u32);
        } else if core.go_on_now(u as u32) {
            // Queued now; its stream opens when the caller services the slot.
            self.queue_next(core, shared, u);
        }
    }

    /// Queues user `u`'s next request without servicing the slot (the
    /// caller is inside a pass over the connection and services it after).
    pub(crate) fn queue_next(&mut self, core: &mut Core, shared: &Shared, u: usize) {
        if !core.take_request() {
            self.users[u].state = UState::Done;
            return;
        }
        let url = shared.pick_url(&mut core.rng);
        let now = Instant::now();
        let user = &mut self.users[u];
        user.url = url as u32;
        user.retried = false;
        user.sent = 0;
        user.state = UState::Queued;
        user.queued_at = now;
        user.start = now;
        user.deadline = now + shared.plan.timeout;
        let slot = user.slot as usize;
        self.slots[slot].queue.push_back(u as u32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_and_users_spread_over_threads_exactly() {
        // 5 connections, 12 users, 2 threads: 3 + 2 connections.
        let (first, per) = thread_share(5, 12, 2, 0);
        assert_eq!((first, per.clone()), (0, vec![3, 3, 2]));
        let (first, per) = thread_share(5, 12, 2, 1);
        assert_eq!((first, per), (3, vec![2, 2]));
    }
}
