//! Times as the operator reads them: in the display zone (the local one from `TZ` or
//! `/etc/localtime`, or UTC when `--utc` / `utc = true` forces it) with the zone named
//! (`14:25 EST`), and relative where it helps (`in 5h42m`, `2h05m ago`). Every time the
//! console, `get` and the acceptance report show goes through here; what is stored (the audit
//! log, JSON epochs) stays UTC.
//!
//! The display zone is process-wide (like `TZ` itself), set once at start-up by
//! [`set_zone`]. A thread may pin its own with [`pin_zone`]: tests render on their own thread
//! in a fixed zone whatever the machine's and whatever other tests pin.

use crate::model::Epoch;
use jiff::Timestamp;
use jiff::tz::TimeZone;
use std::cell::RefCell;
use std::sync::RwLock;

static ZONE: RwLock<Option<TimeZone>> = RwLock::new(None);

thread_local! {
    static PINNED: RefCell<Option<TimeZone>> = const { RefCell::new(None) };
}

/// The zone to show times in: UTC when `utc`, else the system's (`TZ`, then
/// `/etc/localtime`), else UTC when the system's cannot be read.
pub fn local_or_utc(utc: bool) -> TimeZone {
    if utc {
        return TimeZone::UTC;
    }
    TimeZone::try_system().unwrap_or(TimeZone::UTC)
}

/// Sets the display zone of the process (at start-up, from `--utc` / the config).
pub fn set_zone(tz: TimeZone) {
    match ZONE.write() {
        Ok(mut z) => *z = Some(tz),
        Err(poisoned) => *poisoned.into_inner() = Some(tz),
    }
}

/// Pins the display zone of the calling thread (tests: deterministic snapshots, a zone per
/// test); `None` unpins it.
pub fn pin_zone(tz: Option<TimeZone>) {
    PINNED.with(|p| *p.borrow_mut() = tz);
}

/// The display zone: this thread's pin, else the process's, else the system's.
pub fn zone() -> TimeZone {
    if let Some(tz) = PINNED.with(|p| p.borrow().clone()) {
        return tz;
    }
    let set = match ZONE.read() {
        Ok(z) => z.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    };
    set.unwrap_or_else(|| local_or_utc(false))
}

fn zoned(at: Epoch) -> Option<jiff::Zoned> {
    Timestamp::from_second(at).ok().map(|t| t.to_zoned(zone()))
}

/// The zone's name as shown: its abbreviation (`EST`, `IST`, `UTC`), or the offset when it
/// has none.
fn abbr(z: &jiff::Zoned) -> String {
    let a = z.strftime("%Z").to_string();
    if a.is_empty() { z.strftime("%:z").to_string() } else { a }
}

/// `2026-01-01 14:25 EST`.
pub fn stamp(at: Epoch) -> String {
    zoned(at).map_or_else(|| "-".into(), |z| format!("{} {}", z.strftime("%Y-%m-%d %H:%M"), abbr(&z)))
}

/// `2026-01-01 14:25:07 EST`, for records (the audit log) where seconds matter.
pub fn stamp_secs(at: Timestamp) -> String {
    let z = at.to_zoned(zone());
    format!("{} {}", z.strftime("%Y-%m-%d %H:%M:%S"), abbr(&z))
}

/// An RFC 3339 time as written in a record (the audit log keeps UTC), shown as
/// [`stamp_secs`]; `None` when it does not parse.
pub fn record_time(rfc3339: &str) -> Option<String> {
    rfc3339.parse::<Timestamp>().ok().map(stamp_secs)
}

/// The time of day when `at` falls on the same local day as `now` (`14:25 EST`), with the date
/// otherwise (`Jan 02 14:25 EST`, and the year when it is another year).
pub fn clock(now: Epoch, at: Epoch) -> String {
    let (Some(z), Some(n)) = (zoned(at), zoned(now)) else { return "-".into() };
    let fmt = if z.date() == n.date() {
        "%H:%M"
    } else if z.year() == n.year() {
        "%b %d %H:%M"
    } else {
        "%Y-%m-%d %H:%M"
    };
    format!("{} {}", z.strftime(fmt), abbr(&z))
}

