// SPDX-License-Identifier: GPL-2.0

//! What the driver counts of a controller's work, and the debugfs files that show it, one number
//! a file, in `/sys/kernel/debug/rsnvme<C>/counters/`: what a test or a developer reads, where the
//! kernel log is for people.

use core::sync::atomic::{AtomicU64, Ordering};

use kernel::{
    debugfs::{Dir, Scope, ScopedDir},
    fmt,
    prelude::*,
    str::CString,
    sync::Arc,
};

/// One I/O queue's counts. The submission counts are written only under the queue's submission
/// lock and the completion count only by the queue's one completion user at a time, so a load and
/// a store count exactly, with no locked instruction per I/O ([`bump`]).
#[derive(Default)]
pub(crate) struct QueueCounters {
    /// Read and write commands sent with PRPs, with SGLs (the two add up to all), and with FUA.
    pub(crate) prp_commands: AtomicU64,
    pub(crate) sgl_commands: AtomicU64,
    pub(crate) fua_commands: AtomicU64,
    /// Dataset Management commands sent, and their ranges.
    pub(crate) dsm_commands: AtomicU64,
    pub(crate) dsm_ranges: AtomicU64,
    /// Completions that named no request of that generation in flight.
    pub(crate) ignored_completions: AtomicU64,
}

impl QueueCounters {
    /// Zero counts.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Ok(Arc::new(Self::default(), GFP_KERNEL)?)
    }
}

/// A controller's counts of what happens to it as a whole.
#[derive(Default)]
pub(crate) struct ControllerCounters {
    /// Resets begun: asked for (`nvme reset`, sysfs) or after a timeout; a resume is not one.
    pub(crate) resets: AtomicU64,
    /// Commands in flight at a reset, sent again after it.
    pub(crate) requeued_commands: AtomicU64,
    /// I/O timeouts whose completion the handler's own poll found: its interrupt was lost.
    pub(crate) polled_timeouts: AtomicU64,
    /// I/O timeouts that reset the controller: the command timed out a second time.
    pub(crate) timeout_resets: AtomicU64,
    /// I/O timeouts on a controller already declared dead, left to the cancelling.
    pub(crate) dead_timeouts: AtomicU64,
    /// Resumes from system sleep.
    pub(crate) resumes: AtomicU64,
}

impl ControllerCounters {
    /// Zero counts.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Ok(Arc::new(Self::default(), GFP_KERNEL)?)
    }
}

/// Adds one to `counter`, which one thread at a time writes.
#[inline]
pub(crate) fn bump(counter: &AtomicU64) {
    bump_by(counter, 1);
}

/// Adds `n` to `counter`, which one thread at a time writes.
#[inline]
pub(crate) fn bump_by(counter: &AtomicU64, n: u64) {
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(n),
        Ordering::Relaxed,
    );
}

/// What a controller's counter files show.
struct Shown {
    controller: Arc<ControllerCounters>,
    queues: KVec<Arc<QueueCounters>>,
}

impl Shown {
    /// The sum over the I/O queues of the count `which` picks.
    fn sum(&self, which: fn(&QueueCounters) -> &AtomicU64) -> u64 {
        self.queues
            .iter()
            .map(|queue| which(queue).load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }
}

/// Defines a debugfs read callback for each named [`QueueCounters`] field, showing its sum.
macro_rules! queue_sums {
    ($($field:ident),* $(,)?) => {
        $(
            fn $field(shown: &Shown, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                writeln!(f, "{}", shown.sum(|queue| &queue.$field))
            }
        )*
    };
}

queue_sums!(
    prp_commands,
    sgl_commands,
    fua_commands,
    dsm_commands,
    dsm_ranges,
    ignored_completions,
);

/// A controller's counter files, removed when dropped.
pub(crate) struct CounterFiles {
    _scope: Pin<KBox<Scope<Shown>>>,
}

impl CounterFiles {
    /// Shows the counts of controller number `instance` and of its I/O queues. Without debugfs
    /// (or if it fails) there are no files, as with every debugfs user.
    pub(crate) fn new(
        instance: u32,
        controller: Arc<ControllerCounters>,
        queues: KVec<Arc<QueueCounters>>,
    ) -> Result<Self> {
        let name = CString::try_from_fmt(fmt!("rsnvme{instance}"))?;
        // The scope's directory holds its parent.
        let dir = Dir::new(&name);
        let shown = Shown { controller, queues };
        let scope = KBox::pin_init(dir.scope(shown, c"counters", create_files), GFP_KERNEL)?;
        Ok(Self { _scope: scope })
    }
}

/// Creates the files of `shown` in `dir`.
fn create_files<'data>(shown: &'data Shown, dir: &ScopedDir<'data, '_>) {
    let controller = &*shown.controller;
    dir.read_only_file(c"resets", &controller.resets);
    dir.read_only_file(c"requeued_commands", &controller.requeued_commands);
    dir.read_only_file(c"polled_timeouts", &controller.polled_timeouts);
    dir.read_only_file(c"timeout_resets", &controller.timeout_resets);
    dir.read_only_file(c"dead_timeouts", &controller.dead_timeouts);
    dir.read_only_file(c"resumes", &controller.resumes);
    dir.read_callback_file(c"prp_commands", shown, &prp_commands);
    dir.read_callback_file(c"sgl_commands", shown, &sgl_commands);
    dir.read_callback_file(c"fua_commands", shown, &fua_commands);
    dir.read_callback_file(c"dsm_commands", shown, &dsm_commands);
    dir.read_callback_file(c"dsm_ranges", shown, &dsm_ranges);
    dir.read_callback_file(c"ignored_completions", shown, &ignored_completions);
}
