//! Loom models of the throttle's semaphore and seats (`RUSTFLAGS="--cfg loom" cargo test
//! -p coretune-pool --release --lib loom`).

use super::{Patience, Throttle};
use crate::sync::{Arc, AtomicBool, AtomicUsize, Ordering, lock};
use loom::thread;

/// Takes a permit of a throttle of limit 1 and checks that nobody else is inside.
fn alone_inside(throttle: &Throttle, inside: &AtomicUsize) {
    let _guard = throttle.acquire();
    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
    inside.fetch_sub(1, Ordering::SeqCst);
}

/// Three threads, one permit: never two inside, nobody stuck.
#[test]
fn loom_throttle_limit_one() {
    loom::model(|| {
        let throttle = Arc::new(Throttle::new(1));
        let inside = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (throttle, inside) = (Arc::clone(&throttle), Arc::clone(&inside));
                thread::spawn(move || alone_inside(&throttle, &inside))
            })
            .collect();
        alone_inside(&throttle, &inside);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(throttle.in_use(), 0);
    });
}

/// Two seats under a limit lowered from 2 to 1 while both hold: each gives its permit
/// back at its next `hold` when over the limit, nobody is stuck, and at the end no
/// permit is left and the flag is clear.
#[test]
fn loom_seat_follows_a_lowered_limit() {
    loom::model(|| {
        let throttle = Arc::new(Throttle::new(2));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let throttle = Arc::clone(&throttle);
                thread::spawn(move || {
                    let mut seat = throttle.seat();
                    seat.hold();
                    seat.hold();
                    assert!(throttle.in_use() <= 2);
                })
            })
            .collect();
        throttle.set_limit(1);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(throttle.in_use(), 0);
        assert!(!throttle.is_over_limit());
    });
}

/// A waiter blocked on a full throttle is released by a limit increase.
#[test]
fn loom_throttle_set_limit_releases_waiter() {
    loom::model(|| {
        let throttle = Arc::new(Throttle::new(1));
        let guard_thread = {
            let throttle = Arc::clone(&throttle);
            thread::spawn(move || {
                let _a = throttle.acquire();
                let _b = throttle.acquire(); // needs the raised limit or `_a`'s release
            })
        };
        throttle.set_limit(2);
        guard_thread.join().unwrap();
        assert_eq!(throttle.in_use(), 0);
    });
}

/// A request for two permits of two against a single acquisition: both get in, in either
/// order, never more than the limit inside; the queue is empty and the flag clear after.
#[test]
fn loom_throttle_many_against_single() {
    loom::model(|| {
        let throttle = Arc::new(Throttle::new(2));
        let inside = Arc::new(AtomicUsize::new(0));
        let single = {
            let (throttle, inside) = (Arc::clone(&throttle), Arc::clone(&inside));
            thread::spawn(move || {
                let _guard = throttle.acquire();
                assert!(inside.fetch_add(1, Ordering::SeqCst) < 2);
                inside.fetch_sub(1, Ordering::SeqCst);
            })
        };
        {
            let _two = throttle.acquire_many(2).unwrap();
            assert_eq!(inside.fetch_add(2, Ordering::SeqCst), 0);
            inside.fetch_sub(2, Ordering::SeqCst);
        }
        single.join().unwrap();
        assert_eq!(throttle.in_use(), 0);
        assert!(!throttle.is_over_limit());
    });
}

/// A queued request for two gives up (the model's timeout) while a single acquisition waits
/// behind it: the single one gets in whichever happens first, the permit held meanwhile is
/// released, and nothing is left queued.
#[test]
fn loom_throttle_timed_out_request_lets_others_in() {
    loom::model(|| {
        let throttle = Arc::new(Throttle::new(2));
        throttle.acquire_permit(); // held for the whole model, released at the end
        let expired = Arc::new(AtomicBool::new(false));
        let many = {
            let (throttle, expired) = (Arc::clone(&throttle), Arc::clone(&expired));
            thread::spawn(move || {
                throttle
                    .take(2, &Patience::UntilFlag(expired), true)
                    .unwrap()
            })
        };
        let single = {
            let throttle = Arc::clone(&throttle);
            thread::spawn(move || drop(throttle.acquire()))
        };
        // Time out the request: set the flag and wake the waiters under the lock.
        {
            let permits = lock(&throttle.permits);
            expired.store(true, Ordering::SeqCst);
            for waiter in &permits.queue {
                waiter.slot.condvar.notify_one();
            }
        }
        single.join().unwrap();
        let took_two = many.join().unwrap();
        assert!(!took_two, "2 permits never fit beside the one held");
        throttle.release();
        assert_eq!(throttle.in_use(), 0);
        assert!(!throttle.is_over_limit());
        assert!(lock(&throttle.permits).queue.is_empty());
    });
}

/// Two threads wait behind a held permit; one release hands it to one of them (the other
/// is not woken for it), and its release to the other: both get in, one at a time, and
/// nobody is left waiting or holding.
#[test]
fn loom_each_release_hands_its_permit_to_one_waiter() {
    loom::model(|| {
        let throttle = Arc::new(Throttle::new(1));
        let inside = Arc::new(AtomicUsize::new(0));
        throttle.acquire_permit();
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (throttle, inside) = (Arc::clone(&throttle), Arc::clone(&inside));
                thread::spawn(move || alone_inside(&throttle, &inside))
            })
            .collect();
        throttle.release();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(throttle.in_use(), 0);
        assert!(lock(&throttle.permits).queue.is_empty());
    });
}

/// A queued async acquisition dropped while a release hands it the permit, against a
/// blocking waiter behind it: whichever comes first, the permit reaches the blocking
/// waiter (none is lost with the dropped future) and nothing is left queued.
#[cfg(feature = "async")]
#[test]
fn loom_a_dropped_async_acquire_passes_its_place_and_permit_on() {
    use std::future::Future;
    use std::task::{Context, Waker};
    loom::model(|| {
        let throttle = Arc::new(Throttle::new(1));
        throttle.acquire_permit();
        let mut future = Box::pin(throttle.acquire_async());
        let mut cx = Context::from_waker(Waker::noop());
        assert!(future.as_mut().poll(&mut cx).is_pending());
        let blocking = {
            let throttle = Arc::clone(&throttle);
            thread::spawn(move || drop(throttle.acquire()))
        };
        let releaser = {
            let throttle = Arc::clone(&throttle);
            thread::spawn(move || throttle.release())
        };
        drop(future);
        releaser.join().unwrap();
        blocking.join().unwrap();
        assert_eq!(throttle.in_use(), 0);
        assert!(lock(&throttle.permits).queue.is_empty());
    });
}
