//! The cache's side of lookups (`kv_cache`): a lookup goes to the closest of its key and
//! the derived keys, a miss there is filled from the key's primary, and the cache is
//! preloaded at the start.

use super::*;

impl KvStore {
    /// What server `from` sends operation `op` to the store as: a lookup through the cache
    /// goes to the closest of its key and the derived keys; anything else to the key.
    pub(super) fn store_request(
        &mut self,
        ctx: &mut SvcCtx<impl SvcSched>,
        op: u32,
        attempt: u16,
        from: u32,
    ) -> (Body, To) {
        let o = self.clients.ops[op as usize];
        match (&self.cache, o.kind) {
            (Some(c), OpKind::Lookup) => {
                let bits = c.closest(from, self.key_bits(o.key));
                (Body::CacheRead { op, attempt }, To::Key(bits))
            }
            _ => (
                Body::Request { op, attempt },
                self.key_destination(ctx, o.key),
            ),
        }
    }

    /// A lookup reached server `host` through the cache: answered from a copy, or by the
    /// root from memory; otherwise the root is asked.
    pub(super) fn cache_read(
        &mut self,
        ctx: &mut SvcCtx<impl SvcSched>,
        host: u32,
        op: u32,
        attempt: u16,
    ) {
        let key = self.clients.ops[op as usize].key;
        let now = ctx.ev.now();
        let cache = self.cache.as_mut().expect("a cache read needs the cache");
        if let Some(version) = cache.copy_at(host, key) {
            cache.counters.hits += 1;
            let obj = Object {
                version,
                bytes: self.spec.value_bytes,
                deleted: false,
            };
            return self.reply(ctx, host, op, attempt, key, Status::Ok, Some(obj));
        }
        let root = self.replica_set(ctx.net, Some(host), key, 1, now);
        let cache = self.cache.as_mut().expect("checked");
        if root.first() == Some(&host) {
            cache.counters.hits += 1;
            let live = self.stores[host as usize]
                .get(&key)
                .copied()
                .filter(|x| !x.deleted);
            let status = if live.is_some() {
                Status::Ok
            } else {
                Status::Missing
            };
            return self.reply(ctx, host, op, attempt, key, status, live);
        }
        cache.counters.misses += 1;
        let to = To::Key(self.key_bits(key));
        let none = Object {
            version: 0,
            bytes: 0,
            deleted: false,
        };
        self.open(
            ctx,
            host,
            to,
            Body::CacheFill { op, attempt },
            key,
            none,
            Status::Ok,
        );
    }

    /// A cache's request (message `id`) reached the root `host`: it answers from memory
    /// and records the copy.
    pub(super) fn cache_fill(
        &mut self,
        ctx: &mut SvcCtx<impl SvcSched>,
        id: u32,
        host: u32,
        op: u32,
        attempt: u16,
    ) {
        let key = self.msgs[id as usize].key;
        let asker = self.streams.list[id as usize].src;
        let live = self.stores[host as usize]
            .get(&key)
            .copied()
            .filter(|x| !x.deleted);
        let (status, obj) = match live {
            Some(o) => {
                if let Some(c) = &mut self.cache {
                    c.record(host, key, asker);
                }
                (Status::Ok, o)
            }
            None => (
                Status::Missing,
                Object {
                    version: 0,
                    bytes: 0,
                    deleted: false,
                },
            ),
        };
        let body = Body::CacheData { op, attempt };
        self.open(ctx, host, To::Host(asker), body, key, obj, status);
    }

    /// Every key stored at version 1 at its replicas (by the truth at the start), as if
    /// inserted and acknowledged before the run.
    pub(super) fn preload(&mut self, ctx: &mut SvcCtx<impl SvcSched>) {
        let r = self.spec.replicas as usize;
        let obj = Object {
            version: 1,
            bytes: self.spec.value_bytes,
            deleted: false,
        };
        for key in 0..self.spec.keys {
            for s in self.replica_set(ctx.net, None, key, r, 0) {
                self.stores[s as usize].insert(key, obj);
            }
            self.clients.acknowledged.insert(key, 1);
        }
    }
}
