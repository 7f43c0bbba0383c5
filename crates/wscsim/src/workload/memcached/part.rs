//! One part of memcached's state: the clients, the servers' pools and the halves of
//! client-server pairs of the hosts of one part of a partitioned run (all hosts
//! otherwise), touched only by those hosts' events.
//!
//! A pair has a client's half (its request connection and the responses it awaits) and a
//! server's half (its response connection and the requests it has yet to read), each in
//! its host's part. What one half must tell the other (a request sent, what its response
//! is) goes as mail: within a part it is taken at once; between parts it waits in the
//! sender's outbox until the partitions meet (`Memcached::after_window`), which is before
//! the bytes it describes can arrive: they cross a wire between partitions, whose latency
//! is at least the lookahead that bounds a window.

use super::super::etc::Op;
use super::pool::Pool;
use super::RequestRecord;
use crate::engine::StreamRng;
use crate::net::NONE;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

#[derive(Clone, Copy, Debug)]
pub(super) struct Message {
    /// The request's record, in the client's part.
    pub rec: u32,
    /// TCP: cumulative bytes on the connection once this message is in.
    /// UDP: datagrams it was sent in.
    pub end: u64,
    /// UDP: datagrams arrived so far.
    pub got: u16,
}

impl Message {
    /// Counts one more datagram (UDP); true when all have arrived.
    pub fn arrive(&mut self) -> bool {
        self.got += 1;
        self.got as u64 == self.end
    }
}

impl AsMut<Message> for Message {
    fn as_mut(&mut self) -> &mut Message {
        self
    }
}

/// A request on its way to or waiting at the server: what the server needs to do it.
/// (Kept per pair while in flight, so the per-request record stays small.)
#[derive(Clone, Copy, Debug)]
pub(super) struct Pending {
    pub msg: Message,
    pub key: u64,
    pub value_bytes: u32,
    pub key_bytes: u16,
    pub op: Op,
}

impl AsMut<Message> for Pending {
    fn as_mut(&mut self) -> &mut Message {
        &mut self.msg
    }
}

/// A client: its random stream (server choice, operation, sizes, gaps), its requests
/// sent, and its pair with each server (in its part; NONE until first used).
pub(super) struct Client {
    pub rng: StreamRng,
    pub sent: u32,
    pub pair_of: Vec<u32>,
}

/// A client's half of a pair: its request connection or stream, and the responses it
/// awaits, in order.
#[derive(Clone, Debug, Default)]
pub(super) struct ClientPair {
    pub req: u32,
    /// The response connection (NONE until the server's part tells it, when the server
    /// opens it itself).
    pub resp: u32,
    pub req_end: u64,
    pub responses: VecDeque<Message>,
    /// Requests sent on this connection.
    pub sent: u32,
    /// No more requests go on this connection: the client closes it once the responses
    /// are in (reconnecting clients), and the flag falls.
    pub retiring: bool,
}

/// A server's half of a pair: its response connection or stream, and the requests sent
/// to it that it has not read whole yet, in order.
#[derive(Clone, Debug)]
pub(super) struct ServerPair {
    pub client: u32,
    pub server: u32,
    pub req: u32,
    pub resp: u32,
    pub resp_end: u64,
    /// Within a pair nothing is reordered, so under UDP a request whose successor's
    /// datagram arrives first was lost.
    pub unread: VecDeque<Pending>,
    pub accepted: bool,
    /// Where the client's half is: its part, and its place there.
    pub client_part: u32,
    pub client_pair: u32,
}

/// What one half of a pair tells the other's part.
#[derive(Clone, Copy, Debug)]
pub(super) enum Mail {
    /// A request the client sent on its half `client_pair`; the pair's first makes the
    /// server's half.
    Request {
        first: bool,
        client: u32,
        server: u32,
        req: u32,
        /// The response connection, if the client opened it (NONE: the server opens it).
        resp: u32,
        client_part: u32,
        client_pair: u32,
        pending: Pending,
    },
    /// The server's response to request `msg.rec` of the client's half `client_pair`,
    /// sent on `resp`: its size, and whether the key was found.
    Response {
        client_pair: u32,
        resp: u32,
        msg: Message,
        hit: bool,
        response_bytes: u32,
    },
}

