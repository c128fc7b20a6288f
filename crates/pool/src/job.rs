//! Jobs: type-erased closures queued in the pool.

/// A unit of work queued in the pool: a boxed `FnOnce`.
///
/// Scoped jobs borrow from their scope; [`Job::new_scoped`] erases that lifetime and the
/// scope guarantees the job has run before the borrow ends.
pub(crate) struct Job(Box<dyn FnOnce() + Send + 'static>);

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Job")
    }
}

impl Job {
    /// Wraps a `'static` closure.
    pub(crate) fn new<F: FnOnce() + Send + 'static>(f: F) -> Self {
        Job(Box::new(f))
    }

    /// Wraps a closure that borrows for `'scope`.
    ///
    /// # Safety
    ///
    /// The caller must guarantee that the job is run (or dropped) before `'scope` ends;
    /// `Scope` does so by waiting on its `CountLatch` before returning, also when the
    /// scope body or a job panics.
    pub(crate) unsafe fn new_scoped<'scope, F: FnOnce() + Send + 'scope>(f: F) -> Self {
        let boxed: Box<dyn FnOnce() + Send + 'scope> = Box::new(f);
        // SAFETY: only the lifetime bound of the trait object changes (same layout, same
        // vtable). The caller promises the closure is consumed before `'scope` ends, so
        // no borrow it holds is used after it expires.
        let boxed: Box<dyn FnOnce() + Send + 'static> = unsafe { std::mem::transmute(boxed) };
        Job(boxed)
    }

    /// Runs the job.
    pub(crate) fn run(self) {
        (self.0)()
    }
}
