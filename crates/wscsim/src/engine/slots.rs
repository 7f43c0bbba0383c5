//! A pool of small values parked until an event comes back for them: each gets a slot
//! number to carry in its event, and a slot taken back is reused, so the pool stays as
//! large as the most values parked at once rather than growing with every event.

/// Values of type `T` parked by slot number.
#[derive(Clone, Debug)]
pub struct Slots<T> {
    values: Vec<T>,
    free: Vec<u32>,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Slots {
            values: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T: Copy> Slots<T> {
    /// Parks `value`; its slot number, a free one if there is one.
    pub fn put(&mut self, value: T) -> u32 {
        match self.free.pop() {
            Some(s) => {
                self.values[s as usize] = value;
                s
            }
            None => {
                self.values.push(value);
                self.values.len() as u32 - 1
            }
        }
    }

    /// Takes back the value in `slot`, which is free again.
    pub fn take(&mut self, slot: u32) -> T {
        self.free.push(slot);
        self.values[slot as usize]
    }

    /// The value in `slot` without taking it (None past the last slot ever used).
    pub fn peek(&self, slot: u32) -> Option<&T> {
        self.values.get(slot as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_taken_back_is_reused() {
        let mut s = Slots::default();
        let (a, b) = (s.put('a'), s.put('b'));
        assert_ne!(a, b);
        assert_eq!(s.take(a), 'a');
        let c = s.put('c');
        assert_eq!(c, a, "the freed slot");
        assert_eq!((s.take(b), s.take(c)), ('b', 'c'));
        assert_eq!(s.put('d'), c, "the last freed first");
    }
}
