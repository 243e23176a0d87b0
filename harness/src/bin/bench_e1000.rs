//! Benchmark: e1000_rs against the C e1000 on the same setup, in one run. Two VMs joined by a socket
//! link on 127.0.0.1; the peer always runs the C e1000; the DUT measures both of its drivers back to
//! back in every round (the order alternating), so both see the same VMs, boot and host load. The
//! figure reported is the median of the per-round ratios (`harness::stats`). Both VMs boot with
//! kmemleak and DMA-API debugging off (`Vm::without_debug_checks`), as a benchmark should.
//!
//! With `--instructions`, the DUT counts guest instructions instead (`Vm::count_instructions`, a
//! QEMU plugin), and the figures are what each driver costs the DUT's CPUs: instructions per MiB sent
//! and received and per ping, exact where the timings move by tens of percent between rounds.
//!
//! Run through `scripts/bench-e1000.sh [--instructions] [ROUNDS]`.

use harness::{stats::Paired, Scenario, SocketLink, Vm};

const MIB: u32 = 32;

/// Pings per round and driver.
const PINGS: u32 = 200;

fn dut_script(rounds: u32, count: bool) -> String {
    format!(
        r#"
export PEER=169.254.0.2
dd if=/dev/urandom of=/tmp/data bs=1M count={MIB} 2>/dev/null
# With instruction counting, `mark` records the count before and after each measurement.
marks=0
measure_mark() {{ if [ {count} = true ]; then mark; marks=$((marks + 1)); fi; }}
round=0
n=0
while [ $round -lt {rounds} ]; do
  # Who goes first alternates, so that neither driver always runs right after the other.
  if [ $((round % 2)) = 0 ]; then order="e1000 e1000_rs e1000_rs_rxcopy e1000_rs_copy"; else order="e1000_rs_copy e1000_rs_rxcopy e1000_rs e1000"; fi
  for driver in $order; do
    # e1000_rs with its defaults (socket buffers mapped with streaming DMA both ways), receiving by
    # copying out of coherent buffers, and copying both ways.
    case $driver in
      e1000_rs_rxcopy) module=e1000_rs; insmod /modules/e1000_rs.ko rx_copy=1 ;;
      e1000_rs_copy) module=e1000_rs; insmod /modules/e1000_rs.ko tx_copy=1 rx_copy=1 ;;
      *) module=$driver; insmod /modules/$driver.ko ;;
    esac
    wait_for 10 test -d /sys/class/net/eth0
    ip link set eth0 up && ip addr add 169.254.0.1/16 dev eth0
    wait_for 30 ping -c 1 -W 1 $PEER
    measure_mark
    rtt=$(ping -c {PINGS} -i 0.01 $PEER | sed -n 's|.*min/avg/max = [0-9.]*/\([0-9.]*\)/.*|\1|p')
    measure_mark
    diag "round$round.$driver.rtt_ms=$rtt"
    diag "round$round.$driver.ping_mark=$marks"
    diag "round$round.$driver.transfer=$n"
    measure_mark
    netpipe send $PEER 6001 </tmp/data 2>/dev/null
    measure_mark
    diag "round$round.$driver.tx_mark=$marks"
    measure_mark
    rx=$(netpipe recv 6002 2>&1 >/dev/null)
    measure_mark
    diag "round$round.$driver.rx=$rx"
    diag "round$round.$driver.rx_mark=$marks"
    rmmod $module
    n=$((n + 1))
  done
  round=$((round + 1))
done
check benchmark-done true
"#
    )
}

fn peer_script(rounds: u32) -> String {
    format!(
        r#"
export DUT=169.254.0.1
dd if=/dev/urandom of=/tmp/data bs=1M count={MIB} 2>/dev/null
insmod /modules/e1000.ko
ip link set eth0 up && ip addr add 169.254.0.2/16 dev eth0
n=0
while [ $n -lt $(({rounds} * 4)) ]; do
    tx=$(netpipe recv 6001 2>&1 >/dev/null)
    diag "transfer$n.tx=$tx"
    netpipe send $DUT 6002 </tmp/data 2>/dev/null
    n=$((n + 1))
done
check benchmark-done true
"#
    )
}

