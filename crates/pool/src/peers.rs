//! Minimal peer pools, written the obvious way so that a comparison says what a hand-rolled pool
//! would cost: the `spawn` benchmark and coretune's `spawn` workload run the same tasks on these
//! and on [`ThreadPool`](crate::ThreadPool). For measurements, not for use: only built with
//! coretune-pool's cargo feature `peers` (off by default).

use crossbeam_deque::{Injector, Steal, Worker};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// A boxed task, as both peers queue them.
///
/// ```
/// let task: coretune_pool::peers::Task = Box::new(|| ());
/// task();
/// ```
pub type Task = Box<dyn FnOnce() + Send>;

/// Workers steal batches from one crossbeam `Injector`; idle workers yield (no sleep).
///
/// ```
/// use coretune_pool::peers::{Countdown, InjectorPool};
/// let pool = InjectorPool::new(2);
/// let countdown = Countdown::leak(100);
/// (0..100).for_each(|_| pool.spawn(move || countdown.item()));
/// countdown.wait();
/// assert_eq!(countdown.remaining(), 0);
/// ```
#[allow(missing_debug_implementations)]
pub struct InjectorPool {
    shared: Arc<(Injector<Task>, AtomicBool)>,
    threads: Vec<JoinHandle<()>>,
}

impl InjectorPool {
    /// Starts `n` workers.
    ///
    /// ```
    /// let pool = coretune_pool::peers::InjectorPool::new(2);
    /// pool.spawn(|| ());
    /// ```
    pub fn new(n: usize) -> Self {
        let shared = Arc::new((Injector::<Task>::new(), AtomicBool::new(false)));
        let threads = (0..n)
            .map(|_| {
                let shared = Arc::clone(&shared);
                std::thread::spawn(move || {
                    let local = Worker::new_fifo();
                    loop {
                        let task = local.pop().or_else(|| {
                            loop {
                                match shared.0.steal_batch_and_pop(&local) {
                                    Steal::Success(task) => break Some(task),
                                    Steal::Empty => break None,
                                    Steal::Retry => {}
                                }
                            }
                        });
                        match task {
                            Some(task) => task(),
                            None if shared.1.load(Ordering::Acquire) => return,
                            None => std::thread::yield_now(),
                        }
                    }
                })
            })
            .collect();
        InjectorPool { shared, threads }
    }

    /// Queues a task.
    ///
    /// ```
    /// let pool = coretune_pool::peers::InjectorPool::new(1);
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// pool.spawn(move || tx.send(7).unwrap());
    /// assert_eq!(rx.recv().unwrap(), 7);
    /// ```
    pub fn spawn(&self, task: impl FnOnce() + Send + 'static) {
        self.shared.0.push(Box::new(task));
    }
}

