//! Failures and recovery: a server that fails loses its replicas' place (re-replication
//! copies the objects whose replica set lost a member to the server that joined it); a
//! server that rejoins is recovered in the background, copy by copy.

use super::*;

impl KvStore {
    /// Server `host` has rejoined: it recovers once it is a root again.
    pub fn on_server_up(&mut self, ctx: &mut SvcCtx<impl SvcSched>, host: u32) {
        if host as usize >= self.rejoined.len() {
            return;
        }
        self.rejoined[host as usize] = true;
        self.recovering[host as usize] = None;
        let root_from = ctx.net.kbr().map_or(0, |k| {
            k.root_from_ps[ctx.net.host_nodes()[host as usize] as usize]
        });
        ctx.ev.schedule(
            root_from.max(ctx.ev.now()) + 1,
            SvcEvent::Timer {
                service: KVSTORE,
                tag: REPAIR_TIMER,
            },
        );
    }

    /// A recovery copy reached `host`: recovered once the last has.
    pub(super) fn recovered_one(&mut self, host: u32) {
        let h = host as usize;
        if let Some(left) = &mut self.recovering[h] {
            *left = left.saturating_sub(1);
            if *left == 0 {
                self.rejoined[h] = false;
                self.recovering[h] = None;
            }
        }
    }

    /// A copy arrived at a replica (or a re-replication target): kept unless it already
    /// has as new a version; acknowledged once written.
    pub(super) fn store_copy(&mut self, ctx: &mut SvcCtx<impl SvcSched>, id: u32, host: u32) {
        let m = self.msgs[id as usize];
        let s = &mut self.stores[host as usize];
        if s.get(&m.key).is_none_or(|x| x.version < m.object.version) {
            s.insert(m.key, m.object);
        }
        if matches!(m.body, Body::Repair) {
            self.recovered_one(host);
        }
        if !matches!(m.body, Body::Replicate { .. }) {
            return;
        }
        match self.spec.disk {
            Some(_) => {
                let now = ctx.ev.now();
                let done = self.disks[host as usize].request(now, m.object.bytes, true);
                self.later(ctx, done, Pending::ReplicaWritten { msg: id, host });
            }
            None => self.ack_copy(ctx, id, host),
        }
    }

    pub(super) fn ack_copy(&mut self, ctx: &mut SvcCtx<impl SvcSched>, id: u32, host: u32) {
        let m = self.msgs[id as usize];
        let Body::Replicate { write } = m.body else {
            return;
        };
        let primary = self.streams.list[id as usize].src;
        let body = Body::ReplicaAck { write };
        self.open(
            ctx,
            host,
            To::Host(primary),
            body,
            m.key,
            m.object,
            Status::Ok,
        );
    }

    /// One more copy of write `w` is written; the last lets the primary reply.
    pub(super) fn copy_written(&mut self, ctx: &mut SvcCtx<impl SvcSched>, w: u32) {
        let wr = &mut self.writes[w as usize];
        wr.waiting -= 1;
        if wr.waiting > 0 {
            return;
        }
        let wr = *wr;
        let status = Status::Ok;
        self.reply(
            ctx,
            wr.primary,
            wr.op,
            wr.attempt,
            wr.key,
            status,
            Some(wr.object),
        );
    }

    /// Server `host` has failed: its messages and those to it stop (a write waiting for
    /// its copy waits until the client sends again), and re-replication is due
    /// `rereplicate_ps` from now (one pass covers every failure before it).
    pub fn on_server_down(&mut self, ctx: &mut SvcCtx<impl SvcSched>, host: u32) {
        if let Some(n) = self.incarnation.get_mut(host as usize) {
            *n += 1;
        }
        for (id, s) in self.streams.list.iter().enumerate() {
            if (s.src == host || s.to == To::Host(host)) && s.end_ps == NEVER {
                self.abandon.push(id as u32);
            }
        }
        for id in std::mem::take(&mut self.abandon) {
            self.streams.abandon(id);
        }
        if let Some(c) = &mut self.cache {
            c.flush_home(host, &self.key_bits);
        }
        let at = ctx.ev.now() + self.spec.rereplicate_ps;
        ctx.ev.schedule(
            at,
            SvcEvent::Timer {
                service: KVSTORE,
                tag: REPAIR_TIMER,
            },
        );
    }

    /// Re-replication and recovery: for every object, the live server that holds its newest
    /// version (the first, by server number) copies it to each server of its replica set
    /// (by the truth now) that lacks that version.
    pub(super) fn repair(&mut self, ctx: &mut SvcCtx<impl SvcSched>) {
        let now = ctx.ev.now();
        let r = self.spec.replicas as usize;
        let mut newest: BTreeMap<u32, (u32, Object)> = BTreeMap::new();
        for h in 0..self.stores.len() as u32 {
            if !ctx.net.host_up(h) {
                continue;
            }
            for (&k, &o) in &self.stores[h as usize] {
                let e = newest.entry(k).or_insert((h, o));
                if o.version > e.1.version {
                    *e = (h, o);
                }
            }
        }
        let mut copies = Vec::new();
        for (key, (holder, obj)) in newest {
            for m in self.replica_set(ctx.net, None, key, r, now) {
                let has = self.stores[m as usize].get(&key).map_or(0, |x| x.version);
                if m != holder && has < obj.version {
                    copies.push((holder, m, key, obj));
                }
            }
        }
        // Each rejoined server whose recovery this pass starts counts its copies; one with
        // nothing to copy is recovered now.
        for h in 0..self.rejoined.len() {
            if self.rejoined[h] && self.recovering[h].is_none() && ctx.net.host_up(h as u32) {
                let n = copies.iter().filter(|c| c.1 as usize == h).count() as u32;
                self.recovering[h] = Some(n);
                if n == 0 {
                    self.rejoined[h] = false;
                    self.recovering[h] = None;
                }
            }
        }
        for (from, to, key, obj) in copies {
            self.counters.repairs += 1;
            self.open(ctx, from, To::Host(to), Body::Repair, key, obj, Status::Ok);
        }
    }

    /// Acknowledged writes no live server holds (at their version or later): the store
    /// lost them.
    pub fn lost_writes(&self, net: &crate::net::Network) -> u64 {
        let mut lost = 0;
        for (&key, &version) in &self.clients.acknowledged {
            let held = self.stores.iter().enumerate().any(|(h, s)| {
                net.host_up(h as u32) && s.get(&key).is_some_and(|x| x.version >= version)
            });
            if !held {
                lost += 1;
            }
        }
        lost
    }
}
