//! Benchmark: nvme_rs against the C nvme driver in one boot, on identical controllers. The VM has
//! four NVMe controllers: two on QEMU's `null-co` backend and two on raw image files; of each pair,
//! one is bound to nvme_rs and one to the C driver. Every figure is measured on both drivers round
//! after round (the order alternating every round, and which controller of a pair each driver gets
//! every other round), so both see the same VM, boot, slots and host load; the figure reported is
//! the median of the per-round ratios. Within a round the two drivers take turns every
//! [`SLICE_SECONDS`] (`blkio bench ... SLICE`): the host's slow spells last longer than that, so
//! they fall on both alike instead of on whichever ran whole seconds during them. One `blkio`
//! process measures both, with the same buffers: how many segments a request has depends on
//! whether its buffer's pages are contiguous, so buffers of their own would give the two drivers
//! different work.
//!
//! The VM boots with kmemleak and DMA-API debugging off (`Vm::without_debug_checks`): on the test
//! kernel their stack walks were most of the instructions of a 4k read, for either driver.
//!
//! The tool runs on CPU 0, so that both drivers serve it from the same hardware queue and CPU.
//!
//! With `--instructions`, the VM counts guest instructions instead (`Vm::count`, a QEMU plugin) and
//! the figures are instructions per I/O: what each driver costs the guest's CPUs, exact where the
//! timings move by tens of percent from round to round. The counter slows the VM down, so
//! throughput is not reported then. `--count blocks|atomics|mmio` counts, per I/O, the events that
//! cost the emulator more than their instructions ([`harness::Counted`]).
//!
//! With `--control`, the C driver takes nvme_rs's controllers too: the ratios then show what the
//! method gives two identical drivers, its own bias and spread.
//!
//! Run through `scripts/bench-nvme.sh [--instructions | --count KIND] [--control] [ROUNDS]
//! [SECONDS]`.

use harness::{
    nvme::{self, BIND_ALTERNATELY},
    stats::Paired,
    BenchArgs, Drive, Env, Scenario, MIB,
};

/// The region each figure works on, pre-filled on the file backend.
const SPAN_MIB: u64 = 256;
/// How long each driver runs before the other takes its turn, when measuring throughput.
const SLICE_SECONDS: &str = "0.2";

/// One figure: what `blkio bench` runs and what it reports.
struct Figure {
    key: &'static str,
    label: &'static str,
    mode: &'static str,
    block_size: u32,
    queue_depth: u32,
    /// Read `iops=` rather than `mbps=`.
    iops: bool,
}

const FIGURES: [Figure; 4] = [
    Figure {
        key: "randread4k_qd1",
        label: "4k random read QD1 (IOPS)",
        mode: "randread",
        block_size: 4096,
        queue_depth: 1,
        iops: true,
    },
    Figure {
        key: "randread4k_qd32",
        label: "4k random read QD32 (IOPS)",
        mode: "randread",
        block_size: 4096,
        queue_depth: 32,
        iops: true,
    },
    Figure {
        key: "seqread128k",
        label: "128k seq read QD8 (MB/s)",
        mode: "seqread",
        block_size: 131072,
        queue_depth: 8,
        iops: false,
    },
    Figure {
        key: "seqwrite128k",
        label: "128k seq write QD8 (MB/s)",
        mode: "seqwrite",
        block_size: 131072,
        queue_depth: 8,
        iops: false,
    },
];

const BACKENDS: [&str; 2] = ["null", "file"];

/// The guest's part: both drivers, figure after figure, round after round.
const SCRIPT: &str = include_str!("../../guest/bench/nvme/dut.sh");

fn script(rounds: u32, seconds: u32, count: bool, control: bool) -> String {
    // The instruction counter marks each driver's whole run, so it needs them one after the other.
    let slice = if count { "" } else { SLICE_SECONDS };
    let rs_driver = if control { "nvme" } else { "nvme_rs" };
    let figures: Vec<String> = FIGURES
        .iter()
        .map(|f| {
            let field = if f.iops { "iops" } else { "mbps" };
            format!(
                "{}:{}:{}:{}:{field}",
                f.key, f.mode, f.block_size, f.queue_depth
            )
        })
        .collect();
    format!(
        "export ROUNDS={rounds} FIGURE_SECONDS={seconds} SLICE={slice} SPAN_MIB={SPAN_MIB} \
         COUNT={count} RS_DRIVER={rs_driver} BACKENDS='{}' FIGURES='{}'\n{SCRIPT}",
        BACKENDS.join(" "),
        figures.join(" "),
    )
}

