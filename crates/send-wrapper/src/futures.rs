//! A wrapped future or stream is one itself, polled on its own thread only
//! (Leptos wraps the browser's futures this way to hand them to code that
//! asks for `Send`).

use std::future::Future;
use std::ops::DerefMut;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;

use crate::SendWrapper;

impl<T> SendWrapper<T> {
    /// The pinned value. Panics on another thread than the one that made
    /// the wrapper.
    fn pinned(self: Pin<&mut Self>) -> Pin<&mut T> {
        // SAFETY: the value is never moved out of a pinned wrapper: `take`
        // needs the wrapper by value, which a pin does not give, and the
        // wrapper's destructor drops the value in place.
        unsafe { self.map_unchecked_mut(|wrapper| wrapper.deref_mut()) }
    }
}

impl<F: Future> Future for SendWrapper<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.pinned().poll(cx)
    }
}

impl<S: Stream> Stream for SendWrapper<S> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.pinned().poll_next(cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (**self).size_hint()
    }
}
