//! The host's cores, shared out between the scenarios of one test run.
//!
//! TCG turns every busy vCPU into a busy host thread. Most scenarios keep one core busy (one VM at
//! work, or two taking turns), so two of them share a two-core machine without slowing each other
//! much; a scenario whose guests measure time, or that keeps every core busy, asks for them all.
//! Scenarios are served in the order they asked, so one that wants every core is not passed over
//! for as long as smaller ones keep arriving.

use std::sync::{Condvar, Mutex};

/// Cores held by a scenario, or by a test's own work outside one (module builds); they go back
/// when this is dropped. A test drops its own before it runs a scenario, which takes its cores
/// itself.
pub struct Cores {
    count: usize,
}

struct Ledger {
    /// Cores held by scenarios now.
    taken: usize,
    /// The ticket of the next request to be served, and the ticket the next request gets.
    serving: u64,
    next: u64,
}

static LEDGER: Mutex<Ledger> = Mutex::new(Ledger {
    taken: 0,
    serving: 0,
    next: 0,
});
static RETURNED: Condvar = Condvar::new();

/// The host's cores: what the scheduler lets this process use.
pub(crate) fn total() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

impl Cores {
    /// Waits for `wanted` cores (at most all of them) after every earlier request has been served.
    pub fn take(wanted: usize) -> Cores {
        let total = total();
        let count = wanted.clamp(1, total);
        let mut ledger = LEDGER.lock().unwrap_or_else(|e| e.into_inner());
        let ticket = ledger.next;
        ledger.next += 1;
        let mut ledger = RETURNED
            .wait_while(ledger, |ledger| {
                ledger.serving != ticket || ledger.taken + count > total
            })
            .unwrap_or_else(|e| e.into_inner());
        ledger.taken += count;
        ledger.serving += 1;
        // The next in line may fit in what is left.
        RETURNED.notify_all();
        Cores { count }
    }
}

impl Drop for Cores {
    fn drop(&mut self) {
        LEDGER.lock().unwrap_or_else(|e| e.into_inner()).taken -= self.count;
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
