//! Finds reports of kernel problems in a console log.

/// One report found in a kernel log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// What kind of report it is.
    pub kind: &'static str,
    /// 1-based line number in the log.
    pub line: usize,
    /// The line itself.
    pub text: String,
}

/// The kind of a `WARNING:` report, the one kind that a scenario may excuse.
const WARNING: &str = "WARNING";

/// Markers of reports that fail any scenario, with the kind each one stands for.
const MARKERS: &[(&str, &str)] = &[
    // The KASAN kernel's checkers first: their reports also start with BUG: or WARNING:, which a
    // scenario could excuse.
    ("KASAN", "BUG: KASAN:"),
    (
        "sleep in atomic context",
        "BUG: sleeping function called from invalid context",
    ),
    ("sleep in atomic context", "BUG: scheduling while atomic"),
    ("lockdep", "WARNING: possible circular locking dependency"),
    ("lockdep", "WARNING: possible recursive locking detected"),
    ("lockdep", "WARNING: inconsistent lock state"),
    ("lockdep", "WARNING: suspicious RCU usage"),
    (
        "lockdep",
        "WARNING: HARDIRQ-safe -> HARDIRQ-unsafe lock order detected",
    ),
    (
        "lockdep",
        "WARNING: SOFTIRQ-safe -> SOFTIRQ-unsafe lock order detected",
    ),
    ("lockdep", "WARNING: bad unlock balance detected"),
    ("lockdep", "WARNING: lock held when returning to user space"),
    ("lockdep", "DEBUG_LOCKS_WARN_ON"),
    ("list corruption", "list_add corruption"),
    ("list corruption", "list_del corruption"),
    ("refcount", "refcount_t: "),
    ("debug objects", "ODEBUG: "),
    ("Oops", "Oops:"),
    ("BUG", "BUG:"),
    ("BUG", "kernel BUG at"),
    (WARNING, "WARNING:"),
    ("DMA-API", "DMA-API:"),
    ("kmemleak", "kmemleak: unreferenced object"),
    ("panic", "Kernel panic"),
    ("general protection fault", "general protection fault"),
    ("RCU stall", "rcu_sched detected stalls"),
    ("hung task", "blocked for more than"),
    // A receive checksum a driver reported that the stack found wrong (netdev_rx_csum_fault).
    ("receive checksum", "hw csum failure"),
];

/// Lines that contain a marker but report nothing wrong: DMA-API debugging announcing itself at
/// boot, or that a benchmark turned it off (`Vm::without_debug_checks`).
const BENIGN: &[&str] = &[
    "DMA-API: preallocated",
    "DMA-API: debugging enabled by kernel config",
    "DMA-API: debugging disabled on kernel command line",
];

/// A kernel warning that a scenario knows to come from Linux itself rather than from what it
/// tests: a `WARNING:` line containing `at`, excused only when the report's call trace passes
/// through the function `through`. See `Vm::known_kernel_warning`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownWarning {
    /// Part of the `WARNING:` line, e.g. `fs/proc/generic.c:742 at remove_proc_entry`.
    pub at: String,
    /// A function in the report's call trace.
    pub through: String,
}

/// How far after its `WARNING:` line a report's call trace is looked for.
const REPORT_LINES: usize = 80;

/// Every problem report in `log`, in order.
pub fn problems(log: &str) -> Vec<Problem> {
    problems_except(log, &[])
}

/// Every problem report in `log`, in order, but for the `known` warnings.
pub fn problems_except(log: &str, known: &[KnownWarning]) -> Vec<Problem> {
    let lines: Vec<&str> = log.lines().collect();
    lines
        .iter()
        .enumerate()
        .filter(|(_, line)| !BENIGN.iter().any(|b| line.contains(b)))
        .filter_map(|(i, line)| {
            MARKERS
                .iter()
                .find(|(_, marker)| line.contains(marker))
                .map(|(kind, _)| Problem {
                    kind,
                    line: i + 1,
                    text: line.trim_end().to_string(),
                })
        })
        // `line` is 1-based: the slice starts after the warning's own line.
        .filter(|p| !(p.kind == WARNING && is_known(&lines[p.line..], &p.text, known)))
        .collect()
}