fn main() {
    let args = BenchArgs::from_env(
        "bench-nvme.sh [--instructions | --count KIND] [--control] [ROUNDS [SECONDS]]",
        &["--control"],
        2,
    );
    let control = args.has("--control");
    let counted = args.counted;
    let count = counted.is_some();
    let rounds = args
        .numbers
        .first()
        .copied()
        .unwrap_or(if count { 2 } else { 11 });
    let seconds = args.numbers.get(1).copied().unwrap_or(2);
    let null = || vec![Drive::Null { size: 1024 * MIB }];
    let file = || vec![Drive::Raw { size: 1024 * MIB }];
    let mut vm = nvme::vm("dut")
        .nvme(null())
        .nvme(null())
        .nvme(file())
        .nvme(file())
        .without_debug_checks()
        .script(&format!(
            "{BIND_ALTERNATELY}{}",
            script(rounds, seconds, count, control)
        ))
        .timeout(std::time::Duration::from_secs(3600));
    if let Some(what) = counted {
        vm = vm.count(what);
    }
    let kernel = Env::get().unwrap_or_else(|e| panic!("{e}")).description();
    println!(
        "nvme benchmark on {kernel}: {rounds} rounds, {seconds} s per figure and driver{}, {SPAN_MIB} MiB \
         span, 2 vCPUs, blkio (Linux AIO, O_DIRECT), kmemleak and DMA-API debugging off{}",
        if count {
            String::new()
        } else {
            format!(" in turns of {SLICE_SECONDS} s")
        },
        counted.map_or(String::new(), |what| format!(
            "; guest {} per I/O (lower is better)",
            what.name()
        ))
    );
    let outcome = match Scenario::new("bench-nvme").vm(vm).run() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let dut = outcome.vm("dut");
    let marks = match count.then(|| dut.count_marks()).transpose() {
        Ok(marks) => marks.unwrap_or_default(),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    println!();
    if control {
        println!("control: the C nvme on nvme_rs's controllers (the ratio an equal driver gets)");
    }
    println!("{}", Paired::header("C nvme", "nvme_rs"));
    for backend in BACKENDS {
        for f in &FIGURES {
            let values = |driver: &str| -> Vec<f64> {
                (0..rounds)
                    .filter_map(|round| {
                        let get = |suffix: &str| {
                            dut.ktap
                                .diagnostic(&format!(
                                    "round{round}.{backend}.{}.{driver}{suffix}",
                                    f.key
                                ))
                                .and_then(|v| v.parse::<f64>().ok())
                        };
                        if !count {
                            return get("");
                        }
                        let ios = get(".ios").filter(|&ios| ios > 0.0)?;
                        Some(marks.run_ending_at(get(".mark")? as usize)? as f64 / ios)
                    })
                    .collect()
            };
            let paired = Paired {
                c: values("c"),
                rs: values("rs"),
            };
            if paired.c.len() != rounds as usize || paired.rs.len() != rounds as usize {
                eprintln!(
                    "{backend} {}: missing results; see {}",
                    f.key,
                    dut.console_log.display()
                );
                std::process::exit(1);
            }
            let label = match counted {
                Some(what) => f.label.replace(
                    if f.iops { "(IOPS)" } else { "(MB/s)" },
                    &format!("({}/IO)", what.name()),
                ),
                None => f.label.to_string(),
            };
            println!("{}", paired.line(&format!("{backend:<5} {label}")));
        }
    }
    // What each driver's disk got from the block layer and what reached it, in the last slots, and
    // where the interrupts went: causes of a difference to rule in or out.
    println!();
    for backend in BACKENDS {
        for (driver, name) in [("rs", "nvme_rs"), ("c", "C nvme")] {
            if let Some(settings) = dut.ktap.diagnostic(&format!("queue.{backend}.{driver}")) {
                println!("{backend:<5} {name:<8} queue (last slots): {settings}");
            }
            if let Some(stat) = dut.ktap.diagnostic(&format!("stat.{backend}.{driver}")) {
                println!("{backend:<5} {name:<8} stat (last slots): {stat}");
            }
        }
    }
    if let Some(interrupts) = dut.ktap.diagnostic("interrupts") {
        println!(
            "interrupts (IRQ:CPU0,CPU1:name): {}",
            interrupts.replace('|', " ")
        );
    }
}
