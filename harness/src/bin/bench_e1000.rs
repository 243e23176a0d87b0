//! Benchmark: e1000_rs against the C e1000 on the same setup, in one run. Two VMs, each with two
//! e1000 NICs, joined by two socket links on 127.0.0.1; the peer runs the C e1000 on both. On the
//! DUT one NIC is bound to e1000_rs and the other to the C e1000 (which one swaps every other
//! round, so that neither driver always has the same slot and link), and the two take turns
//! within a round: [`TURNS`] times each, in the order ABBA ..., a ping burst, a transfer to the
//! peer and one back. The host's slow spells last seconds, so in turns they fall on both drivers
//! alike instead of on whichever ran a whole 32 MiB during them. The figure reported is the
//! median of the per-round ratios (`harness::stats`). Each round also starts with pings that
//! alternate between the two links (`pingpair`): both drivers' round trips at the same moments,
//! in the steady state rather than right after a transfer. Both VMs boot with kmemleak and DMA-API
//! debugging off (`Vm::without_debug_checks`), as a benchmark should.
//!
//! Each round measures e1000_rs three ways (its default, `rx_copy=1`, `tx_copy=1 rx_copy=1`),
//! each against the C driver in turns with it; with `--default-only`, only the default, so that the
//! same time buys three times the rounds for the figures the driver is judged by. With
//! `--control`, the C driver takes e1000_rs's place: the ratios then show what the method gives two
//! identical drivers, its own bias and spread.
//!
//! With `--instructions`, the DUT counts guest instructions instead (`Vm::count`, a QEMU plugin),
//! and the figures are what each driver costs the DUT's CPUs: instructions per MiB sent and
//! received and per ping, exact where the timings move by tens of percent between rounds. The
//! drivers then take one turn each per round: the counts need no interleaving.
//! `--count blocks|atomics|mmio` counts the events that cost the emulator more than their
//! instructions ([`harness::Counted`]).
//!
//! Run through `scripts/bench-e1000.sh [--instructions | --count KIND] [--default-only | --control]
//! [ROUNDS]`.

use harness::{stats::Paired, BenchArgs, Env, Scenario, SocketLink, Vm};

/// MiB each way per round and driver, and pings per round and driver, split over the turns.
const MIB: u32 = 32;
const PINGS: u32 = 200;
/// Turns per round and driver when measuring time.
const TURNS: u32 = 4;
/// vCPUs per VM, unless `--two-cpus`.
const CPUS: u32 = 1;

