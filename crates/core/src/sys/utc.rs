//! Wall-clock time as a UTC calendar date and time, for folder names and log lines (standard
//! library only, every OS).

use std::time::{SystemTime, UNIX_EPOCH};

/// The current Unix time, in whole seconds (0 should the clock be set before 1970).
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The UTC date (year, month, day) of a Unix time (Hinnant's `civil_from_days`).
pub(crate) fn civil_date(unix: u64) -> (i64, i64, i64) {
    let days = i64::try_from(unix / 86_400).unwrap_or(0);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn civil_dates_are_utc() {
        assert_eq!(civil_date(0), (1970, 1, 1));
        // 2026-11-21 21:58:15 UTC
        assert_eq!(civil_date(1_795_298_295), (2026, 11, 21));
        // A leap day.
        assert_eq!(civil_date(951_782_400), (2000, 2, 29));
    }
}
