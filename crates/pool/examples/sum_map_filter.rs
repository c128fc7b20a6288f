//! Sum, map and filter over 10 million `f64` values with parallel iterators, no chunk size
//! anywhere; each result checked against the serial computation.
//!
//! `cargo run --release -p coretune-pool --example sum_map_filter`

use coretune_pool::prelude::*;
use std::time::Instant;

fn main() {
    let n = 10_000_000;
    let values: Vec<f64> = (0..n).map(|i| f64::from(i % 1000) * 0.5).collect();

    let start = Instant::now();
    let sum_of_squares: f64 = values.par_iter().map(|x| x * x).sum();
    let roots: Vec<f64> = values.par_iter().map(|x| x.sqrt()).collect();
    let large: Vec<f64> = values.par_iter().copied().filter(|x| *x > 400.0).collect();
    let large_count = values.par_iter().filter(|x| **x > 400.0).count();
    let elapsed = start.elapsed();

    let serial_sum: f64 = values.iter().map(|x| x * x).sum();
    assert!(
        (sum_of_squares - serial_sum).abs() <= serial_sum * 1e-12,
        "{sum_of_squares} against {serial_sum}"
    );
    assert!(roots.iter().zip(&values).all(|(r, x)| *r == x.sqrt()));
    let serial_large: Vec<f64> = values.iter().copied().filter(|x| *x > 400.0).collect();
    assert_eq!(large, serial_large);
    assert_eq!(large_count, serial_large.len());
    println!(
        "{n} values on {} threads: sum of squares {sum_of_squares:.1}, {large_count} above 400, in {elapsed:?}",
        coretune_pool::current_num_threads()
    );
}
