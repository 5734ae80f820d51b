//! Fixed-size ring buffers for sparklines. Values are stored compactly (`u8` for percentages and
//! temperatures) so that 80,000 GPUs of history fit in a few tens of megabytes.

use std::collections::VecDeque;

/// Points kept per series: at a 2 s refresh, four minutes.
pub const HISTORY_LEN: usize = 120;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ring<T> {
    buf: VecDeque<T>,
}

impl<T: Copy> Ring<T> {
    pub fn push(&mut self, v: T) {
        if self.buf.len() == HISTORY_LEN {
            self.buf.pop_front();
        }
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(HISTORY_LEN);
        }
        self.buf.push_back(v);
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn last(&self) -> Option<T> {
        self.buf.back().copied()
    }

    /// The newest `n` points, oldest first.
    pub fn tail(&self, n: usize) -> impl Iterator<Item = T> + '_ {
        self.buf.iter().skip(self.buf.len().saturating_sub(n)).copied()
    }
}

/// History of one node and its GPUs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeHistory {
    pub util: Ring<u8>,
    pub power_w: Ring<u32>,
    pub gpu_util: Vec<Ring<u8>>,
    pub gpu_temp: Vec<Ring<u8>>,
    pub port_errors: Ring<u32>,
}

/// Cluster-wide series for the overview.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterHistory {
    pub util: Ring<u8>,
    pub power_kw: Ring<u32>,
    pub running: Ring<u32>,
    pub pending: Ring<u32>,
    pub idle_alloc: Ring<u32>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct StorageHistory {
    pub read_mbps: Ring<u32>,
    pub write_mbps: Ring<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_keeps_only_the_newest_points() {
        let mut r = Ring::default();
        for i in 0..(HISTORY_LEN as u32 + 10) {
            r.push(i);
        }
        assert_eq!(r.len(), HISTORY_LEN);
        assert_eq!(r.last(), Some(HISTORY_LEN as u32 + 9));
        assert_eq!(r.tail(3).collect::<Vec<_>>(), vec![127, 128, 129]);
    }
}
