//! History for sparklines, stored time-major: one row per update holding a value for every
//! column (GPU, node, filesystem). Writing a tick is a contiguous row write, so 80,000 GPUs of
//! history cost a few milliseconds per tick and a few tens of megabytes in all.

/// Points kept per series: at a 2 s refresh, four minutes.
pub use crate::model::protocol::HISTORY_LEN;

/// "No value" for `u8` series (a GPU that reported no utilisation).
pub const NONE_U8: u8 = u8::MAX;

/// A ring of rows, each with one value per column. The rows are allocated when the first is
/// written: a cluster without telemetry (Kubernetes or Slurm without Prometheus) never pays for
/// them (14.5 MB at 5,000 nodes × 8 GPUs; heaptrack, docs/performance.md).
#[derive(Debug, Clone, Default, PartialEq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Matrix<T> {
    cols: usize,
    /// Empty until the first row is written; then `cols * HISTORY_LEN` values.
    data: Vec<T>,
    /// The "no value" marker the rows start with.
    empty: T,
    /// Row written next.
    head: usize,
    filled: usize,
}

impl<T: Copy + PartialEq> Matrix<T> {
    pub fn new(cols: usize, empty: T) -> Self {
        Matrix { cols, data: Vec::new(), empty, head: 0, filled: 0 }
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    pub fn len(&self) -> usize {
        self.filled
    }

    pub fn is_empty(&self) -> bool {
        self.filled == 0
    }

    /// Whether the ring holds what its methods assume (a snapshot read back is checked).
    pub fn well_formed(&self) -> bool {
        (self.data.is_empty() || Some(self.data.len()) == self.cols.checked_mul(HISTORY_LEN))
            && self.head < HISTORY_LEN
            && self.filled <= HISTORY_LEN
    }

    /// Whether the rows are allocated (a row was written, or a column copied in).
    pub fn allocated(&self) -> bool {
        !self.data.is_empty()
    }

    fn allocate(&mut self) {
        if self.data.is_empty() {
            self.data = vec![self.empty; self.cols * HISTORY_LEN];
        }
    }

    /// The next row to fill (the oldest is overwritten once the ring is full).
    pub fn next_row(&mut self) -> &mut [T] {
        self.allocate();
        let row = self.head;
        self.head = (self.head + 1) % HISTORY_LEN;
        self.filled = (self.filled + 1).min(HISTORY_LEN);
        &mut self.data[row * self.cols..(row + 1) * self.cols]
    }

    /// Row `k` of the filled rows, oldest first.
    fn row_index(&self, k: usize) -> usize {
        (self.head + HISTORY_LEN - self.filled + k) % HISTORY_LEN
    }

    /// The newest `n` values of `col`, oldest first, skipping `empty` markers.
    pub fn column(&self, col: usize, n: usize, empty: T) -> Vec<T> {
        if col >= self.cols || !self.allocated() {
            return Vec::new();
        }
        let take = n.min(self.filled);
        (self.filled - take..self.filled)
            .map(|k| self.data[self.row_index(k) * self.cols + col])
            .filter(|v| *v != empty)
            .collect()
    }

    /// Copies the history of `from` in `old` into column `to` of `self` (same row layout).
    pub fn copy_column(&mut self, to: usize, old: &Matrix<T>, from: usize) {
        if to >= self.cols || from >= old.cols || !old.allocated() {
            return;
        }
        self.allocate();
        for r in 0..HISTORY_LEN {
            self.data[r * self.cols + to] = old.data[r * old.cols + from];
        }
    }

    /// Takes over the ring position of `old` (after copying columns from it).
    pub fn align_with(&mut self, old: &Matrix<T>) {
        self.head = old.head;
        self.filled = old.filled;
    }
}

/// A single series (cluster-wide figures).
#[derive(Debug, Clone, Default, PartialEq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Ring<T> {
    buf: std::collections::VecDeque<T>,
}

impl<T: Copy> Ring<T> {
    pub fn push(&mut self, v: T) {
        if self.buf.len() == HISTORY_LEN {
            self.buf.pop_front();
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

    /// Replaces the newest point (or adds the first).
    pub fn set_last(&mut self, v: T) {
        match self.buf.back_mut() {
            Some(b) => *b = v,
            None => self.push(v),
        }
    }

    /// Adds a copy of the newest point (no-op when empty).
    pub fn repeat_last(&mut self) {
        if let Some(v) = self.last() {
            self.push(v);
        }
    }

    /// The newest `n` points, oldest first.
    pub fn tail(&self, n: usize) -> impl Iterator<Item = T> + '_ {
        self.buf.iter().skip(self.buf.len().saturating_sub(n)).copied()
    }
}

/// Cluster-wide series for the overview and the wall.
#[derive(Debug, Clone, Default, PartialEq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct ClusterHistory {
    pub util: Ring<u8>,
    pub power_kw: Ring<u32>,
    pub running: Ring<u32>,
    pub pending: Ring<u32>,
    pub idle_alloc: Ring<u32>,
}

