// SPDX-License-Identifier: GPL-2.0

//! The rings of an open interface, installed by `ndo_open` and removed by `ndo_stop`, and shared
//! without a lock by `ndo_start_xmit` and the NAPI poll.

use core::cell::UnsafeCell;

use crate::rx::RxRing;
use crate::tx::{TxConsumer, TxProducer, TxRing};

/// Both rings of an open interface, used without a lock: the transmit producer by
/// `ndo_start_xmit`, the transmit consumer and the receive ring by the NAPI poll.
///
/// # Invariants
///
/// `open` changes only in [`Rings::set`], while no reference from [`Rings::transmit`] or
/// [`Rings::poll`] exists; one [`TxProducer`] at a time comes from `transmit`, and one
/// [`TxConsumer`] and `&mut RxRing` at a time from `poll`.
pub(crate) struct Rings<'a> {
    open: UnsafeCell<Option<OpenRings<'a>>>,
}

struct OpenRings<'a> {
    tx: TxRing<'a>,
    rx: UnsafeCell<RxRing<'a>>,
}

// SAFETY: `transmit` and `poll` may run at once (on two CPUs, or a transmit nested in the poll):
// they share the transmit ring, which is `Sync`, through its two ends; the receive ring is the
// poll's alone; `set` runs while neither does (type invariant).
unsafe impl Sync for Rings<'_> {}

impl<'a> Rings<'a> {
    /// No rings: a closed interface.
    pub(crate) fn new() -> Self {
        Self {
            open: UnsafeCell::new(None),
        }
    }

    /// Installs the rings, or with `None` frees them.
    ///
    /// # Safety
    ///
    /// Neither [`Rings::transmit`] nor [`Rings::poll`] is called until this returns, nor is a value
    /// they returned still in use.
    pub(crate) unsafe fn set(&self, rings: Option<(TxRing<'a>, RxRing<'a>)>) {
        let rings = rings.map(|(tx, rx)| OpenRings {
            tx,
            rx: UnsafeCell::new(rx),
        });
        // SAFETY: Nothing else accesses `open` meanwhile (safety requirement).
        unsafe { *self.open.get() = rings };
    }

    /// The transmit ring's producer end, if the rings are installed.
    ///
    /// # Safety
    ///
    /// No other value this returned is in use: the caller is the queue's only transmitter (the
    /// stack serialises `ndo_start_xmit` with the queue's lock).
    pub(crate) unsafe fn transmit(&self) -> Option<TxProducer<'_, 'a>> {
        // SAFETY: `open` does not change while this is in use (safety requirement of `set`).
        let open = unsafe { (*self.open.get()).as_ref() }?;
        // SAFETY: The only producer (safety requirement).
        Some(unsafe { open.tx.producer() })
    }

    /// The transmit ring's consumer end and the receive ring, if the rings are installed.
    ///
    /// # Safety
    ///
    /// No other value this returned is in use: the caller is the only poller (NAPI polls one CPU at
    /// a time).
    #[expect(
        clippy::mut_from_ref,
        reason = "the receive ring is the only poller's, by the safety requirement"
    )]
    pub(crate) unsafe fn poll(&self) -> Option<(TxConsumer<'_, 'a>, &mut RxRing<'a>)> {
        // SAFETY: As in `transmit`.
        let open = unsafe { (*self.open.get()).as_ref() }?;
        // SAFETY: The only consumer and the only user of the receive ring (safety requirement).
        Some(unsafe { (open.tx.consumer(), &mut *open.rx.get()) })
    }
}
