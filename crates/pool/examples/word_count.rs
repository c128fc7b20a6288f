//! A word count over a few megabytes of generated text: lines counted in parallel into one
//! `HashMap` per piece of work (`fold`), the maps merged (`reduce`); checked against a
//! serial count.
//!
//! `cargo run --release -p coretune-pool --example word_count`

use coretune_pool::prelude::*;
use std::collections::HashMap;
use std::time::Instant;

const WORDS: [&str; 16] = [
    "pool", "thread", "worker", "steal", "join", "scope", "place", "core", "cache", "numa",
    "socket", "throttle", "permit", "latch", "sleep", "wake",
];

/// About `bytes` of text: lines of 5 to 15 words drawn by a xorshift generator.
fn text(bytes: usize) -> String {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = String::with_capacity(bytes + 100);
    while out.len() < bytes {
        let words = 5 + next() % 11;
        for i in 0..words {
            if i > 0 {
                out.push(' ');
            }
            out.push_str(WORDS[(next() % 16) as usize]);
        }
        out.push('\n');
    }
    out
}

/// Adds the counts of `b` into `a`.
fn merge<'a>(
    mut a: HashMap<&'a str, usize>,
    b: HashMap<&'a str, usize>,
) -> HashMap<&'a str, usize> {
    for (word, n) in b {
        *a.entry(word).or_insert(0) += n;
    }
    a
}

fn main() {
    let text = text(4 << 20);
    let lines: Vec<&str> = text.lines().collect();

    let start = Instant::now();
    let counts = lines
        .par_iter()
        .fold(HashMap::new, |mut counts, line| {
            for word in line.split_whitespace() {
                *counts.entry(word).or_insert(0) += 1;
            }
            counts
        })
        .reduce(HashMap::new, merge);
    let elapsed = start.elapsed();

    let mut serial: HashMap<&str, usize> = HashMap::new();
    for word in text.split_whitespace() {
        *serial.entry(word).or_insert(0) += 1;
    }
    assert_eq!(counts, serial);
    let total: usize = counts.values().sum();
    println!(
        "{} bytes, {} lines, {total} words ({} distinct) counted on {} threads in {elapsed:?}",
        text.len(),
        lines.len(),
        counts.len(),
        coretune_pool::current_num_threads()
    );
}
