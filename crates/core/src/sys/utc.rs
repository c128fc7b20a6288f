//! Wall-clock time as a UTC calendar date and time, for folder names and log lines (standard
//! library only, every OS).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The time since the Unix epoch (zero should the clock be set before 1970).
pub(crate) fn since_epoch() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// `time` (since the Unix epoch) as UTC `YYYY-MM-DDTHH:MM:SS`, `sep` between the time's fields
/// (`:` as RFC 3339 writes them; `-` in a folder name, since Windows refuses `:` there), with
/// `.mmm` milliseconds when `millis`.
pub(crate) fn utc_text(time: Duration, sep: char, millis: bool) -> String {
    let unix = time.as_secs();
    let (y, m, d) = civil_date(unix);
    let s = unix % 86_400;
    let mut text = format!(
        "{y:04}-{m:02}-{d:02}T{:02}{sep}{:02}{sep}{:02}",
        s / 3600,
        s % 3600 / 60,
        s % 60
    );
    if millis {
        text.push_str(&format!(".{:03}", time.subsec_millis()));
    }
    text
}

/// The UTC date (year, month, day) of a Unix time (Hinnant's `civil_from_days`).
fn civil_date(unix: u64) -> (i64, i64, i64) {
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
        let t = Duration::from_millis(1_795_298_295_042);
        assert_eq!(utc_text(t, ':', true), "2026-11-21T21:58:15.042");
        assert_eq!(utc_text(t, '-', false), "2026-11-21T21-58-15");
    }
}