/// One point of every [`ClusterHistory`] series: utilisation (when known), power (kW),
/// running and pending jobs, allocated-but-idle GPUs.
pub type ClusterPoint = (Option<u8>, u32, u32, u32, u32);

impl ClusterHistory {
    pub fn push(&mut self, (util, power_kw, running, pending, idle): ClusterPoint) {
        if let Some(u) = util {
            self.util.push(u);
        }
        self.power_kw.push(power_kw);
        self.running.push(running);
        self.pending.push(pending);
        self.idle_alloc.push(idle);
    }

    /// Replaces the newest point of every series (the last update of a step wins).
    pub fn set_last(&mut self, (util, power_kw, running, pending, idle): ClusterPoint) {
        if let Some(u) = util {
            self.util.set_last(u);
        }
        self.power_kw.set_last(power_kw);
        self.running.set_last(running);
        self.pending.set_last(pending);
        self.idle_alloc.set_last(idle);
    }

    /// Holds every series at its newest value for one more step.
    pub fn repeat_last(&mut self) {
        self.util.repeat_last();
        self.power_kw.repeat_last();
        self.running.repeat_last();
        self.pending.repeat_last();
        self.idle_alloc.repeat_last();
    }
}

/// Per-GPU and per-node series, time-major.
#[derive(Debug, Clone, Default, PartialEq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct FleetHistory {
    pub gpu_util: Matrix<u8>,
    pub gpu_temp: Matrix<u8>,
    pub node_util: Matrix<u8>,
    pub node_power_w: Matrix<u32>,
    pub node_port_errors: Matrix<u32>,
}

impl FleetHistory {
    /// Whether it has a column per node and per GPU, each ring well formed.
    pub fn fits(&self, nodes: usize, gpus: usize) -> bool {
        [&self.gpu_util, &self.gpu_temp].iter().all(|m| m.cols() == gpus && m.well_formed())
            && [&self.node_util].iter().all(|m| m.cols() == nodes && m.well_formed())
            && [&self.node_power_w, &self.node_port_errors]
                .iter()
                .all(|m| m.cols() == nodes && m.well_formed())
    }