/// MB/s from netpipe's "bytes=N seconds=S".
fn mbps(report: &str) -> Option<f64> {
    let mut bytes = None;
    let mut seconds = None;
    for field in report.split_whitespace() {
        if let Some(b) = field.strip_prefix("bytes=") {
            bytes = b.parse::<f64>().ok();
        } else if let Some(s) = field.strip_prefix("seconds=") {
            seconds = s.parse::<f64>().ok();
        }
    }
    Some(bytes? / seconds? / 1e6)
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let count = args.next_if(|a| a == "--instructions").is_some();
    let rounds: u32 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(if count { 2 } else { 7 });
    let link = SocketLink::new().expect("free ports");
    let mut dut = Vm::new("dut")
        .memory_mib(768)
        .module("drivers/e1000_rs")
        .kernel_module("drivers/net/ethernet/intel/e1000/e1000.ko")
        .tool("netpipe")
        .nic("e1000", link.listen())
        .without_debug_checks()
        .script(&dut_script(rounds, count))
        .timeout(std::time::Duration::from_secs(1800));
    if count {
        dut = dut.count_instructions();
    }
    let peer = Vm::new("peer")
        .memory_mib(768)
        .kernel_module("drivers/net/ethernet/intel/e1000/e1000.ko")
        .tool("netpipe")
        .nic("e1000", link.connect())
        .without_debug_checks()
        .script(&peer_script(rounds))
        .timeout(std::time::Duration::from_secs(1800));
    println!(
        "e1000 benchmark: {rounds} rounds per driver, {MIB} MiB each way per round, {PINGS} pings \
         per round, kmemleak and DMA-API debugging off{}",
        if count {
            "; guest instructions on the DUT (lower is better)"
        } else {
            ""
        }
    );
    let outcome = match Scenario::new("bench-e1000").vm(dut).vm(peer).run() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let (dut, peer) = (outcome.vm("dut"), outcome.vm("peer"));
    let marks = match count.then(|| dut.instruction_marks()).transpose() {
        Ok(marks) => marks.unwrap_or_default(),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    // Figures per Rust variant: TX, RX, RTT, each paired with the C driver's in the same round.
    let mut figures: [[Paired; 3]; 3] = Default::default();
    for round in 0..rounds {
        let figure =
            |driver: &str, key: &str| dut.ktap.diagnostic(&format!("round{round}.{driver}.{key}"));
        // Instructions of the run ending at the mark noted as `key`, per `unit`.
        let counted = |driver: &str, key: &str, unit: f64| -> Option<f64> {
            let mark = figure(driver, key)?.parse().ok()?;
            Some(marks.run_ending_at(mark)? as f64 / unit)
        };
        let measured = |driver: &str| -> [f64; 3] {
            let (sent, received, ping) = if count {
                (
                    counted(driver, "tx_mark", f64::from(MIB)),
                    counted(driver, "rx_mark", f64::from(MIB)),
                    counted(driver, "ping_mark", f64::from(PINGS)),
                )
            } else {
                (
                    figure(driver, "transfer")
                        .and_then(|n| peer.ktap.diagnostic(&format!("transfer{n}.tx")))
                        .and_then(mbps),
                    figure(driver, "rx").and_then(mbps),
                    figure(driver, "rtt_ms").and_then(|v| v.parse::<f64>().ok()),
                )
            };
            match (sent, received, ping) {
                (Some(sent), Some(received), Some(ping)) => [sent, received, ping],
                _ => {
                    eprintln!(
                        "round {round} {driver}: missing results; see {}",
                        dut.console_log.display()
                    );
                    std::process::exit(1);
                }
            }
        };
        let c = measured("e1000");
        for (variant, driver) in ["e1000_rs", "e1000_rs_rxcopy", "e1000_rs_copy"]
            .iter()
            .enumerate()
        {
            let rs = measured(driver);
            for k in 0..3 {
                figures[variant][k].c.push(c[k]);
                figures[variant][k].rs.push(rs[k]);
            }
        }
    }
    let labels = if count {
        [
            "TCP DUT -> peer (insns/MiB)",
            "TCP peer -> DUT (insns/MiB)",
            "ping (insns/round trip)",
        ]
    } else {
        [
            "TCP DUT -> peer (MB/s)",
            "TCP peer -> DUT (MB/s)",
            "ping RTT (ms, lower is better)",
        ]
    };
    for (variant, title) in [
        "e1000_rs (default: streaming DMA both ways, skbs out, page fragments in)",
        "e1000_rs rx_copy=1 (receive copies out of coherent buffers, transmit maps)",
        "e1000_rs tx_copy=1 rx_copy=1 (frames copied through coherent buffers both ways)",
    ]
    .iter()
    .enumerate()
    {
        println!();
        println!("{title}");
        println!("{}", Paired::header("C e1000", "e1000_rs"));
        for (k, label) in labels.iter().enumerate() {
            println!("{}", figures[variant][k].line(label));
        }
    }
}
