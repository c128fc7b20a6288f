//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One counter per task id, to check that each task ran exactly once.
#[derive(Debug)]
pub struct Tally(Vec<AtomicUsize>);

impl Tally {
    pub fn new(n: usize) -> Arc<Self> {
        Arc::new(Tally((0..n).map(|_| AtomicUsize::new(0)).collect()))
    }

    pub fn hit(&self, id: usize) {
        self.0[id].fetch_add(1, Ordering::Relaxed);
    }

    pub fn total(&self) -> usize {
        self.0.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// Panics naming the first task that did not run exactly once.
    pub fn assert_each_once(&self) {
        for (id, count) in self.0.iter().enumerate() {
            let count = count.load(Ordering::Relaxed);
            assert_eq!(count, 1, "task {id} ran {count} times");
        }
    }
}

/// Increments its counter when dropped: proves captured values are freed exactly once.
#[derive(Debug)]
pub struct DropCounter(pub Arc<AtomicUsize>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Spins (yielding) until `counter` reaches `target`; panics after 20 s.
pub fn wait_for(counter: &AtomicUsize, target: usize) {
    let start = std::time::Instant::now();
    while counter.load(Ordering::Acquire) < target {
        assert!(
            start.elapsed().as_secs() < 20,
            "stuck at {counter:?} of {target}"
        );
        std::thread::yield_now();
    }
}

/// Silences the default panic message for payloads tagged `"expected panic"`, so the
/// tests that panic on purpose keep the output readable.
pub fn quiet_expected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let expected = info
                .payload()
                .downcast_ref::<&str>()
                .is_some_and(|s| s.starts_with("expected panic"));
            if !expected {
                default(info);
            }
        }));
    });
}
