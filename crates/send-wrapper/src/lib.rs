//! A value that may be moved to other threads but used only on the thread
//! that made it: `SendWrapper<T>` is `Send` and `Sync` whatever `T` is, and
//! reaching the value (`Deref`, `DerefMut`, `take`, a `Future`'s `poll`) or
//! dropping a value with a destructor anywhere else panics.
//!
//! This is crates.io's `send_wrapper` 0.6 API, put in its place by the
//! workspace's `[patch.crates-io]`, with one difference: on WebAssembly
//! without the `atomics` feature (the console's build) a program has exactly
//! one thread, so there is nothing to check and the wrapper holds only the
//! value. Everywhere else it remembers its thread, as the original does.
//! The check cost the console std's thread handle (`thread::current()`
//! builds a named, reference-counted `Thread` on first use), about 4 KB of
//! code in the module every page loads.

use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

#[cfg(feature = "futures")]
mod futures;

/// Which thread made a wrapper, where a program may have more than one.
#[cfg(not(all(target_family = "wasm", not(target_feature = "atomics"))))]
#[derive(Clone, Copy, PartialEq, Eq)]
struct Origin(std::thread::ThreadId);

#[cfg(not(all(target_family = "wasm", not(target_feature = "atomics"))))]
impl Origin {
    fn here() -> Self {
        Origin(std::thread::current().id())
    }
}

/// Where a program has one thread every wrapper was made on it.
#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
#[derive(Clone, Copy, PartialEq, Eq)]
struct Origin;

#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
impl Origin {
    fn here() -> Self {
        Origin
    }
}

/// A value usable only on the thread that wrapped it; see the crate's
/// documentation.
pub struct SendWrapper<T> {
    value: ManuallyDrop<T>,
    origin: Origin,
}

// SAFETY: the value is reached, and dropped, only on the thread that made
// the wrapper: every way to it checks `valid` first and panics otherwise,
// and a value that cannot be dropped on its thread is leaked, never dropped
// elsewhere. Where the target has one thread there is no elsewhere.
unsafe impl<T> Send for SendWrapper<T> {}
// SAFETY: as for `Send`: a shared reference elsewhere cannot reach the value.
unsafe impl<T> Sync for SendWrapper<T> {}

impl<T> SendWrapper<T> {
    /// Wraps `value`, which then belongs to the calling thread.
    pub fn new(value: T) -> SendWrapper<T> {
        SendWrapper { value: ManuallyDrop::new(value), origin: Origin::here() }
    }

    /// Whether the calling thread may use the value: it made the wrapper.
    pub fn valid(&self) -> bool {
        self.origin == Origin::here()
    }

    /// The value, unwrapped. Panics on another thread than the one that
    /// made the wrapper.
    pub fn take(self) -> T {
        self.check("take the value of");
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped, so the value is moved out once.
        unsafe { ManuallyDrop::take(&mut this.value) }
    }

    fn check(&self, what: &str) {
        if !self.valid() {
            panic!("tried to {what} a SendWrapper on another thread than the one that made it");
        }
    }
}

impl<T> Deref for SendWrapper<T> {
    type Target = T;

    /// Panics on another thread than the one that made the wrapper.
    fn deref(&self) -> &T {
        self.check("use");
        &self.value
    }
}

impl<T> DerefMut for SendWrapper<T> {
    /// Panics on another thread than the one that made the wrapper.
    fn deref_mut(&mut self) -> &mut T {
        self.check("use");
        &mut self.value
    }
}

impl<T> Drop for SendWrapper<T> {
    /// Drops the value on its own thread. A value without a destructor may
    /// go anywhere; one with a destructor panics on another thread, or is
    /// leaked there if the thread is already panicking (a second panic would
    /// abort the program).
    fn drop(&mut self) {
        if !std::mem::needs_drop::<T>() || self.valid() {
            // SAFETY: the value is dropped here once and not touched after.
            unsafe { ManuallyDrop::drop(&mut self.value) };
        } else if !std::thread::panicking() {
            panic!("dropped a SendWrapper on another thread than the one that made it");
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for SendWrapper<T> {
    /// Panics on another thread than the one that made the wrapper.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendWrapper").field("value", self.deref()).finish()
    }
}

impl<T: Clone> Clone for SendWrapper<T> {
    /// A wrapper of a clone, made by (and so belonging to) the calling
    /// thread, which must be the one that made this wrapper.
    fn clone(&self) -> Self {
        SendWrapper::new(self.deref().clone())
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;
    use std::sync::Arc;

    use super::SendWrapper;

    #[test]
    fn the_value_is_reached_and_dropped_on_its_own_thread() {
        let counted = Rc::new(());
        let wrapper = SendWrapper::new(counted.clone());
        assert!(wrapper.valid());
        assert_eq!(Rc::strong_count(&wrapper), 2);
        let copy = wrapper.clone();
        assert_eq!(Rc::strong_count(&counted), 3);
        drop(copy);
        assert_eq!(Rc::strong_count(&counted), 2);
        let taken = wrapper.take();
        assert_eq!(Rc::strong_count(&taken), 2);
        drop(taken);
        assert_eq!(Rc::strong_count(&counted), 1);
    }

    #[test]
    fn another_thread_may_hold_it_but_not_reach_it() {
        let wrapper = Arc::new(SendWrapper::new(Rc::new(7)));
        let elsewhere = wrapper.clone();
        let outcome = std::thread::spawn(move || {
            assert!(!elsewhere.valid());
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ***elsewhere)).is_err()
        })
        .join()
        .unwrap();
        assert!(outcome, "reading the value on another thread panics");
        assert_eq!(***wrapper, 7, "and it is still there on its own");
    }

    #[test]
    fn a_value_with_a_destructor_is_not_dropped_on_another_thread() {
        let wrapper = SendWrapper::new(Rc::new(()));
        let panicked = std::thread::spawn(move || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(wrapper))).is_err()
        })
        .join()
        .unwrap();
        assert!(panicked);
        // A value without one may go anywhere.
        let plain = SendWrapper::new(5_u32);
        std::thread::spawn(move || drop(plain)).join().unwrap();
    }
}
