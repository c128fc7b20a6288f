//! Summary statistics of repeated measurements.
//!
//! Floats are ordered with `f64::total_cmp`, so a NaN (which no measurement should produce) sorts
//! last instead of poisoning the order.

/// The median: the middle value, or the mean of the two middle values of an even count
/// (the usual definition, e.g. Hyndman & Fan 1996 type 7 at p = 0.5). `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn median_by_hand() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }
}
