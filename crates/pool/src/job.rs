//! Jobs: type-erased closures queued in the pool, stored inline when small.
//!
//! # Why inline storage (and `unsafe`)
//!
//! A boxed closure (`Box<dyn FnOnce() + Send>`) costs every task a `malloc` on the
//! submitting thread and a `free` on the worker (26–62 ns for such a cross-thread pair
//! with glibc on the 2-CPU machine), plus the cache misses of touching that memory on
//! both sides. With boxed jobs the spawn benchmark (`benches/spawn.rs`) gave 147 ns/item
//! for `spawn` and 130 for `spawn_batch`, far from the 30 and 10 ns targets
//! (BENCHMARKS.md, "Pool overhead").
//!
//! A [`Job`] is four words: a function pointer and three words of payload. A closure
//! of at most three words (and alignment at most a word's) is moved into the payload;
//! a larger one is boxed and the payload holds the box's pointer. The injector and the
//! deques (crossbeam-deque) store `Job` values inline in their own buffers, which are
//! allocated in blocks, so a small task costs no allocation of its own.
//!
//! A [`SmallJob`] is the same scheme with one word of payload (16 bytes), for `spawn`ed
//! closures of at most one word, which a submitter's ring holds (`ring.rs`): four jobs per
//! cache line instead of two. It is never boxed: a larger closure becomes a `Job`
//! instead. Both are [`RawJob`] with a different payload size.
//!
//! The function pointer is monomorphised per closure type and knows how to either run
//! or drop the closure in the payload; `Job::run` calls it once and forgets the job,
//! `Drop` calls it to drop an unrun job. Exactly one of the two happens, so the closure
//! is consumed exactly once.
//!
//! The pool's other `unsafe` code: slots of batch arrays (`batch.rs`, same benchmark),
//! slots of the submitters' rings (`ring.rs`: a ring of 16-byte jobs took 0.3–0.4× the
//! time per job of a crossbeam deque of 32-byte ones in a bare-queue benchmark,
//! BENCHMARKS.md, "Bare queues") and the `membarrier` call of the sleep protocol
//! (`sys.rs`).

use crossbeam_deque::Steal;
use std::mem::{ManuallyDrop, MaybeUninit, align_of, size_of};

/// Words of inline closure storage: enough for a closure capturing a reference and an
/// `Arc` (a scoped job) or three references; 4 words per job in total.
const INLINE_WORDS: usize = 3;

/// Inline storage of a job with `WORDS` words of payload.
type Payload<const WORDS: usize> = [MaybeUninit<usize>; WORDS];

/// Runs (`run == true`) or drops (`false`) the closure stored in the payload.
///
/// Safety contract of every such function: `payload` holds a live closure of the type
/// the function was instantiated for, stored as `RawJob::store` does, and it is called at
/// most once per stored closure.
type Vtable<const WORDS: usize> = unsafe fn(payload: *mut Payload<WORDS>, run: bool);

/// A type-erased closure: a function pointer and `WORDS` words of payload.
pub(crate) struct RawJob<const WORDS: usize> {
    vtable: Vtable<WORDS>,
    payload: Payload<WORDS>,
}

/// A unit of work queued in the pool's deques and injectors: a closure of up to three
/// words inline, a larger one boxed (32 bytes in all).
///
/// Scoped jobs borrow from their scope; [`Job::new_scoped`] erases that lifetime and the
/// scope guarantees the job has run before the borrow ends.
pub(crate) type Job = RawJob<INLINE_WORDS>;

/// A `'static` closure of at most one word, stored inline (16 bytes in all): what a
/// submitter's ring holds (`ring.rs`), four to a cache line where a [`Job`] fits two.
/// Built only by [`SmallJob::try_new`], never boxed.
pub(crate) type SmallJob = RawJob<1>;

// SAFETY: every constructor requires the stored closure to be `Send`, and a job only
// gives access to the closure by value (running or dropping it), so sending the job
// sends the closure.
unsafe impl<const WORDS: usize> Send for RawJob<WORDS> {}

impl<const WORDS: usize> std::fmt::Debug for RawJob<WORDS> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Job")
    }
}

