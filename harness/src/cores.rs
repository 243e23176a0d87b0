//! The host's cores, shared out between the scenarios of one test run.
//!
//! TCG turns every busy vCPU into a busy host thread. Most scenarios keep one core busy (one VM at
//! work, or two taking turns), so two of them share a two-core machine without slowing each other
//! much; a scenario whose guests measure time, or that keeps every core busy, asks for them all.
//! Requests are served in the order they came, the long ones (on the KASAN kernel or Debian's)
//! before the others, so that the run does not end on one long scenario alone; one that wants
//! every core is not passed over for as long as smaller ones of its kind keep arriving.

use std::sync::{Condvar, Mutex};

/// Cores held by a scenario, or by a test's own work outside one (module builds); they go back
/// when this is dropped. A test drops its own before it runs a scenario, which takes its cores
/// itself.
pub struct Cores {
    count: usize,
}

/// Which requests go first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Priority {
    Normal,
    /// A long scenario: served before every waiting normal request.
    Long,
}

struct Ledger {
    /// Cores held now.
    taken: usize,
    /// Requests waiting: priority, ticket, cores.
    waiting: Vec<(Priority, u64, usize)>,
    /// The ticket the next request gets.
    next: u64,
}

static LEDGER: Mutex<Ledger> = Mutex::new(Ledger {
    taken: 0,
    waiting: Vec::new(),
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
        Cores::take_as(wanted, Priority::Normal)
    }

    /// As [`Cores::take`], served after the earlier requests of `priority` and higher only.
    pub(crate) fn take_as(wanted: usize, priority: Priority) -> Cores {
        let count = wanted.clamp(1, total());
        let mut ledger = LEDGER.lock().unwrap_or_else(|e| e.into_inner());
        let ticket = ledger.next;
        ledger.next += 1;
        ledger.waiting.push((priority, ticket, count));
        let mut ledger = RETURNED
            .wait_while(ledger, |ledger| {
                let first = ledger
                    .waiting
                    .iter()
                    .min_by_key(|(p, t, _)| (std::cmp::Reverse(*p), *t))
                    .map(|&(_, t, _)| t);
                first != Some(ticket) || ledger.taken + count > total()
            })
            .unwrap_or_else(|e| e.into_inner());
        ledger.waiting.retain(|&(_, t, _)| t != ticket);
        ledger.taken += count;
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

    /// The ledger is the process's: one test at a time uses it.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

    #[test]
    fn long_requests_go_before_waiting_normal_ones() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let order = Arc::new(Mutex::new(Vec::new()));
        let first = Cores::take(total());
        let waiters: Vec<_> = [Priority::Normal, Priority::Long]
            .into_iter()
            .map(|priority| {
                let order = order.clone();
                let waiter = std::thread::spawn(move || {
                    let _cores = Cores::take_as(total(), priority);
                    order.lock().unwrap().push(priority);
                });
                std::thread::sleep(Duration::from_millis(50));
                waiter
            })
            .collect();
        drop(first);
        for waiter in waiters {
            waiter.join().unwrap();
        }
        assert_eq!(
            *order.lock().unwrap(),
            [Priority::Long, Priority::Normal],
            "the long one asked later and went first"
        );
    }

    #[test]
    fn never_more_than_the_host_has_and_first_come_first_served() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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
