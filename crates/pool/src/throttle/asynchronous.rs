//! The async acquisitions (cargo feature `async`), with the same protocol as the blocking
//! ones and no runtime dependency. A pending future waits in the throttle's queue of
//! waiters with its `Waker`, under the same lock; it is woken once, when its permits were
//! handed to it (or the throttle closed). Dropped before it is ready, it leaves the queue,
//! or gives back the permits it was handed but never took, so cancelling loses no
//! permit and no wake-up meant for another waiter.

use super::{
    AcquireError, Arc, CLOSED, GRANTED, OwnedThrottleGuard, Slot, Throttle, ThrottleGuard,
};
use crate::sync::lock;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Takes `permits` permits when polled, or waits in the queue.
struct Acquire<'a> {
    throttle: &'a Throttle,
    permits: usize,
    /// The ticket and slot of this future in the queue, once it waits.
    waiter: Option<(u64, Arc<Slot>)>,
}

impl Future for Acquire<'_> {
    type Output = Result<(), AcquireError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if this.permits == 0 {
            return Poll::Ready(Ok(()));
        }
        let mut permits = lock(&this.throttle.permits);
        if let Some((ticket, slot)) = &this.waiter {
            let outcome = match slot.state() {
                GRANTED => Ok(()),
                CLOSED => Err(AcquireError::Closed),
                _ => {
                    let waker = permits
                        .queue
                        .iter_mut()
                        .find(|waiter| waiter.ticket == *ticket)
                        .and_then(|waiter| waiter.waker.as_mut())
                        .expect("a waiting future is in the queue");
                    waker.clone_from(cx.waker());
                    return Poll::Pending;
                }
            };
            this.waiter = None;
            return Poll::Ready(outcome);
        }
        if this.throttle.take_now(&mut permits, this.permits, false)? {
            return Poll::Ready(Ok(()));
        }
        let waiter = permits.enqueue(this.permits, true, Some(cx.waker().clone()));
        this.throttle.publish(&permits); // holders give permits back for it
        this.waiter = Some(waiter);
        Poll::Pending
    }
}

impl Drop for Acquire<'_> {
    fn drop(&mut self) {
        let Some((ticket, slot)) = self.waiter.take() else {
            return;
        };
        let mut permits = lock(&self.throttle.permits);
        match slot.state() {
            GRANTED => permits.in_use -= self.permits, // handed over, never taken
            CLOSED => return,
            _ => permits.dequeue(ticket),
        }
        self.throttle.settle_queue(permits); // the next waiters may go
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
impl Throttle {
    /// Waits for a permit without blocking the thread (cargo feature `async`; any
    /// executor), in turn with the blocking acquisitions (see
    /// ["Protocol"](Throttle#protocol)): as tokio's `Semaphore::acquire`. The future is
    /// cancellation-safe: dropped before it is ready, it holds nothing and gives its place
    /// to the next waiter.
    ///
    /// # Errors
    ///
    /// [`AcquireError::Closed`] if the throttle is closed before the permit came.
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(1);
    /// let permit = std::pin::pin!(throttle.acquire_async());
    /// let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    /// assert!(permit.poll(&mut cx).is_ready()); // a free permit: ready at once
    /// ```
    pub async fn acquire_async(&self) -> Result<ThrottleGuard<'_>, AcquireError> {
        self.acquire_many_async(1).await
    }

    /// Waits for `n` permits at once without blocking the thread, as
    /// [`Throttle::acquire_many`] (tokio's `Semaphore::acquire_many`).
    ///
    /// # Errors
    ///
    /// As [`Throttle::acquire_many`].
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(3);
    /// let permits = std::pin::pin!(throttle.acquire_many_async(3));
    /// let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    /// let std::task::Poll::Ready(Ok(guard)) = permits.poll(&mut cx) else { panic!() };
    /// assert_eq!(guard.num_permits(), 3);
    /// ```
    pub async fn acquire_many_async(&self, n: usize) -> Result<ThrottleGuard<'_>, AcquireError> {
        Acquire {
            throttle: self,
            permits: n,
            waiter: None,
        }
        .await?;
        Ok(ThrottleGuard {
            throttle: self,
            permits: n,
        })
    }

    /// [`Throttle::acquire_async`] with an [`OwnedThrottleGuard`] (tokio's
    /// `Semaphore::acquire_owned`); the future is `'static`, so it can be spawned, and
    /// the permit moved between tasks.
    ///
    /// # Errors
    ///
    /// As [`Throttle::acquire_async`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let throttle = Arc::new(coretune_pool::Throttle::new(1));
    /// let permit = std::pin::pin!(throttle.acquire_owned_async());
    /// let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    /// assert!(permit.poll(&mut cx).is_ready());
    /// ```
    pub fn acquire_owned_async(
        self: &Arc<Self>,
    ) -> impl Future<Output = Result<OwnedThrottleGuard, AcquireError>> + Send + 'static {
        self.acquire_many_owned_async(1)
    }

    /// [`Throttle::acquire_many_async`] with an [`OwnedThrottleGuard`] (tokio's
    /// `Semaphore::acquire_many_owned`).
    ///
    /// # Errors
    ///
    /// As [`Throttle::acquire_many`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let throttle = Arc::new(coretune_pool::Throttle::new(2));
    /// let permits = std::pin::pin!(throttle.acquire_many_owned_async(2));
    /// let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    /// assert!(permits.poll(&mut cx).is_ready());
    /// ```
    pub fn acquire_many_owned_async(
        self: &Arc<Self>,
        n: usize,
    ) -> impl Future<Output = Result<OwnedThrottleGuard, AcquireError>> + Send + 'static {
        let throttle = Arc::clone(self);
        async move {
            Acquire {
                throttle: &throttle,
                permits: n,
                waiter: None,
            }
            .await?;
            Ok(OwnedThrottleGuard {
                throttle,
                permits: n,
            })
        }
    }
}