impl Job {
    /// Wraps a `'static` closure.
    pub(crate) fn new<F: FnOnce() + Send + 'static>(f: F) -> Self {
        Self::store(f)
    }

    /// Wraps a closure that borrows for `'scope`.
    ///
    /// # Safety
    ///
    /// The caller must guarantee that the job is run (or dropped) before `'scope` ends;
    /// `Scope` does so by waiting on its `CountLatch` before returning, also when the
    /// scope body or a job panics.
    #[inline]
    pub(crate) unsafe fn new_scoped<'scope, F: FnOnce() + Send + 'scope>(f: F) -> Self {
        // The lifetime is erased simply by storing: `Job` has none. What keeps the
        // borrows valid is the caller's guarantee above.
        Self::store(f)
    }

    #[inline]
    fn store<F: FnOnce() + Send>(f: F) -> Self {
        match Self::try_inline(f) {
            Ok(job) => job,
            Err(f) => {
                let mut payload: Payload<INLINE_WORDS> = [MaybeUninit::uninit(); INLINE_WORDS];
                let boxed: *mut F = Box::into_raw(Box::new(f));
                // SAFETY: a thin pointer is one word, the payload's first element.
                unsafe { payload.as_mut_ptr().cast::<*mut F>().write(boxed) };
                Job {
                    vtable: run_boxed::<F, INLINE_WORDS>,
                    payload,
                }
            }
        }
    }
}

/// The payload of a pointer job ([`Job::from_pointer`]).
#[derive(Clone, Copy)]
struct PointerJob {
    data: *const (),
    run: unsafe fn(*const ()),
}

impl Job {
    /// A job that calls `run(data)`: what `join` pushes for its second closure, which lives
    /// on the joining worker's stack at `data`. The joining worker recognises the job by
    /// `data` when it pops it back ([`Job::pointer_data`]) and then runs the closure itself,
    /// without the indirect call.
    ///
    /// # Safety
    ///
    /// `run(data)` must be sound to call once whenever the job runs; the caller must make
    /// sure it runs (or is recognised and forgotten) while `data` is valid.
    #[inline]
    pub(crate) unsafe fn from_pointer(data: *const (), run: unsafe fn(*const ())) -> Self {
        let mut payload: Payload<INLINE_WORDS> = [MaybeUninit::uninit(); INLINE_WORDS];
        const {
            assert!(size_of::<PointerJob>() <= size_of::<Payload<INLINE_WORDS>>());
            assert!(align_of::<PointerJob>() <= align_of::<Payload<INLINE_WORDS>>());
        }
        // SAFETY: the payload is large and aligned enough for a `PointerJob` (checked at
        // compile time just above).
        unsafe {
            payload
                .as_mut_ptr()
                .cast::<PointerJob>()
                .write(PointerJob { data, run })
        };
        Job {
            vtable: run_pointer::<INLINE_WORDS>,
            payload,
        }
    }

    /// The `data` of a job made by [`Job::from_pointer`]; `None` for any other job (or, in
    /// principle, a pointer job whose function pointer compares unequal, which only costs
    /// the caller the indirect call).
    #[inline]
    pub(crate) fn pointer_data(&self) -> Option<*const ()> {
        let pointer_vtable: Vtable<INLINE_WORDS> = run_pointer::<INLINE_WORDS>;
        if !std::ptr::fn_addr_eq(self.vtable, pointer_vtable) {
            return None;
        }
        // SAFETY: only `from_pointer` pairs this vtable with a payload, and it stores a
        // `PointerJob` there (a merged identical function would read the same layout).
        Some(unsafe { self.payload.as_ptr().cast::<PointerJob>().read() }.data)
    }
}

impl SmallJob {
    /// Wraps `f` if it fits in one word (and a word's alignment); else hands it back.
    pub(crate) fn try_new<F: FnOnce() + Send + 'static>(f: F) -> Result<Self, F> {
        Self::try_inline(f)
    }

    /// The same closure as a [`Job`] (for a submitter's deque, when its ring is full, or
    /// a worker's own deque).
    pub(crate) fn into_job(self) -> Job {
        // A `SmallJob` holds a `'static` closure (`try_new`), so this one is `'static`.
        Job::new(move || self.run())
    }
}

impl<const WORDS: usize> RawJob<WORDS> {
    /// Moves `f` into the payload if it fits; else hands it back.
    #[inline]
    fn try_inline<F: FnOnce() + Send>(f: F) -> Result<Self, F> {
        let fits = size_of::<F>() <= size_of::<Payload<WORDS>>()
            && align_of::<F>() <= align_of::<Payload<WORDS>>();
        if !fits {
            return Err(f);
        }
        let mut payload: Payload<WORDS> = [MaybeUninit::uninit(); WORDS];
        // SAFETY: `payload` is valid for writes of `size_of::<F>()` bytes at an
        // alignment of at least `align_of::<F>()` (checked just above).
        unsafe { payload.as_mut_ptr().cast::<F>().write(f) };
        Ok(RawJob {
            vtable: run_inline::<F, WORDS>,
            payload,
        })
    }