/// A half of a pair, as a connection or stream names it in its part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Half {
    Client(u32),
    Server(u32),
}

/// The half each connection or stream a part's hosts receive on belongs to: by the
/// connection's id split as TCP numbers them (the part that opened it, its slot there),
/// so that it stays as large as the connections the part sees.
#[derive(Default)]
pub(super) struct ConnMap {
    part_bits: u32,
    by_part: Vec<Vec<u32>>,
}

impl ConnMap {
    /// For connection ids whose low `part_bits` bits name the part that opened them.
    pub fn new(part_bits: u32) -> Self {
        ConnMap {
            part_bits,
            by_part: Vec::new(),
        }
    }

    fn place(&self, conn: u32) -> (usize, usize) {
        let part = conn & ((1 << self.part_bits) - 1);
        (part as usize, (conn >> self.part_bits) as usize)
    }

    pub fn set(&mut self, conn: u32, h: Half) {
        let (part, slot) = self.place(conn);
        if self.by_part.len() <= part {
            self.by_part.resize_with(part + 1, Vec::new);
        }
        let v = &mut self.by_part[part];
        if v.len() <= slot {
            v.resize(slot + 1, NONE);
        }
        v[slot] = match h {
            Half::Client(i) => i << 1,
            Half::Server(i) => i << 1 | 1,
        };
    }

    /// The half `conn` belongs to, if it was set.
    #[inline]
    pub fn get(&self, conn: u32) -> Option<Half> {
        let (part, slot) = self.place(conn);
        let &v = self.by_part.get(part)?.get(slot)?;
        match (v, v & 1) {
            (NONE, _) => None,
            (_, 0) => Some(Half::Client(v >> 1)),
            _ => Some(Half::Server(v >> 1)),
        }
    }
}

/// Takes the smallest free index of `free`, or the next one of `v`.
fn place<T>(v: &mut Vec<T>, free: &mut BinaryHeap<Reverse<u32>>, t: T) -> u32 {
    match free.pop() {
        Some(Reverse(i)) => {
            v[i as usize] = t;
            i
        }
        None => {
            v.push(t);
            v.len() as u32 - 1
        }
    }
}

/// One part's clients, pools, pair halves and request records (on cache lines of its own:
/// parts on different threads change their counts at once).
#[derive(Default)]
#[repr(align(128))]
pub(super) struct Part {
    pub clients: Vec<Client>,
    pub pools: Vec<Pool>,
    pub client_pairs: Vec<ClientPair>,
    pub server_pairs: Vec<ServerPair>,
    /// Halves of pairs whose connections were closed, reused for new ones (reconnecting
    /// clients), smallest first.
    free_client_pairs: BinaryHeap<Reverse<u32>>,
    free_server_pairs: BinaryHeap<Reverse<u32>>,
    pub conns: ConnMap,
    /// The requests of this part's clients.
    pub requests: Vec<RequestRecord>,
    /// This part's clients' requests sent and not yet complete or lost.
    pub outstanding: u64,
    /// This part's clients that have requests left to send.
    pub issuing: u32,
    /// Mail for other parts, with the part it is for, in the order sent.
    pub outbox: Vec<(u32, Mail)>,
}

impl Part {
    /// An empty part, whose hosts receive on connections whose ids name the part that
    /// opened them in their low `part_bits` bits.
    pub fn new(part_bits: u32) -> Self {
        Part {
            conns: ConnMap::new(part_bits),
            ..Default::default()
        }
    }

    /// A new client's half of a pair; its place in this part.
    pub fn add_client_pair(&mut self, cp: ClientPair) -> u32 {
        place(&mut self.client_pairs, &mut self.free_client_pairs, cp)
    }

    /// The client closed its half's connection: the half may be reused.
    pub fn free_client_pair(&mut self, p: u32) {
        self.free_client_pairs.push(Reverse(p));
    }

