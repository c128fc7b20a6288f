//! Chunks, zip and enumerate: a blocked operation on two arrays (each output block is its
//! input block scaled and offset by the block's index), and the chunk sums of the result;
//! checked against a serial computation. The chunk length is the blocks' size, part of the
//! problem, not a tuning knob: the pool splits the blocks among its threads by itself.
//!
//! `cargo run --release -p coretune-pool --example chunks_zip_enumerate`

use coretune_pool::prelude::*;
use std::time::Instant;

/// Elements per block.
const BLOCK: usize = 4096;

fn main() {
    let n = 8_000_000 + 123;
    let input: Vec<f64> = (0..n).map(|i| (i % 977) as f64).collect();
    let mut output = vec![0.0; n];

    let start = Instant::now();
    output
        .par_chunks_mut(BLOCK)
        .zip(input.par_chunks(BLOCK))
        .enumerate()
        .for_each(|(block, (out, inp))| {
            for (o, x) in out.iter_mut().zip(inp) {
                *o = x * 2.0 + block as f64;
            }
        });
    let block_sums: Vec<f64> = output.par_chunks(BLOCK).map(|c| c.iter().sum()).collect();
    let elapsed = start.elapsed();

    let expected: Vec<f64> = input
        .iter()
        .enumerate()
        .map(|(i, x)| x * 2.0 + (i / BLOCK) as f64)
        .collect();
    assert_eq!(output, expected);
    let expected_sums: Vec<f64> = expected.chunks(BLOCK).map(|c| c.iter().sum()).collect();
    assert_eq!(block_sums, expected_sums);
    println!(
        "{n} elements in {} blocks on {} threads in {elapsed:?}",
        block_sums.len(),
        coretune_pool::current_num_threads()
    );
}
