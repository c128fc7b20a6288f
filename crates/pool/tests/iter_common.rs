// A program written against rayon: `tests/iter.rs` includes this file twice, once after
// `use rayon::prelude::*;` and `use rayon::{...}`, once after the same lines naming
// coretune_pool, and checks that both copies build and print the same results. It uses
// only what both crates offer (no `enumerate`/`zip` on `u64`/`i64` ranges, which rayon
// does not index), and integers only (a float sum depends on how the work was split).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Lengths around the edges: empty, one, fewer and more than the threads, not a multiple
/// of any thread count, large enough to be split many times.
pub(crate) const LENGTHS: [usize; 9] = [0, 1, 2, 3, 5, 17, 1000, 4099, 100_003];

/// Every operation on inputs of `len` items, each result on one line.
pub(crate) fn program(len: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut say = |name: &str, value: String| out.push(format!("{len} {name}: {value}"));
    let values: Vec<u64> = (0..len as u64).map(|i| (i * 7919) % 1009).collect();
    let words: Vec<String> = (0..len).map(|i| format!("w{}", i % 13)).collect();

    // Sources.
    let array = [3u64, 1, 4, 1, 5, 9, 2, 6];
    say(
        "array par_iter",
        format!(
            "{}",
            array.par_iter().map(|x| x * len as u64).sum::<u64>()
        ),
    );
    say(
        "par_iter sum",
        format!("{}", values.par_iter().sum::<u64>()),
    );
    say(
        "par_iter map collect",
        format!(
            "{:?}",
            values.par_iter().map(|x| x * 3).collect::<Vec<u64>>()
        ),
    );
    let mut doubled = values.clone();
    doubled.par_iter_mut().for_each(|x| *x *= 2);
    say("par_iter_mut", format!("{doubled:?}"));
    say(
        "into_par_iter vec",
        format!(
            "{:?}",
            words
                .clone()
                .into_par_iter()
                .map(|w| w.len())
                .collect::<Vec<usize>>()
        ),
    );
    say(
        "range usize",
        format!(
            "{:?}",
            (0..len)
                .into_par_iter()
                .map(|i| i * i)
                .collect::<Vec<usize>>()
        ),
    );
    say(
        "range u32",
        format!(
            "{}",
            (0..len as u32).into_par_iter().map(u64::from).sum::<u64>()
        ),
    );
    say(
        "range u64",
        format!(
            "{:?}",
            (0..len as u64)
                .into_par_iter()
                .filter(|x| x % 7 == 3)
                .collect::<Vec<u64>>()
        ),
    );
    say(
        "range i32",
        format!(
            "{}",
            (-(len as i32)..len as i32)
                .into_par_iter()
                .map(i64::from)
                .sum::<i64>()
        ),
    );
    say(
        "range i64",
        format!("{}", (-(len as i64)..3).into_par_iter().count()),
    );
    say(
        "inclusive usize",
        format!("{}", (0..=len).into_par_iter().sum::<usize>()),
    );
    say(
        "inclusive u32",
        format!(
            "{:?}",
            (1..=len as u32).into_par_iter().collect::<Vec<u32>>()
        ),
    );
    say(
        "inclusive i64",
        format!(
            "{}",
            (-(len as i64)..=0)
                .into_par_iter()
                .map(|x| x * x)
                .sum::<i64>()
        ),
    );
    say(
        "reversed range",
        format!("{:?}", (len..0).into_par_iter().collect::<Vec<usize>>()),
    );
    say(
        "par_chunks",
        format!(
            "{:?}",
            values
                .par_chunks(7)
                .map(|c| c.iter().sum::<u64>())
                .collect::<Vec<u64>>()
        ),
    );
    let mut chunked = values.clone();
    chunked.par_chunks_mut(5).for_each(|c| c.reverse());
    say("par_chunks_mut", format!("{chunked:?}"));

    // Adaptors.
    say(
        "filter",
        format!(
            "{:?}",
            values
                .par_iter()
                .filter(|x| *x % 3 == 0)
                .collect::<Vec<&u64>>()
        ),
    );
    say(
        "filter_map",
        format!(
            "{:?}",
            words
                .par_iter()
                .filter_map(|w| w[1..].parse::<u32>().ok().filter(|n| n % 2 == 0))
                .collect::<Vec<u32>>()
        ),
    );
    say(
        "flat_map",
        format!(
            "{:?}",
            (0..len.min(300))
                .into_par_iter()
                .flat_map(|i| (0..i % 4).into_par_iter().map(move |j| i * 10 + j))
                .collect::<Vec<usize>>()
        ),
    );
    say(
        "flat_map_iter",
        format!(
            "{:?}",
            words
                .par_iter()
                .flat_map_iter(|w| w.chars())
                .collect::<String>()
        ),
    );
    say(
        "enumerate",
        format!(
            "{:?}",
            values
                .par_iter()
                .enumerate()
                .filter(|(i, x)| (*i as u64 + **x) % 5 == 0)
                .map(|(i, _)| i)
                .collect::<Vec<usize>>()
        ),
    );
    say(
        "chunks enumerate",
        format!(
            "{:?}",
            values
                .par_chunks(3)
                .enumerate()
                .map(|(i, c)| (i, c.len(), c.first().copied()))
                .collect::<Vec<_>>()
        ),
    );
    let shorter: Vec<u64> = values.iter().take(len / 2 + 1).copied().collect();
    say(
        "zip unequal",
        format!(
            "{:?}",
            values
                .par_iter()
                .zip(&shorter)
                .map(|(a, b)| a * b)
                .collect::<Vec<u64>>()
        ),
    );
    say(
        "zip owned",
        format!(
            "{:?}",
            words
                .clone()
                .into_par_iter()
                .zip(0..len)
                .map(|(w, i)| format!("{w}{i}"))
                .collect::<Vec<String>>()
        ),
    );
    say(
        "zip enumerate",
        format!(
            "{:?}",
            (0..len)
                .into_par_iter()
                .zip(values.par_iter())
                .enumerate()
                .map(|(i, (j, x))| i + j + *x as usize)
                .collect::<Vec<usize>>()
        ),
    );
    say(
        "copied",
        format!("{}", values.par_iter().copied().max().unwrap_or(0)),
    );
    say(
        "cloned",
        format!("{:?}", words.par_iter().cloned().collect::<Vec<String>>()),
    );

    // Terminals.
    say(
        "reduce",
        format!(
            "{}",
            values
                .par_iter()
                .map(|x| x + 1)
                .reduce(|| 0, |a, b| a.max(b))
        ),
    );
    say(
        "reduce order",
        words
            .par_iter()
            .map(|w| w.clone())
            .reduce(String::new, |a, b| a + &b),
    );
    say(
        "reduce_with",
        format!(
            "{:?}",
            words
                .par_iter()
                .map(|w| w.clone())
                .reduce_with(|a, b| a + &b)
        ),
    );
    say(
        "product",
        format!(
            "{}",
            (1..=len.min(20) as u64).into_par_iter().product::<u64>()
        ),
    );
    say(
        "count",
        format!("{}", values.par_iter().filter(|x| **x > 500).count()),
    );
    let pairs: Vec<(u64, usize)> = values
        .iter()
        .enumerate()
        .map(|(i, x)| (x % 10, i))
        .collect();
    say("min", format!("{:?}", values.par_iter().min()));
    say("max", format!("{:?}", values.par_iter().max()));
    say(
        "min_by_key first of equal",
        format!("{:?}", pairs.par_iter().min_by_key(|p| p.0)),
    );
    say(
        "max_by_key last of equal",
        format!("{:?}", pairs.par_iter().max_by_key(|p| p.0)),
    );
    say(
        "min_by",
        format!("{:?}", pairs.par_iter().min_by(|a, b| a.0.cmp(&b.0))),
    );
    say(
        "max_by",
        format!("{:?}", pairs.par_iter().max_by(|a, b| a.0.cmp(&b.0))),
    );
    say(
        "any",
        format!(
            "{} {}",
            values.par_iter().any(|x| *x == 1008),
            values.par_iter().any(|x| *x > 2000)
        ),
    );
    say(
        "all",
        format!(
            "{} {}",
            values.par_iter().all(|x| *x < 1009),
            values.par_iter().all(|x| *x > 0)
        ),
    );
    let found = values.par_iter().find_any(|x| **x % 100 == 7);
    say(
        "find_any",
        format!("{} {}", found.is_some(), found.is_none_or(|x| x % 100 == 7)),
    );
    let counts = words
        .par_iter()
        .fold(HashMap::new, |mut map: HashMap<&str, usize>, w| {
            *map.entry(w.as_str()).or_insert(0) += 1;
            map
        })
        .reduce(HashMap::new, |mut a, b| {
            for (w, n) in b {
                *a.entry(w).or_insert(0) += n;
            }
            a
        });
    say(
        "fold reduce",
        format!("{:?}", counts.into_iter().collect::<BTreeMap<_, _>>()),
    );
    let mut into = vec![9; 3];
    values.par_iter().map(|x| x + 1).collect_into_vec(&mut into);
    say("collect_into_vec", format!("{into:?}"));

    // Collect targets.
    let map: HashMap<u64, usize> = values
        .par_iter()
        .enumerate()
        .map(|(i, x)| (*x, i))
        .collect();
    say(
        "HashMap",
        format!("{:?}", map.into_iter().collect::<BTreeMap<_, _>>()),
    );
    let set: HashSet<u64> = values.par_iter().map(|x| x % 17).collect();
    say(
        "HashSet",
        format!("{:?}", set.into_iter().collect::<BTreeSet<_>>()),
    );
    say(
        "BTreeMap",
        format!(
            "{:?}",
            words
                .par_iter()
                .map(|w| (w.clone(), w.len()))
                .collect::<BTreeMap<_, _>>()
        ),
    );
    say(
        "BTreeSet",
        format!(
            "{:?}",
            values.par_iter().map(|x| x % 5).collect::<BTreeSet<u64>>()
        ),
    );
    say(
        "String chars",
        (0..len)
            .into_par_iter()
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect::<String>(),
    );
    say(
        "String strs",
        words.par_iter().map(|w| w.as_str()).collect::<String>(),
    );
    say(
        "String strings",
        words.par_iter().cloned().collect::<String>(),
    );
    let parsed: Result<Vec<u32>, _> = words.par_iter().map(|w| w[1..].parse::<u32>()).collect();
    say("Result ok", format!("{parsed:?}"));
    let failed: Result<Vec<u32>, String> = (0..len)
        .into_par_iter()
        .map(|i| {
            if i % 7 == 3 {
                Err(format!("bad {i}"))
            } else {
                Ok(i as u32)
            }
        })
        .collect();
    say("Result err", format!("{}", failed.is_err()));
    let options: Option<Vec<u64>> = values.par_iter().map(|x| x.checked_sub(1)).collect();
    say("Option", format!("{options:?}"));

    // Sorts.
    let mut sorted = values.clone();
    sorted.par_sort();
    say("par_sort", format!("{sorted:?}"));
    let mut by_key = pairs.clone();
    by_key.par_sort_by_key(|p| p.0);
    say("par_sort_by_key stable", format!("{by_key:?}"));
    let mut by = pairs.clone();
    by.par_sort_by(|a, b| b.0.cmp(&a.0));
    say("par_sort_by stable", format!("{by:?}"));
    let mut unstable = values.clone();
    unstable.par_sort_unstable();
    say("par_sort_unstable", format!("{unstable:?}"));
    let mut unstable_by = values.clone();
    unstable_by.par_sort_unstable_by(|a, b| b.cmp(a));
    say("par_sort_unstable_by", format!("{unstable_by:?}"));
    let mut unstable_key = pairs.clone();
    unstable_key.par_sort_unstable_by_key(|p| (p.0, p.1));
    say("par_sort_unstable_by_key", format!("{unstable_key:?}"));
    out
}

