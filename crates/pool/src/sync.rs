//! Synchronisation primitives used by the latch, the sleep protocol and the throttle.
//!
//! Under `--cfg loom` these are loom's model-checked types, so the protocols in
//! `latch.rs`, `sleep.rs` and `throttle.rs` can be explored exhaustively (as tokio's
//! `src/loom/mod.rs` does); otherwise they are the standard library's.

#[cfg(loom)]
pub(crate) use loom::sync::{
    Arc, Condvar, Mutex, MutexGuard,
    atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence},
};

#[cfg(not(loom))]
pub(crate) use std::sync::{
    Condvar, Mutex, MutexGuard,
    atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence},
};

/// Locks `mutex`, ignoring poisoning.
///
/// Every critical section in this crate only assigns plain values and cannot panic
/// half-way, so a poisoned lock still guards consistent data.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits on `condvar`, ignoring poisoning (see [`lock`]).
pub(crate) fn wait<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    condvar
        .wait(guard)
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
