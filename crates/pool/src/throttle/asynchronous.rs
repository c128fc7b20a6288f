//! `acquire_async` (cargo feature `async`): single permits for async code, with the same
//! protocol as the blocking acquisitions and no runtime dependency. A pending future keeps
//! its `Waker` in the throttle's state, under the same lock; every change that lets
//! somebody in wakes all of them (`Throttle::wake`), and a dropped future takes its waker
//! out, so cancelling never loses a wake-up meant for another waiter.

use super::{OwnedThrottleGuard, Throttle, ThrottleGuard};
use crate::sync::lock;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Takes one permit when polled, or registers the task's waker.
struct Acquire<'a> {
    throttle: &'a Throttle,
    /// The number of this future's registered waker, once it waited.
    waiter: Option<u64>,
}

impl Future for Acquire<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let mut permits = lock(&this.throttle.permits);
        if let Some(waiter) = this.waiter {
            permits.wakers.retain(|(id, _)| *id != waiter);
        }
        if permits.may_take(1, None) {
            permits.in_use += 1;
            this.waiter = None;
            this.throttle.publish(&permits);
            return Poll::Ready(());
        }
        let id = *this.waiter.get_or_insert_with(|| permits.new_ticket());
        permits.wakers.push((id, cx.waker().clone()));
        Poll::Pending
    }
}

impl Drop for Acquire<'_> {
    fn drop(&mut self) {
        if let Some(waiter) = self.waiter {
            lock(&self.throttle.permits)
                .wakers
                .retain(|(id, _)| *id != waiter);
        }
    }
}

impl Throttle {
    /// Waits for a permit without blocking the thread (cargo feature `async`; any
    /// executor). The protocol is [`Throttle::acquire`]'s; the future is
    /// cancellation-safe: dropped before it is ready, it holds nothing and leaves no
    /// waiter behind. Waiting futures are all woken when a permit may be free, so prefer
    /// `tokio::sync::Semaphore` for thousands of waiters on one permit.
    ///
    /// ```
    /// let throttle = coretune_pool::Throttle::new(1);
    /// let permit = std::pin::pin!(throttle.acquire_async());
    /// let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    /// assert!(permit.poll(&mut cx).is_ready()); // a free permit: ready at once
    /// ```
    pub async fn acquire_async(&self) -> ThrottleGuard<'_> {
        Acquire {
            throttle: self,
            waiter: None,
        }
        .await;
        ThrottleGuard {
            throttle: self,
            permits: 1,
        }
    }

    /// [`Throttle::acquire_async`] with an [`OwnedThrottleGuard`]; the future is
    /// `'static`, so it can be spawned, and the permit moved between tasks.
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
    ) -> impl Future<Output = OwnedThrottleGuard> + Send + 'static {
        let throttle = Arc::clone(self);
        async move {
            Acquire {
                throttle: &throttle,
                waiter: None,
            }
            .await;
            OwnedThrottleGuard {
                throttle,
                permits: 1,
            }
        }
    }
}