/// An e1000_rs configuration: name, module parameters, title.
type Variant = (&'static str, &'static str, &'static str);

/// The control (`--control`): the C driver in e1000_rs's place, so that the ratios show what the
/// method itself gives two identical drivers.
const CONTROL: Variant = (
    "control",
    "",
    "control: the C e1000 in e1000_rs's place (the ratio an equal driver gets)",
);

/// The e1000_rs configurations measured, the default first.
const VARIANTS: [Variant; 3] = [
    (
        "rs",
        "",
        "e1000_rs (default: streaming DMA both ways, skbs out, page fragments in)",
    ),
    (
        "rs_rxcopy",
        "rx_copy=1",
        "e1000_rs rx_copy=1 (receive copies out of coherent buffers, transmit maps)",
    ),
    (
        "rs_copy",
        "tx_copy=1 rx_copy=1",
        "e1000_rs tx_copy=1 rx_copy=1 (frames copied through coherent buffers both ways)",
    ),
];

/// What both VMs' scripts start with: their two NICs, and a way to bring one up.
const NICS: &str = include_str!("../../guest/bench/e1000/nics.sh");
/// The DUT's part: e1000_rs and the C e1000 taking turns.
const DUT_SCRIPT: &str = include_str!("../../guest/bench/e1000/dut.sh");
/// The peer's part: the C e1000, the other end of every transfer.
const PEER_SCRIPT: &str = include_str!("../../guest/bench/e1000/peer.sh");

fn dut_script(variants: &[Variant], rounds: u32, turns: u32, count: bool) -> String {
    let variants: String = variants
        .iter()
        .map(|(name, params, _)| format!("{name}:{} ", params.replace(' ', ",")))
        .collect();
    format!(
        "export ROUNDS={rounds} TURNS={turns} CHUNK_MIB={} PINGS={} PAIRS={PINGS} COUNT={count} \
         VARIANTS='{variants}'\n{NICS}{DUT_SCRIPT}",
        MIB / turns,
        PINGS / turns,
    )
}

fn peer_script(variants: usize, rounds: u32, turns: u32) -> String {
    format!(
        "export CHUNK_MIB={} PER_LINK={}\n{NICS}{PEER_SCRIPT}",
        MIB / turns,
        rounds * variants as u32 * turns,
    )
}

/// Bytes and seconds from netpipe's "bytes=N seconds=S".
fn transferred(report: &str) -> Option<(f64, f64)> {
    let mut bytes = None;
    let mut seconds = None;
    for field in report.split_whitespace() {
        if let Some(b) = field.strip_prefix("bytes=") {
            bytes = b.parse::<f64>().ok();
        } else if let Some(s) = field.strip_prefix("seconds=") {
            seconds = s.parse::<f64>().ok();
        }
    }
    Some((bytes?, seconds?))
}

/// The C driver's and e1000_rs's mean round trips (ms) in one round's alternating pings.
fn paired_rtt(dut: &harness::VmOutcome, round: u32, name: &str) -> Option<(f64, f64)> {
    let report = dut.ktap.diagnostic(&format!("round{round}.{name}.pair"))?;
    let rs_link = dut
        .ktap
        .diagnostic(&format!("round{round}.{name}.rs_link"))?;
    let field = |key: &str| {
        report
            .split_whitespace()
            .find_map(|f| f.strip_prefix(key))?
            .parse::<f64>()
            .ok()
    };
    let (a, b) = (field("a_us=")? / 1e3, field("b_us=")? / 1e3);
    let lost = field("a_lost=")? + field("b_lost=")?;
    if lost > 0.0 {
        eprintln!("round {round} {name}: {lost} alternating pings got no reply within 1 s");
    }
    Some(if rs_link == "a" { (b, a) } else { (a, b) })
}

/// MB/s over several transfers: all their bytes over all their time.
fn mbps(transfers: &[(f64, f64)]) -> f64 {
    let (bytes, seconds) = transfers
        .iter()
        .fold((0.0, 0.0), |(b, s), (tb, ts)| (b + tb, s + ts));
    bytes / seconds / 1e6
}

fn main() {
    let args = BenchArgs::from_env(
        "bench-e1000.sh [--instructions | --count KIND] [--default-only | --control] [--two-cpus] \
         [ROUNDS]",
        &["--default-only", "--control", "--two-cpus"],
        1,
    );
    let cpus = if args.has("--two-cpus") { 2 } else { CPUS };
    let kernel = Env::get().unwrap_or_else(|e| panic!("{e}")).description();
    let counted = args.counted;
    let count = counted.is_some();
    let control = [CONTROL];
    let variants = if args.has("--control") {
        &control[..]
    } else if args.has("--default-only") {
        &VARIANTS[..1]
    } else {
        &VARIANTS[..]
    };
    let rounds = args
        .numbers
        .first()
        .copied()
        .unwrap_or(if count { 2 } else { 7 });
    let turns = if count { 1 } else { TURNS };
    let links = [
        SocketLink::new().expect("free ports"),
        SocketLink::new().expect("free ports"),
    ];
    let mut dut = Vm::new("dut")
        .cpus(cpus)
        .memory_mib(768)
        .module("drivers/e1000_rs")
        .kernel_module("drivers/net/ethernet/intel/e1000/e1000.ko")
        .tool("netpipe")
        .tool("pingpair")
        .nic("e1000", links[0].end_a())
        .nic("e1000", links[1].end_a())
        .without_debug_checks()
        .script(&dut_script(variants, rounds, turns, count))
        .timeout(std::time::Duration::from_secs(1800));
    if let Some(what) = counted {
        dut = dut.count(what);
    }
    let peer = Vm::new("peer")
        .cpus(cpus)
        .memory_mib(768)
        .kernel_module("drivers/net/ethernet/intel/e1000/e1000.ko")
        .tool("netpipe")
        .nic("e1000", links[0].end_b())
        .nic("e1000", links[1].end_b())
        .without_debug_checks()
        .script(&peer_script(variants.len(), rounds, turns))
        .timeout(std::time::Duration::from_secs(1800));
    println!(
        "e1000 benchmark on {kernel}: {rounds} rounds, {MIB} MiB each way and {PINGS} pings per \
         round and driver, {}, {cpus} vCPU(s) per VM, kmemleak and DMA-API debugging off{}",
        if count {
            "the drivers one after the other".to_string()
        } else {
            format!("the drivers taking {TURNS} turns each")
        },
        counted.map_or(String::new(), |what| format!(
            "; guest {} on the DUT (lower is better)",
            what.name()
        ))
    );
    let outcome = match Scenario::new("bench-e1000").vm(dut).vm(peer).run() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let (dut, peer) = (outcome.vm("dut"), outcome.vm("peer"));
    // Frames the host dropped between the VMs (TCP resends them, at a cost in time).
    match links
        .iter()
        .map(SocketLink::dropped)
        .sum::<harness::Result<u64>>()
    {
        Ok(dropped) => println!("frames the host dropped on the links: {dropped}"),
        Err(e) => eprintln!("{e}"),
    }
    let marks = match count.then(|| dut.count_marks()).transpose() {
        Ok(marks) => marks.unwrap_or_default(),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    // Figures per Rust variant: TX, RX, RTT, each paired with the C driver's in the same turns,
    // and without counting, the RTT of the alternating pings.
    let mut figures: Vec<[Paired; 4]> = variants.iter().map(|_| Default::default()).collect();
    for round in 0..rounds {
        for (variant, (name, _, _)) in variants.iter().enumerate() {
            // One driver's figures over its turns of this round and variant.
            let measured = |who: &str| -> Option<[f64; 3]> {
                let mut sent = Vec::new();
                let mut received = Vec::new();
                let mut rtt = 0.0;
                // Counts of the runs ending at the marks noted as `key`, summed over turns.
                let mut events = [0u64; 3];
                for turn in 0..turns {
                    let figure = |key: &str| {
                        dut.ktap
                            .diagnostic(&format!("round{round}.{name}.{who}.turn{turn}.{key}"))
                    };
                    if count {
                        for (sum, key) in events.iter_mut().zip(["tx_mark", "rx_mark", "ping_mark"])
                        {
                            *sum += marks.run_ending_at(figure(key)?.parse().ok()?)?;
                        }
                    } else {
                        sent.push(transferred(
                            peer.ktap
                                .diagnostic(&format!("{}.tx", figure("transfer")?))?,
                        )?);
                        received.push(transferred(figure("rx")?)?);
                        rtt += figure("rtt_ms")?.parse::<f64>().ok()? / f64::from(turns);
                    }
                }
                Some(if count {
                    [
                        events[0] as f64 / f64::from(MIB),
                        events[1] as f64 / f64::from(MIB),
                        events[2] as f64 / f64::from(PINGS),
                    ]
                } else {
                    [mbps(&sent), mbps(&received), rtt]
                })
            };
            let (Some(c), Some(rs)) = (measured("c"), measured(name)) else {
                eprintln!(
                    "round {round} {name}: missing results; see {}",
                    dut.console_log.display()
                );
                std::process::exit(1);
            };
            for k in 0..3 {
                figures[variant][k].c.push(c[k]);
                figures[variant][k].rs.push(rs[k]);
            }
            if !count {
                let Some((c, rs)) = paired_rtt(dut, round, name) else {
                    eprintln!(
                        "round {round} {name}: missing alternating pings; see {}",
                        dut.console_log.display()
                    );
                    std::process::exit(1);
                };
                figures[variant][3].c.push(c);
                figures[variant][3].rs.push(rs);
            }
        }
    }
    let labels = match counted {
        Some(what) => [
            format!("TCP DUT -> peer ({}/MiB)", what.name()),
            format!("TCP peer -> DUT ({}/MiB)", what.name()),
            format!("ping ({}/round trip)", what.name()),
        ],
        None => [
            "TCP DUT -> peer (MB/s)".to_string(),
            "TCP peer -> DUT (MB/s)".to_string(),
            "ping RTT (ms, lower is better)".to_string(),
        ],
    };
    let mut labels = labels.to_vec();
    if !count {
        labels.push("ping RTT alternating (ms)".to_string());
    }
    for (variant, (_, _, title)) in variants.iter().enumerate() {
        println!();
        println!("{title}");
        println!("{}", Paired::header("C e1000", "e1000_rs"));
        for (k, label) in labels.iter().enumerate() {
            println!("{}", figures[variant][k].line(label));
        }
    }
}
