//! A merge sort written with `join` alone (the halves sorted in parallel, merged through a
//! buffer), no chunk size but the size below which a piece is sorted serially; checked
//! against `slice::sort`.
//!
//! `cargo run --release -p coretune-pool --example merge_sort`

use std::time::Instant;

/// Below this many elements a piece is sorted serially.
const SERIAL: usize = 2048;

/// Sorts `v` using `buffer` (as long as `v`) as scratch space.
fn merge_sort(v: &mut [u64], buffer: &mut [u64]) {
    if v.len() <= SERIAL {
        v.sort_unstable();
        return;
    }
    let mid = v.len() / 2;
    {
        let (left, right) = v.split_at_mut(mid);
        let (left_buffer, right_buffer) = buffer.split_at_mut(mid);
        coretune_pool::join(
            || merge_sort(left, left_buffer),
            || merge_sort(right, right_buffer),
        );
    }
    merge(&v[..mid], &v[mid..], buffer);
    v.copy_from_slice(buffer);
}

/// Merges the sorted `left` and `right` into `out`.
fn merge(left: &[u64], right: &[u64], out: &mut [u64]) {
    let (mut i, mut j) = (0, 0);
    for slot in out.iter_mut() {
        if j == right.len() || (i < left.len() && left[i] <= right[j]) {
            *slot = left[i];
            i += 1;
        } else {
            *slot = right[j];
            j += 1;
        }
    }
}

fn main() {
    let n = 5_000_000;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut values: Vec<u64> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % 1_000_000
        })
        .collect();
    let mut expected = values.clone();
    expected.sort_unstable();

    let mut buffer = vec![0; values.len()];
    let start = Instant::now();
    merge_sort(&mut values, &mut buffer);
    let elapsed = start.elapsed();
    assert_eq!(values, expected);
    println!(
        "{n} values sorted on {} threads in {elapsed:?}",
        coretune_pool::current_num_threads()
    );
}