/// The pool's side, used the same way from both crates: `join`, `scope`, `spawn`,
/// `spawn_fifo` and `current_num_threads`; `ThreadPoolBuilder` with its hooks and
/// `ThreadPoolBuildError`; a pool's `install`, `join`, `scope`, `spawn`, `spawn_fifo` and
/// `current_thread_index`.
pub(crate) fn pool_program(threads: usize) -> Vec<String> {
    use std::sync::mpsc::channel;
    let (started, starts) = channel();
    let (exited, exits) = channel();
    let (panicked, panics) = channel();
    let built: Result<_, ThreadPoolBuildError> = ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("program-worker-{i}"))
        .stack_size(1 << 20)
        .start_handler(move |i| started.send(i).expect("the program counts every start"))
        .exit_handler(move |i| exited.send(i).expect("the program counts every exit"))
        .panic_handler(move |payload| {
            let message = payload.downcast_ref::<&str>().map(|s| s.to_string());
            panicked.send(message).expect("the program waits for the panic");
        })
        .build();
    let pool = built.expect("the pool starts");
    let mut started: Vec<usize> = (0..threads)
        .map(|_| starts.recv().expect("every worker starts"))
        .collect();
    started.sort_unstable();

    let (threads_inside, sum, named, index_inside) = pool.install(|| {
        let (a, b) = join(
            || (0..1000u64).into_par_iter().sum::<u64>(),
            || (1000..2000u64).into_par_iter().sum::<u64>(),
        );
        let name = std::thread::current().name().map(str::to_owned);
        (
            current_num_threads(),
            a + b,
            name.is_some_and(|n| n.starts_with("program-worker-")),
            pool.current_thread_index().is_some_and(|i| i < threads),
        )
    });
    let index_outside = pool.current_thread_index();
    let mut parts = [0u64; 4];
    scope(|s| {
        for (i, part) in parts.iter_mut().enumerate() {
            s.spawn(move |_| *part = (i as u64 * 100..(i as u64 + 1) * 100).into_par_iter().sum());
        }
    });
    let nested: Vec<u64> = pool.install(|| {
        (0..50u64)
            .into_par_iter()
            .map(|i| (0..i).into_par_iter().map(|j| j * i).sum::<u64>())
            .collect()
    });
    let halves = pool.join(|| (0..500u64).sum::<u64>(), || (500..1000u64).sum::<u64>());
    let mut tens = [0u64; 3];
    pool.scope(|s| {
        for (i, ten) in tens.iter_mut().enumerate() {
            s.spawn(move |_| *ten = (i as u64 * 10..(i as u64 + 1) * 10).sum());
        }
    });

    // Detached tasks: the pool's, and the free functions' on the global pool.
    let (tx, rx) = channel();
    for i in 0..4u64 {
        let (a, b) = (tx.clone(), tx.clone());
        pool.spawn(move || a.send(i).expect("the program receives every task's value"));
        pool.spawn_fifo(move || b.send(10 + i).expect("the program receives every value"));
    }
    let (a, b) = (tx.clone(), tx);
    spawn(move || a.send(100).expect("the program receives every task's value"));
    spawn_fifo(move || b.send(101).expect("the program receives every task's value"));
    let mut spawned: Vec<u64> = rx.iter().collect();
    spawned.sort_unstable();
    pool.spawn(|| panic!("expected panic in a detached task"));
    let panic = panics.recv().expect("the panic handler is called");

    drop(pool);
    let mut exited: Vec<usize> = (0..threads)
        .map(|_| exits.recv().expect("every worker exits"))
        .collect();
    exited.sort_unstable();
    vec![
        format!("started {started:?}"),
        format!("threads {threads_inside}"),
        format!("join sum {sum}"),
        format!("named {named}"),
        format!("index inside {index_inside}, outside {index_outside:?}"),
        format!("scope parts {parts:?}"),
        format!("nested {nested:?}"),
        format!("pool join {halves:?}"),
        format!("pool scope {tens:?}"),
        format!("spawned {spawned:?}"),
        format!("panic {panic:?}"),
        format!("exited {exited:?}"),
    ]
}
