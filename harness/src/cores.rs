//! The host's cores, shared out between the scenarios of one test run.
//!
//! TCG turns every busy vCPU into a busy host thread. Most scenarios keep one core busy (one VM at
//! work, or two taking turns), so two of them share a two-core machine without slowing each other
//! much; a scenario whose guests measure time, or that keeps every core busy, asks for them all.
//! Scenarios are served in the order they asked, so one that wants every core is not passed over
//! for as long as smaller ones keep arriving.

use std::sync::{Condvar, Mutex};

/// Cores held by a scenario; they go back when this is dropped.
pub(crate) struct Cores {
    count: usize,
}

struct Ledger {
    free: usize,
    /// The ticket of the next request to be served, and the ticket the next request gets.
    serving: u64,
    next: u64,
}

static LEDGER: Mutex<Option<Ledger>> = Mutex::new(None);
static RETURNED: Condvar = Condvar::new();

/// The host's cores: what the scheduler lets this process use.
pub(crate) fn total() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

impl Cores {
    /// Waits for `wanted` cores (at most all of them) after every earlier request has been served.
    pub(crate) fn take(wanted: usize) -> Cores {
        let count = wanted.clamp(1, total());
        let mut guard = LEDGER.lock().unwrap_or_else(|e| e.into_inner());
        let ledger = guard.get_or_insert_with(|| Ledger {
            free: total(),
            serving: 0,
            next: 0,
        });
        let ticket = ledger.next;
        ledger.next += 1;
        let mut guard = RETURNED
            .wait_while(guard, |ledger| {
                let ledger = ledger.as_ref().expect("initialised above");
                ledger.serving != ticket || ledger.free < count
            })
            .unwrap_or_else(|e| e.into_inner());
        let ledger = guard.as_mut().expect("initialised above");
        ledger.free -= count;
        ledger.serving += 1;
        // The next in line may fit in what is left.
        RETURNED.notify_all();
        Cores { count }
    }
}

impl Drop for Cores {
    fn drop(&mut self) {
        let mut guard = LEDGER.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(ledger) = guard.as_mut() {
            ledger.free += self.count;
        }
        RETURNED.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn never_more_than_the_host_has_and_first_come_first_served() {
        let total = total();
        let in_use = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let order = Arc::new(Mutex::new(Vec::new()));
        let first = Cores::take(total);
        let waiters: Vec<_> = [total, 1, 1]
            .into_iter()
            .enumerate()
            .map(|(i, wanted)| {
                let (in_use, peak, order) = (in_use.clone(), peak.clone(), order.clone());
                let waiter = std::thread::spawn(move || {
                    let _cores = Cores::take(wanted);
                    order.lock().unwrap().push(i);
                    let now = in_use.fetch_add(wanted, Ordering::SeqCst) + wanted;
                    peak.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(50));
                    in_use.fetch_sub(wanted, Ordering::SeqCst);
                });
                // Each asks after the one before.
                std::thread::sleep(Duration::from_millis(50));
                waiter
            })
            .collect();
        assert!(
            order.lock().unwrap().is_empty(),
            "nothing runs while all are taken"
        );
        drop(first);
        for waiter in waiters {
            waiter.join().unwrap();
        }
        // The two that want one core each may start together, so only the first is certain.
        assert_eq!(
            order.lock().unwrap()[0],
            0,
            "the first to ask is served first"
        );
        assert_eq!(order.lock().unwrap().len(), 3);
        assert!(peak.load(Ordering::SeqCst) <= total);
    }
}