/// Whether the warning `line`, followed in the log by `after`, is one of the `known`: its report
/// (up to the end of its trace) has a reliable frame (not one marked `?`) in `through`.
fn is_known(after: &[&str], line: &str, known: &[KnownWarning]) -> bool {
    let candidates: Vec<&KnownWarning> = known.iter().filter(|k| line.contains(&k.at)).collect();
    if candidates.is_empty() {
        return false;
    }
    let frames: Vec<&str> = after
        .iter()
        .take(REPORT_LINES)
        .take_while(|l| !l.contains("---[ end trace"))
        .filter_map(|l| l.split_once("] ").map(|(_, rest)| rest.trim_start()))
        .filter_map(|rest| rest.split_whitespace().next())
        .collect();
    candidates.iter().any(|k| {
        let frame = format!("{}+", k.through);
        frames.iter().any(|f| f.starts_with(&frame))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_kind() {
        let log = "[    1.0] ok\n[    2.0] WARNING: CPU: 0 PID: 1 at foo\n[ 3.0] DMA-API: device driver frees DMA memory with wrong function\n[4.0] kmemleak: unreferenced object 0xffff (size 64):\n[5.0] eth0: hw csum failure\n";
        let found = problems(log);
        let kinds: Vec<_> = found.iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            ["WARNING", "DMA-API", "kmemleak", "receive checksum"]
        );
        assert_eq!(found[0].line, 2);
    }

    #[test]
    fn a_known_warning_is_excused_only_through_its_caller() {
        let report = |via: &str| {
            format!(
                "[1.0] ------------[ cut here ]------------\n\
                 [1.0] WARNING: fs/proc/generic.c:742 at remove_proc_entry+0x9e/0x111, CPU#1\n\
                 [1.0] Call Trace:\n[1.0]  <TASK>\n[1.0]  {via}+0x60/0xee\n\
                 [1.0]  free_desc+0x1c/0xc3\n[1.0] ---[ end trace 0000000000000000 ]---\n\
                 [2.0]  unregister_irq_proc+0x60/0xee\n"
            )
        };
        let known = [KnownWarning {
            at: "fs/proc/generic.c:742 at remove_proc_entry".to_string(),
            through: "unregister_irq_proc".to_string(),
        }];
        assert!(problems_except(&report("unregister_irq_proc"), &known).is_empty());
        // Another caller, an unreliable frame, or the function named only after the report ended,
        // is not excused.
        assert_eq!(
            problems_except(&report("? unregister_irq_proc"), &known).len(),
            1
        );
        assert_eq!(
            problems_except(&report("my_driver_remove"), &known).len(),
            1
        );
        assert_eq!(problems(&report("unregister_irq_proc")).len(), 1);
    }

    #[test]
    fn names_the_kasan_kernels_checkers() {
        let log = "[1.0] BUG: KASAN: slab-use-after-free in nvme_rs::io::complete+0x1/0x2\n\
                   [2.0] BUG: sleeping function called from invalid context at mm/slub.c:4200\n\
                   [3.0] WARNING: possible circular locking dependency detected\n\
                   [4.0] refcount_t: underflow; use-after-free.\n[5.0] ODEBUG: free active (active state 0)\n";
        let kinds: Vec<_> = problems(log).iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            [
                "KASAN",
                "sleep in atomic context",
                "lockdep",
                "refcount",
                "debug objects"
            ]
        );
        // A lockdep report is never excused as a known warning.
        let known = [KnownWarning {
            at: "possible".to_string(),
            through: "anything".to_string(),
        }];
        assert_eq!(problems_except(log, &known).len(), 5);
    }

    #[test]
    fn a_clean_log_has_none() {
        let log = "[0.0] Linux version 7.3\n[0.9] DMA-API: preallocated 65536 debug entries\n\
                   [0.9] DMA-API: debugging enabled by kernel config\n[1.0] e1000: eth0 NIC Link is Up\n\
                   [0.1] DMA-API: debugging disabled on kernel command line\n";
        assert!(problems(log).is_empty(), "{:?}", problems(log));
    }
}