    pub fn new(nodes: usize, gpus: usize) -> Self {
        FleetHistory {
            gpu_util: Matrix::new(gpus, NONE_U8),
            gpu_temp: Matrix::new(gpus, NONE_U8),
            node_util: Matrix::new(nodes, NONE_U8),
            node_power_w: Matrix::new(nodes, 0),
            node_port_errors: Matrix::new(nodes, 0),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct StorageHistory {
    pub read_mbps: Ring<u32>,
    pub write_mbps: Ring<u32>,
    /// (when, bytes used) at each refresh: the trend the time-to-full forecast reads.
    pub used: Ring<(crate::model::Epoch, u64)>,
}

/// The longest forecast worth showing; beyond it a filesystem is "not filling".
pub const FULL_HORIZON_S: i64 = 90 * 86_400;

impl StorageHistory {
    /// Seconds until `capacity` is reached at the fill rate of the recorded history: the slope
    /// of the least-squares line through the samples, from the last sample. `None` with too
    /// little history (under 5 samples or 30 s), when the fill is flat or falling, or when it
    /// is further off than [`FULL_HORIZON_S`] or than 100 times the history it is drawn from
    /// (a minute of history says nothing about next month).
    pub fn time_to_full(&self, capacity: u64) -> Option<i64> {
        let n = self.used.len();
        let (t0, _) = self.used.tail(n).next()?;
        let (t1, last) = self.used.last()?;
        if n < 5 || t1 - t0 < 30 {
            return None;
        }
        let mean =
            |f: &dyn Fn((crate::model::Epoch, u64)) -> f64| self.used.tail(n).map(f).sum::<f64>() / n as f64;
        let mx = mean(&|(t, _)| (t - t0) as f64);
        let my = mean(&|(_, u)| u as f64);
        let (mut sxy, mut sxx) = (0.0, 0.0);
        for (t, u) in self.used.tail(n) {
            let dx = (t - t0) as f64 - mx;
            sxy += dx * (u as f64 - my);
            sxx += dx * dx;
        }
        let slope = sxy / sxx; // bytes per second
        // Flat, falling, or NaN (no spread in time): no forecast.
        if slope.is_nan() || slope <= 0.0 {
            return None;
        }
        let secs = (capacity.saturating_sub(last) as f64 / slope).round();
        (secs <= FULL_HORIZON_S.min(100 * (t1 - t0)) as f64).then_some(secs as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filling(points: &[(i64, u64)]) -> StorageHistory {
        let mut h = StorageHistory::default();
        for &p in points {
            h.used.push(p);
        }
        h
    }

    /// The rows are allocated by the first write or copy, never before: a cluster without
    /// telemetry holds none; once written, a column reads back what was written.
    #[test]
    fn a_matrix_allocates_its_rows_when_first_written() {
        let mut m = Matrix::new(40_000, NONE_U8);
        assert!(!m.allocated());
        assert!(m.column(3, 10, NONE_U8).is_empty());
        let mut copy = Matrix::new(40_000, NONE_U8);
        copy.copy_column(0, &m, 3);
        assert!(!copy.allocated(), "copying from rows never written allocates nothing");
        m.next_row()[3] = 42;
        m.next_row()[3] = 43;
        assert!(m.allocated());
        assert_eq!(m.column(3, 10, NONE_U8), vec![42, 43]);
        assert!(m.column(4, 10, NONE_U8).is_empty(), "a column never written has no values");
        copy.copy_column(0, &m, 3);
        copy.align_with(&m);
        assert_eq!(copy.column(0, 10, NONE_U8), vec![42, 43]);
    }

    #[test]
    fn time_to_full_follows_the_trend() {
        // 1 GB a minute with noise, 60 GB left: about an hour.
        let pts: Vec<(i64, u64)> = (0..20)
            .map(|k| (k * 60, 900_000_000_000 + k as u64 * 1_000_000_000 + (k as u64 % 3) * 50_000_000))
            .collect();
        let left = 1_000_000_000_000 - pts.last().unwrap().1;
        let secs = filling(&pts).time_to_full(1_000_000_000_000).expect("filling");
        let want = left as f64 / 1e9 * 60.0;
        assert!((secs as f64 - want).abs() < want * 0.05, "{secs} vs {want}");
        // Falling, flat, too little history, or too far off: no forecast.
        let falling: Vec<_> = pts.iter().rev().enumerate().map(|(i, &(_, u))| (i as i64 * 60, u)).collect();
        assert_eq!(filling(&falling).time_to_full(1_000_000_000_000), None);
        assert_eq!(filling(&[(0, 5), (60, 5), (120, 5), (180, 5), (240, 5)]).time_to_full(10), None);
        assert_eq!(filling(&pts[..4]).time_to_full(1_000_000_000_000), None);
        assert_eq!(
            filling(&[(0, 0), (2, 1), (4, 2), (6, 3), (8, 4)]).time_to_full(100),
            None,
            "8 s of history"
        );
        assert_eq!(filling(&pts).time_to_full(u64::MAX), None, "beyond the horizon");
        let slow: Vec<_> = (0..20).map(|k| (k * 60, 1_000 + k as u64)).collect();
        // A byte a minute: 3,000 bytes left is 50 hours, over 100 times the 19 minutes seen.
        assert_eq!(filling(&slow).time_to_full(1_019 + 3_000), None, "19 minutes say little of next week");
        assert_eq!(filling(&slow).time_to_full(1_019 + 1_000), Some(60_000));
        // Already full: now.
        let full: Vec<_> = (0..6).map(|k| (k * 60, 90 + k as u64 * 2)).collect();
        assert_eq!(filling(&full).time_to_full(100), Some(0));
    }

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

    #[test]
    fn matrix_columns_wrap_and_skip_missing_values() {
        let mut m = Matrix::new(3, NONE_U8);
        for t in 0..(HISTORY_LEN + 5) {
            let row = m.next_row();
            row[0] = (t % 200) as u8;
            row[1] = if t % 2 == 0 { NONE_U8 } else { 1 };
            row[2] = 7;
        }
        assert_eq!(m.len(), HISTORY_LEN);
        let last: Vec<u8> = m.column(0, 3, NONE_U8);
        assert_eq!(last, vec![122, 123, 124]);
        assert_eq!(m.column(1, 4, NONE_U8), vec![1, 1]);
        assert_eq!(m.column(2, 1000, NONE_U8).len(), HISTORY_LEN);
        assert!(m.column(9, 3, NONE_U8).is_empty());
    }

    #[test]
    fn columns_move_with_their_owner() {
        let mut old = Matrix::new(2, 0u32);
        for t in 1..=5 {
            let r = old.next_row();
            r[0] = t;
            r[1] = 10 * t;
        }
        let mut new = Matrix::new(3, 0u32);
        new.copy_column(2, &old, 1);
        new.align_with(&old);
        assert_eq!(new.column(2, 10, 0), vec![10, 20, 30, 40, 50]);
        assert!(new.column(0, 10, 0).is_empty());
    }
}
