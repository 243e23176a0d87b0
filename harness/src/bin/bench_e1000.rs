//! Benchmark: e1000_rs against the C e1000 on the same setup, in one run. Two VMs joined by a socket
//! link on 127.0.0.1; the peer always runs the C e1000; the DUT swaps its driver between rounds
//! (C, Rust, C, Rust, ...), so both drivers see the same VMs, the same boot and the same host load.
//!
//! Run through `scripts/bench-e1000.sh [ROUNDS]`.

use harness::{Scenario, SocketLink, Vm};

const MIB: u32 = 64;

fn dut_script(rounds: u32) -> String {
    format!(
        r#"
export PEER=169.254.0.2
dd if=/dev/urandom of=/tmp/data bs=1M count={MIB} 2>/dev/null
round=0
while [ $round -lt {rounds} ]; do
  for driver in e1000 e1000_rs; do
    insmod /modules/$driver.ko
    wait_for 10 test -d /sys/class/net/eth0
    ip link set eth0 up && ip addr add 169.254.0.1/16 dev eth0
    wait_for 30 ping -c 1 -W 1 $PEER
    rtt=$(ping -c 200 -i 0.01 $PEER | sed -n 's|.*min/avg/max = [0-9.]*/\([0-9.]*\)/.*|\1|p')
    diag "round$round.$driver.rtt_ms=$rtt"
    netpipe send $PEER 6001 </tmp/data 2>/dev/null
    rx=$(netpipe recv 6002 2>&1 >/dev/null)
    diag "round$round.$driver.rx=$rx"
    rmmod $driver
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
while [ $n -lt $(({rounds} * 2)) ]; do
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

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

fn main() {
    let rounds: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(3);
    let link = SocketLink::new().expect("free ports");
    let dut = Vm::new("dut")
        .memory_mib(768)
        .module("drivers/e1000_rs")
        .kernel_module("drivers/net/ethernet/intel/e1000/e1000.ko")
        .tool("netpipe")
        .nic("e1000", link.listen())
        .script(&dut_script(rounds))
        .timeout(std::time::Duration::from_secs(1800));
    let peer = Vm::new("peer")
        .memory_mib(768)
        .kernel_module("drivers/net/ethernet/intel/e1000/e1000.ko")
        .tool("netpipe")
        .nic("e1000", link.connect())
        .script(&peer_script(rounds))
        .timeout(std::time::Duration::from_secs(1800));
    println!("e1000 benchmark: {rounds} rounds per driver, {MIB} MiB each way per round, 200 pings per round");
    let outcome = match Scenario::new("bench-e1000").vm(dut).vm(peer).run() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let (dut, peer) = (outcome.vm("dut"), outcome.vm("peer"));
    let mut results = Vec::new();
    for (index, driver) in ["e1000", "e1000_rs"].iter().enumerate() {
        let mut tx = Vec::new();
        let mut rx = Vec::new();
        let mut rtt = Vec::new();
        for round in 0..rounds {
            let transfer = round * 2 + index as u32;
            tx.extend(
                peer.ktap
                    .diagnostic(&format!("transfer{transfer}.tx"))
                    .and_then(mbps),
            );
            rx.extend(
                dut.ktap
                    .diagnostic(&format!("round{round}.{driver}.rx"))
                    .and_then(mbps),
            );
            rtt.extend(
                dut.ktap
                    .diagnostic(&format!("round{round}.{driver}.rtt_ms"))
                    .and_then(|v| v.parse::<f64>().ok()),
            );
        }
        println!("{driver:>9}: TX {tx:.1?} MB/s, RX {rx:.1?} MB/s, ping RTT {rtt:.3?} ms");
        results.push((mean(&tx), mean(&rx), mean(&rtt)));
    }
    let (c, rs) = (results[0], results[1]);
    println!();
    println!(
        "{:<28} {:>10} {:>10} {:>8}",
        "mean over rounds", "C e1000", "e1000_rs", "rs / C"
    );
    println!(
        "{:<28} {:>10.1} {:>10.1} {:>8.2}",
        "TCP DUT -> peer (MB/s)",
        c.0,
        rs.0,
        rs.0 / c.0
    );
    println!(
        "{:<28} {:>10.1} {:>10.1} {:>8.2}",
        "TCP peer -> DUT (MB/s)",
        c.1,
        rs.1,
        rs.1 / c.1
    );
    println!(
        "{:<28} {:>10.3} {:>10.3} {:>8.2}",
        "ping RTT (ms, lower better)",
        c.2,
        rs.2,
        rs.2 / c.2
    );
}
