//! Waits between retries, shared by the backends: exponential backoff (the delays of `backon`'s
//! [`ExponentialBuilder`]) with symmetric jitter, and the jittered refresh period.
//!
//! `backon`'s own jitter only adds (up to the whole delay again), so the ± jitter the backends
//! have always used is applied here on top of its un-jittered delays.

use backon::{BackoffBuilder, ExponentialBuilder};
use std::time::Duration;

/// The delays after consecutive failures: `first`, doubling up to `max`, each jittered by
/// ±`jitter` (a fraction of the delay); [`Backoff::reset`] after a success.
#[derive(Debug)]
pub struct Backoff {
    builder: ExponentialBuilder,
    delays: <ExponentialBuilder as BackoffBuilder>::Backoff,
    max: Duration,
    jitter: f64,
    rng: fastrand::Rng,
}

impl Backoff {
    /// `first` is capped at `max` too.
    pub fn new(first: Duration, max: Duration, jitter: f64) -> Backoff {
        let builder = ExponentialBuilder::new()
            .with_min_delay(first.min(max))
            .with_max_delay(max)
            .with_factor(2.0)
            .without_max_times();
        Backoff { builder, delays: builder.build(), max, jitter, rng: fastrand::Rng::new() }
    }

    /// The same, with the jitter drawn from a seeded generator (for tests).
    pub fn with_seed(mut self, seed: u64) -> Backoff {
        self.rng = fastrand::Rng::with_seed(seed);
        self
    }

    /// The wait after one more failure.
    pub fn next_delay(&mut self) -> Duration {
        // Without a limit on the number of retries the delays never run out.
        let d = self.delays.next().unwrap_or(self.max);
        spread(d, self.jitter, &mut self.rng)
    }

    /// After a success: the next failure waits `first` again.
    pub fn reset(&mut self) {
        self.delays = self.builder.build();
    }
}

/// `d` ± `frac` of it, drawn uniformly (a refresh period, so that many consoles do not ask at
/// the same moment).
pub fn jitter(d: Duration, frac: f64) -> Duration {
    d.mul_f64(1.0 - frac + 2.0 * frac * fastrand::f64())
}

fn spread(d: Duration, frac: f64, rng: &mut fastrand::Rng) -> Duration {
    if frac == 0.0 {
        return d;
    }
    d.mul_f64(1.0 - frac + 2.0 * frac * rng.f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn doubles_to_the_cap_and_starts_again_after_a_success() {
        // The Kubernetes reconnect: 0.5 s doubling to 30 s, no jitter.
        let mut b = Backoff::new(ms(500), Duration::from_secs(30), 0.0);
        let got: Vec<Duration> = (0..9).map(|_| b.next_delay()).collect();
        let want = [500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000].map(ms);
        assert_eq!(got, want);
        b.reset();
        assert_eq!(b.next_delay(), ms(500));
        assert_eq!(b.next_delay(), ms(1000));
    }

    #[test]
    fn jitter_stays_within_its_fraction() {
        // Slurm: 2 s doubling to 5 min, ±20 %.
        let mut b = Backoff::new(Duration::from_secs(2), Duration::from_secs(300), 0.2).with_seed(7);
        let bases = [2u64, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300];
        for base in bases {
            let d = b.next_delay().as_secs_f64();
            let base = base as f64;
            assert!(d >= base * 0.8 && d <= base * 1.2, "{d} for {base}");
        }
        for _ in 0..1000 {
            let d = jitter(Duration::from_secs(10), 0.1).as_secs_f64();
            assert!((9.0..=11.0).contains(&d), "{d}");
        }
    }

    #[test]
    fn the_first_delay_is_capped_too() {
        let mut b = Backoff::new(Duration::from_secs(400), Duration::from_secs(300), 0.0);
        assert_eq!(b.next_delay(), Duration::from_secs(300));
        assert_eq!(b.next_delay(), Duration::from_secs(300));
    }
}