/// `in 5h42m`, `2h05m ago`, `now` (within a minute either way).
pub fn relative(now: Epoch, at: Epoch) -> String {
    let d = at - now;
    if d.abs() < 60 {
        "now".into()
    } else if d > 0 {
        format!("in {}", dur(d))
    } else {
        format!("{} ago", dur(-d))
    }
}

/// `14:25 EST (in 5h42m)`.
pub fn clock_rel(now: Epoch, at: Epoch) -> String {
    format!("{} ({})", clock(now, at), relative(now, at))
}

/// `2026-01-01 14:25 EST (2h05m ago)`.
pub fn stamp_rel(now: Epoch, at: Epoch) -> String {
    format!("{} ({})", stamp(at), relative(now, at))
}

/// `93s` → `1m33s`, `90000` → `1d1h`: the two most significant units.
pub fn dur(secs: i64) -> String {
    let s = secs.max(0);
    let (d, h, m, sec) = (s / 86_400, (s % 86_400) / 3_600, (s % 3_600) / 60, s % 60);
    if d > 0 {
        format!("{d}d{h}h")
    } else if h > 0 {
        format!("{h}h{m:02}m")
    } else if m > 0 {
        format!("{m}m{sec:02}s")
    } else {
        format!("{sec}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-01-15 19:25:00 UTC.
    const AT: Epoch = 1_768_505_100;

    fn tz(name: &str) -> TimeZone {
        TimeZone::get(name).unwrap_or_else(|e| panic!("{name}: {e} (is the tzdb installed?)"))
    }

    #[test]
    fn times_carry_the_zone_and_its_offset() {
        pin_zone(Some(TimeZone::UTC));
        assert_eq!(stamp(AT), "2026-01-15 19:25 UTC");
        assert_eq!(clock(AT, AT), "19:25 UTC");
        pin_zone(Some(tz("America/New_York")));
        assert_eq!(stamp(AT), "2026-01-15 14:25 EST");
        assert_eq!(clock(AT, AT), "14:25 EST");
        // Summer time: the same zone, the other offset and name.
        assert_eq!(stamp(AT + 182 * 86_400), "2026-07-16 15:25 EDT");
        pin_zone(Some(tz("Asia/Kolkata")));
        assert_eq!(stamp(AT), "2026-01-16 00:55 IST");
        assert_eq!(stamp_secs(Timestamp::from_second(AT + 7).unwrap()), "2026-01-16 00:55:07 IST");
        // The audit log's UTC, read back in the display zone.
        assert_eq!(record_time("2026-01-15T19:25:07.123456Z").as_deref(), Some("2026-01-16 00:55:07 IST"));
        assert_eq!(record_time("yesterday"), None);
        pin_zone(None);
    }

    #[test]
    fn the_day_is_the_local_one() {
        // 19:25 UTC on the 15th is 00:55 on the 16th in Kolkata: the same local day as
        // 01:00 IST on the 16th, another day than 23:00 IST on the 15th.
        pin_zone(Some(tz("Asia/Kolkata")));
        assert_eq!(clock(AT + 300, AT), "00:55 IST");
        assert_eq!(clock(AT - 7_200, AT), "Jan 16 00:55 IST");
        assert_eq!(clock(AT + 400 * 86_400, AT), "2026-01-16 00:55 IST");
        pin_zone(Some(TimeZone::UTC));
        assert_eq!(clock(AT - 7_200, AT), "19:25 UTC");
        pin_zone(None);
    }

    #[test]
    fn relative_times() {
        assert_eq!(relative(AT, AT + 5 * 3600 + 42 * 60), "in 5h42m");
        assert_eq!(relative(AT, AT - 2 * 3600 - 300), "2h05m ago");
        assert_eq!(relative(AT, AT + 30), "now");
        pin_zone(Some(tz("America/New_York")));
        assert_eq!(clock_rel(AT, AT + 47 * 60), "15:12 EST (in 47m00s)");
        assert_eq!(stamp_rel(AT, AT - 7_200), "2026-01-15 12:25 EST (2h00m ago)");
        pin_zone(None);
    }

    #[test]
    fn a_pin_is_per_thread_and_the_process_zone_is_the_fallback() {
        pin_zone(Some(tz("Asia/Kolkata")));
        let other = std::thread::spawn(|| {
            pin_zone(Some(TimeZone::UTC));
            stamp(AT)
        });
        assert_eq!(other.join().unwrap(), "2026-01-15 19:25 UTC");
        assert_eq!(stamp(AT), "2026-01-16 00:55 IST");
        pin_zone(None);
        assert_eq!(local_or_utc(true), TimeZone::UTC);
    }

    #[test]
    fn durations() {
        assert_eq!(dur(93), "1m33s");
        assert_eq!(dur(90_000), "1d1h");
        assert_eq!(dur(3_720), "1h02m");
        assert_eq!(dur(-5), "0s");
    }
}

/// An instant an operator typed (`--at`, `:at`), as seconds since the epoch: an RFC 3339 time
/// (`2026-12-04T02:10:00Z`), a date and time in the shown zone (`2026-12-04 02:10`, seconds
/// optional), a time of day on `reference`'s day in that zone (`02:10`), or an offset from
/// `reference` (`-1h30m`, `+10m`).
pub fn parse_instant(s: &str, reference: Epoch) -> Result<Epoch, String> {
    let s = s.trim();
    let what = || {
        format!(
            "{s:?} is not an instant: give 2026-12-04T02:10:00Z, \"2026-12-04 02:10\", 02:10 (that day) or \
             -1h30m / +10m"
        )
    };
    if let Some((sign, d)) =
        s.strip_prefix('-').map(|d| (-1, d)).or_else(|| s.strip_prefix('+').map(|d| (1, d)))
    {
        let d = humantime::parse_duration(d.trim()).map_err(|_| what())?;
        return Ok(reference.saturating_add(sign * d.as_secs() as i64));
    }
    if let Ok(t) = s.parse::<Timestamp>() {
        return Ok(t.as_second());
    }
    let tz = zone();
    let local = |dt: jiff::civil::DateTime| dt.to_zoned(tz.clone()).map(|z| z.timestamp().as_second()).ok();
    if let Ok(dt) = s.replacen(' ', "T", 1).parse::<jiff::civil::DateTime>() {
        return local(dt).ok_or_else(what);
    }
    if let Ok(t) = s.parse::<jiff::civil::Time>() {
        let day = Timestamp::from_second(reference).map_err(|_| what())?.to_zoned(tz.clone()).date();
        return local(day.to_datetime(t)).ok_or_else(what);
    }
    Err(what())
}

#[cfg(test)]
mod instant_tests {
    use super::*;

    #[test]
    fn instants_in_every_form_an_operator_types() {
        pin_zone(Some(TimeZone::UTC));
        let reference = "2026-12-04T09:30:00Z".parse::<Timestamp>().unwrap().as_second();
        let at = |s: &str| parse_instant(s, reference);
        let t0210 = "2026-12-04T02:10:00Z".parse::<Timestamp>().unwrap().as_second();
        assert_eq!(at("2026-12-04T02:10:00Z"), Ok(t0210));
        assert_eq!(at("2026-12-04 02:10"), Ok(t0210));
        assert_eq!(at("2026-12-04 02:10:00"), Ok(t0210));
        assert_eq!(at("02:10"), Ok(t0210));
        assert_eq!(at("-7h20m"), Ok(t0210));
        assert_eq!(at("+10m"), Ok(reference + 600));
        assert!(at("yesterday").unwrap_err().contains("is not an instant"));
        pin_zone(None);
    }
}