impl Drop for InjectorPool {
    fn drop(&mut self) {
        self.shared.1.store(true, Ordering::Release);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// The queue and its "shutting down" flag, and the condition variable idle workers
/// wait on.
type MutexShared = (Mutex<(VecDeque<Task>, bool)>, Condvar);

/// One `Mutex<VecDeque>` and a `Condvar`; idle workers block.
///
/// ```
/// use coretune_pool::peers::{Countdown, MutexPool};
/// let pool = MutexPool::new(2);
/// let countdown = Countdown::leak(100);
/// (0..100).for_each(|_| pool.spawn(move || countdown.item()));
/// countdown.wait();
/// assert_eq!(countdown.remaining(), 0);
/// ```
#[allow(missing_debug_implementations)]
pub struct MutexPool {
    shared: Arc<MutexShared>,
    threads: Vec<JoinHandle<()>>,
}

impl MutexPool {
    /// Starts `n` workers.
    ///
    /// ```
    /// let pool = coretune_pool::peers::MutexPool::new(2);
    /// pool.spawn(|| ());
    /// ```
    pub fn new(n: usize) -> Self {
        let shared = Arc::new((Mutex::new((VecDeque::<Task>::new(), false)), Condvar::new()));
        let threads = (0..n)
            .map(|_| {
                let shared = Arc::clone(&shared);
                std::thread::spawn(move || {
                    loop {
                        let task = {
                            let mut queue = shared.0.lock().expect("no panics under the lock");
                            loop {
                                if let Some(task) = queue.0.pop_front() {
                                    break task;
                                }
                                if queue.1 {
                                    return;
                                }
                                queue = shared.1.wait(queue).expect("no panics under the lock");
                            }
                        };
                        task();
                    }
                })
            })
            .collect();
        MutexPool { shared, threads }
    }

    /// Queues a task.
    ///
    /// ```
    /// let pool = coretune_pool::peers::MutexPool::new(1);
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// pool.spawn(move || tx.send(7).unwrap());
    /// assert_eq!(rx.recv().unwrap(), 7);
    /// ```
    pub fn spawn(&self, task: impl FnOnce() + Send + 'static) {
        let mut queue = self.shared.0.lock().expect("no panics under the lock");
        queue.0.push_back(Box::new(task));
        drop(queue);
        self.shared.1.notify_one();
    }
}

impl Drop for MutexPool {
    fn drop(&mut self) {
        self.shared.0.lock().expect("no panics under the lock").1 = true;
        self.shared.1.notify_all();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// The benchmark's work item: each item decrements a shared counter and the one that brings it
/// to zero wakes the waiting submitter. Used by the `spawn` benchmark and coretune's `spawn`
/// workload, so both measure the same shape.
///
/// ```
/// use coretune_pool::peers::{Countdown, InjectorPool};
/// let pool = InjectorPool::new(2);
/// let countdown = Countdown::leak(100);
/// (0..100).for_each(|_| pool.spawn(move || countdown.item()));
/// countdown.wait();
/// assert_eq!(countdown.remaining(), 0);
/// ```
#[derive(Debug)]
pub struct Countdown {
    remaining: AtomicUsize,
    done: Mutex<bool>,
    signal: Condvar,
}

impl Countdown {
    /// A countdown of `n` items, leaked so that `'static` tasks hold a plain reference (a
    /// reference count per task would be measured instead of the pool); 64 bytes per run.
    ///
    /// ```
    /// let countdown = coretune_pool::peers::Countdown::leak(2);
    /// assert_eq!(countdown.remaining(), 2);
    /// ```
    pub fn leak(n: usize) -> &'static Countdown {
        Box::leak(Box::new(Countdown {
            remaining: AtomicUsize::new(n),
            done: Mutex::new(false),
            signal: Condvar::new(),
        }))
    }

    /// One work item.
    ///
    /// ```
    /// let countdown = coretune_pool::peers::Countdown::leak(2);
    /// countdown.item();
    /// assert_eq!(countdown.remaining(), 1);
    /// ```
    pub fn item(&self) {
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            *self
                .done
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = true;
            self.signal.notify_one();
        }
    }

    /// Waits until the last item ran.
    ///
    /// ```
    /// let countdown = coretune_pool::peers::Countdown::leak(2);
    /// std::thread::scope(|s| {
    ///     s.spawn(|| { countdown.item(); countdown.item(); });
    ///     countdown.wait();
    /// });
    /// assert_eq!(countdown.remaining(), 0);
    /// ```
    pub fn wait(&self) {
        let mut done = self
            .done
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while !*done {
            done = self
                .signal
                .wait(done)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Items not yet run: 0 after every item ran once (an item run twice wraps it around).
    ///
    /// ```
    /// let countdown = coretune_pool::peers::Countdown::leak(2);
    /// countdown.item();
    /// countdown.item();
    /// assert_eq!(countdown.remaining(), 0);
    /// ```
    pub fn remaining(&self) -> usize {
        self.remaining.load(Ordering::Acquire)
    }
}