    /// Runs the job.
    #[inline]
    pub(crate) fn run(self) {
        let mut job = ManuallyDrop::new(self);
        // SAFETY: the payload holds the closure `vtable` was made for (see `store`), and
        // `ManuallyDrop` keeps `Drop` from touching it again after this call consumed it.
        unsafe { (job.vtable)(&mut job.payload, true) }
    }
}

impl<const WORDS: usize> Drop for RawJob<WORDS> {
    fn drop(&mut self) {
        // SAFETY: a job that is dropped was not run (`run` forgets it), so the payload
        // still holds the closure `vtable` was made for; this consumes it once.
        unsafe { (self.vtable)(&mut self.payload, false) }
    }
}

/// # Safety
///
/// See [`Vtable`]: `payload` holds a live `F` written in place.
unsafe fn run_inline<F: FnOnce(), const WORDS: usize>(payload: *mut Payload<WORDS>, run: bool) {
    // SAFETY: per the contract, an initialised `F` is stored at `payload`; reading moves
    // it out, and the caller never reads it again.
    let f = unsafe { payload.cast::<F>().read() };
    if run {
        f();
    }
}

/// # Safety
///
/// See [`Vtable`]: `payload` holds a `PointerJob` written by `Job::from_pointer`.
unsafe fn run_pointer<const WORDS: usize>(payload: *mut Payload<WORDS>, run: bool) {
    if run {
        // SAFETY: per the contract, a `PointerJob` is stored at `payload`; calling its
        // function on its data once is what `from_pointer`'s caller vouched for.
        unsafe {
            let job = payload.cast::<PointerJob>().read();
            (job.run)(job.data);
        }
    }
}

/// # Safety
///
/// See [`Vtable`]: `payload` holds a pointer from `Box::<F>::into_raw`.
unsafe fn run_boxed<F: FnOnce(), const WORDS: usize>(payload: *mut Payload<WORDS>, run: bool) {
    // SAFETY: per the contract, the first word is a pointer from `Box::into_raw` that
    // was not turned back into a box yet; doing so once takes ownership again.
    let f = unsafe { Box::from_raw(payload.cast::<*mut F>().read()) };
    if run {
        f();
    }
}

/// Repeats a steal from one of the pool's queues while it asks for a retry: the job, or
/// `None` once the queue was seen empty.
pub(crate) fn retry(mut steal: impl FnMut() -> Steal<Job>) -> Option<Job> {
    loop {
        match steal() {
            Steal::Success(job) => return Some(job),
            Steal::Empty => return None,
            Steal::Retry => std::hint::spin_loop(),
        }
    }
}

#[cfg(test)]
mod test {
    use super::Job;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts drops of the captured value, inline and boxed, run and unrun.
    #[test]
    fn each_closure_is_run_or_dropped_exactly_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        let runs = Arc::new(AtomicUsize::new(0));
        struct Counted(Arc<AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        let small = |drops: &Arc<AtomicUsize>, runs: &Arc<AtomicUsize>| {
            let (c, runs) = (Counted(Arc::clone(drops)), Arc::clone(runs));
            Job::new(move || {
                let _c = &c;
                runs.fetch_add(1, Ordering::Relaxed);
            })
        };
        let big = |drops: &Arc<AtomicUsize>, runs: &Arc<AtomicUsize>| {
            let (c, runs, pad) = (Counted(Arc::clone(drops)), Arc::clone(runs), [7u64; 8]);
            Job::new(move || {
                let _c = &c;
                assert_eq!(pad[7], 7);
                runs.fetch_add(1, Ordering::Relaxed);
            })
        };
        small(&drops, &runs).run();
        big(&drops, &runs).run();
        drop(small(&drops, &runs));
        drop(big(&drops, &runs));
        let aligned = Job::new(move || assert_eq!(std::hint::black_box(1u128), 1));
        aligned.run();
        assert_eq!(runs.load(Ordering::Relaxed), 2);
        assert_eq!(drops.load(Ordering::Relaxed), 4);
    }
}