    /// The server closed its half's connection: the half may be reused.
    pub fn free_server_pair(&mut self, p: u32) {
        self.free_server_pairs.push(Reverse(p));
    }

    /// Takes mail from a half of a pair (in this part or another).
    pub fn take(&mut self, m: Mail) {
        match m {
            Mail::Request {
                first,
                client,
                server,
                req,
                resp,
                client_part,
                client_pair,
                pending,
            } => {
                let sp = if first {
                    let half = ServerPair {
                        client,
                        server,
                        req,
                        resp,
                        resp_end: 0,
                        unread: VecDeque::new(),
                        accepted: false,
                        client_part,
                        client_pair,
                    };
                    let sp = place(&mut self.server_pairs, &mut self.free_server_pairs, half);
                    self.conns.set(req, Half::Server(sp));
                    sp
                } else {
                    match self.conns.get(req) {
                        Some(Half::Server(sp)) => sp,
                        h => unreachable!("a request on {req} for {h:?}"),
                    }
                };
                self.server_pairs[sp as usize].unread.push_back(pending);
            }
            Mail::Response {
                client_pair,
                resp,
                msg,
                hit,
                response_bytes,
            } => {
                let cp = &mut self.client_pairs[client_pair as usize];
                if cp.resp == NONE {
                    cp.resp = resp;
                    self.conns.set(resp, Half::Client(client_pair));
                }
                cp.responses.push_back(msg);
                let r = &mut self.requests[msg.rec as usize];
                r.set_hit(hit);
                r.response_bytes = response_bytes;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Connections of several parts map to their halves, each kept apart.
    #[test]
    fn a_conn_map_keeps_each_connection_apart() {
        let mut m = ConnMap::new(2);
        assert_eq!(m.get(5), None);
        m.set(5, Half::Client(3)); // part 1, slot 1
        m.set(6, Half::Server(3)); // part 2, slot 1
        m.set(1, Half::Server(0)); // part 1, slot 0
        assert_eq!(
            (m.get(5), m.get(6), m.get(1), m.get(9)),
            (
                Some(Half::Client(3)),
                Some(Half::Server(3)),
                Some(Half::Server(0)),
                None
            )
        );
    }

    fn pending(rec: u32) -> Pending {
        Pending {
            msg: Message {
                rec,
                end: 10,
                got: 0,
            },
            key: 1,
            value_bytes: 0,
            key_bytes: 4,
            op: Op::Get,
        }
    }

    /// A pair's first request makes the server's half, later ones join it in order; a
    /// response tells the client's half the connection the server opened, and sets the
    /// request's record.
    #[test]
    fn mail_makes_and_fills_the_halves() {
        let mut p = Part::new(0);
        let request = |first, rec| Mail::Request {
            first,
            client: 2,
            server: 0,
            req: 7,
            resp: NONE,
            client_part: 1,
            client_pair: 4,
            pending: pending(rec),
        };
        p.take(request(true, 0));
        p.take(request(false, 1));
        let sp = &p.server_pairs[0];
        assert_eq!((sp.client, sp.client_pair, sp.unread.len()), (2, 4, 2));
        assert_eq!(p.conns.get(7), Some(Half::Server(0)));
        p.requests.push(RequestRecord::new(1, 2, Op::Get, 0, 10));
        let cp = p.add_client_pair(ClientPair {
            resp: NONE,
            ..Default::default()
        });
        let msg = Message {
            rec: 0,
            end: 30,
            got: 0,
        };
        p.take(Mail::Response {
            client_pair: cp,
            resp: 9,
            msg,
            hit: true,
            response_bytes: 30,
        });
        assert_eq!(p.client_pairs[cp as usize].resp, 9);
        assert_eq!(p.conns.get(9), Some(Half::Client(cp)));
        assert!(p.requests[0].hit() && p.requests[0].response_bytes == 30);
        p.free_client_pair(cp);
        assert_eq!(p.add_client_pair(ClientPair::default()), cp, "reused");
    }
}
