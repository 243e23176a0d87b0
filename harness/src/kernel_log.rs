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

/// Markers of reports that fail any scenario, with the kind each one stands for.
const MARKERS: &[(&str, &str)] = &[
    ("Oops", "Oops:"),
    ("BUG", "BUG:"),
    ("BUG", "kernel BUG at"),
    ("WARNING", "WARNING:"),
    ("DMA-API", "DMA-API:"),
    ("kmemleak", "kmemleak: unreferenced object"),
    ("panic", "Kernel panic"),
    ("general protection fault", "general protection fault"),
    ("lockdep", "possible circular locking dependency"),
    ("RCU stall", "rcu_sched detected stalls"),
    ("hung task", "blocked for more than"),
    // A receive checksum a driver reported that the stack found wrong (netdev_rx_csum_fault).
    ("receive checksum", "hw csum failure"),
];

/// Lines that contain a marker but report nothing wrong: DMA-API debugging announcing itself at boot,
/// or that a benchmark turned it off (`Vm::without_debug_checks`).
const BENIGN: &[&str] = &[
    "DMA-API: preallocated",
    "DMA-API: debugging enabled by kernel config",
    "DMA-API: debugging disabled on kernel command line",
];

/// Every problem report in `log`, in order.
pub fn problems(log: &str) -> Vec<Problem> {
    log.lines()
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
        .collect()
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
    fn a_clean_log_has_none() {
        let log = "[0.0] Linux version 7.3\n[0.9] DMA-API: preallocated 65536 debug entries\n\
                   [0.9] DMA-API: debugging enabled by kernel config\n[1.0] e1000: eth0 NIC Link is Up\n\
                   [0.1] DMA-API: debugging disabled on kernel command line\n";
        assert!(problems(log).is_empty(), "{:?}", problems(log));
    }
}
