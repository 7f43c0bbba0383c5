//! A memcached server's memory pool: the value sizes of the keys it holds, evicted least
//! recently used by bytes.

pub(super) struct Pool {
    capacity_bytes: u64,
    used_bytes: u64,
    lru: lru::LruCache<u64, u32>,
}

impl Pool {
    pub fn new(capacity_bytes: u64) -> Self {
        Pool {
            capacity_bytes,
            used_bytes: 0,
            lru: lru::LruCache::unbounded(),
        }
    }

    /// Whether `bytes` more fit without evicting anything.
    pub fn fits(&self, bytes: u64) -> bool {
        self.used_bytes + bytes <= self.capacity_bytes
    }

    pub fn get(&mut self, key: u64) -> Option<u32> {
        self.lru.get(&key).copied()
    }

    pub fn set(&mut self, key: u64, bytes: u32) {
        if let Some(old) = self.lru.put(key, bytes) {
            self.used_bytes -= old as u64;
        }
        self.used_bytes += bytes as u64;
        while self.used_bytes > self.capacity_bytes {
            let Some((_, b)) = self.lru.pop_lru() else {
                break;
            };
            self.used_bytes -= b as u64;
        }
    }

    pub fn delete(&mut self, key: u64) -> bool {
        match self.lru.pop(&key) {
            Some(b) => {
                self.used_bytes -= b as u64;
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_evicts_least_recently_used_by_bytes() {
        let mut p = Pool::new(100);
        p.set(1, 40);
        p.set(2, 40);
        assert_eq!(p.get(1), Some(40)); // 1 is now the most recent
        p.set(3, 40); // 120 > 100: evict 2
        assert_eq!(p.get(2), None);
        assert_eq!(p.get(1), Some(40));
        assert_eq!(p.used_bytes, 80);
        assert!(p.fits(20) && !p.fits(21));
        p.set(1, 10); // replace: 50 bytes
        assert_eq!(p.used_bytes, 50);
        assert!(p.delete(3));
        assert!(!p.delete(3));
        assert_eq!(p.used_bytes, 10);
    }
}
