//! The project's main job, shown: boots QEMU with the project's drivers and prints what they did.
//!
//! Run through `scripts/demo.sh`, which first sets up whatever is missing.

use harness::{
    generate_driver,
    nvme::{self, BIND_ALTERNATELY},
    Drive, Outcome, Scenario, SocketLink, Vm,
};

/// The driver the demo generates from the template, as a user would.
const EDU_DRIVER: &str = "edu_demo";

/// What the demo guest does; each step is reported in KTAP, and the drivers' kernel messages are
/// shown.
const DEMO_SCRIPT: &str = r#"
check load-rust_smoke insmod /modules/rust_smoke.ko len=65536
check unload-rust_smoke rmmod rust_smoke
check load-edu_demo insmod /modules/edu_demo.ko
check unbind-edu_demo sh -c 'echo 0000:00:02.0 >/sys/bus/pci/drivers/edu_demo/unbind'
check rebind-edu_demo sh -c 'echo 0000:00:02.0 >/sys/bus/pci/drivers/edu_demo/bind'
check unload-edu_demo rmmod edu_demo
dmesg | grep -E 'rust_smoke:|edu_demo' | while IFS= read -r l; do diag "kernel: $l"; done
"#;

/// e1000_rs on one VM, the C e1000 on the other, joined by a socket link on 127.0.0.1.
const E1000_DUT_SCRIPT: &str = r#"
insmod /modules/e1000_rs.ko
ip link set eth0 up && ip addr add 169.254.0.1/16 dev eth0
check link-up-e1000_rs wait_for 30 grep -qx 1 /sys/class/net/eth0/carrier
check ping-peer wait_for 60 ping -c 3 -W 2 169.254.0.2
dd if=/dev/urandom of=/tmp/data bs=1M count=16 2>/dev/null
diag "sent 16 MiB, sha256 $(sha256sum </tmp/data | cut -c1-16)..."
check tcp-16MiB-to-peer sh -c 'netpipe send 169.254.0.2 7001 </tmp/data'
diag "received, sha256 $(timeout 120 netpipe recv 7002 2>/dev/null | sha256sum | cut -c1-16)..."
s=/sys/class/net/eth0/statistics
diag "e1000_rs counters: rx_packets $(cat $s/rx_packets) tx_packets $(cat $s/tx_packets) rx_errors $(cat $s/rx_errors)"
dmesg | grep 'e1000_rs' | while IFS= read -r l; do diag "kernel: $l"; done
check unload-e1000_rs rmmod e1000_rs
"#;

const E1000_PEER_SCRIPT: &str = r#"
insmod /modules/e1000.ko
ip link set eth0 up && ip addr add 169.254.0.2/16 dev eth0
check ping-e1000_rs wait_for 60 ping -c 3 -W 2 169.254.0.1
diag "peer received, sha256 $(timeout 120 netpipe recv 7001 2>/dev/null | sha256sum | cut -c1-16)..."
dd if=/dev/urandom of=/tmp/data bs=1M count=16 2>/dev/null
diag "peer sent 16 MiB, sha256 $(sha256sum </tmp/data | cut -c1-16)..."
check tcp-16MiB-to-e1000_rs sh -c 'netpipe send 169.254.0.1 7002 </tmp/data'
"#;

/// nvme_rs on one NVMe controller, the C nvme driver on its twin.
const NVME_SCRIPT: &str = r#"
check load-nvme_rs insmod /modules/nvme_rs.ko
check load-c-nvme load_c_nvme
check disks wait_for 20 sh -c 'test -b /dev/rsnvme0n1 && test -b /dev/nvme0n1'
diag "rsnvme0n1: $(($(cat /sys/block/rsnvme0n1/size) / 2048)) MiB, $(ls /sys/block/rsnvme0n1/mq | wc -l) hardware queues"
check write-64MiB-pattern blkio fill /dev/rsnvme0n1 0xd1 64
diag "$(blkio verify /dev/rsnvme0n1 0xd1 64)"
check same-pattern-on-c-nvme blkio fill /dev/nvme0n1 0xd1 64
diag "sha256 via nvme_rs $(dd if=/dev/rsnvme0n1 bs=1M count=64 2>/dev/null | sha256sum | cut -c1-16)..."
diag "sha256 via C nvme  $(dd if=/dev/nvme0n1 bs=1M count=64 2>/dev/null | sha256sum | cut -c1-16)..."
diag "$(blkio bench /dev/rsnvme0n1 randread 4096 32 2 64) (nvme_rs)"
diag "$(blkio bench /dev/nvme0n1 randread 4096 32 2 64) (C nvme)"
dmesg | grep 'nvme_rs' | while IFS= read -r l; do diag "kernel: $l"; done
check unload-nvme_rs rmmod nvme_rs
"#;

fn show(outcome: &Outcome) {
    for vm in &outcome.vms {
        println!(
            "\n== VM {} (kernel log: {})",
            vm.name,
            vm.console_log.display()
        );
        for d in &vm.ktap.diagnostics {
            if !d.starts_with("request:") {
                println!("   {}", d.strip_prefix("kernel: ").unwrap_or(d));
            }
        }
        for r in &vm.ktap.results {
            println!(
                "{} {} {}",
                if r.ok { "ok" } else { "not ok" },
                r.number,
                r.name
            );
        }
    }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("{e}");
        std::process::exit(1);
    }
}

fn run() -> harness::Result<()> {
    println!("Generating {EDU_DRIVER} from template/ with cargo-generate...");
    let edu = generate_driver(EDU_DRIVER)?;
    println!("Booting QEMU (TCG) with an edu device, the smoke module and {EDU_DRIVER}...");
    let vm = Vm::new("demo")
        .edu()
        .module("modules/smoke")
        .module(edu)
        .script(DEMO_SCRIPT);
    show(&Scenario::new("demo").vm(vm).run()?);

    println!("\nBooting two VMs joined on 127.0.0.1: e1000_rs on one, the C e1000 on the other...");
    let link = SocketLink::new()?;
    let dut = Vm::new("e1000_rs")
        .module("drivers/e1000_rs")
        .tool("netpipe")
        .nic("e1000", link.end_a())
        .script(E1000_DUT_SCRIPT);
    let peer = Vm::new("c-e1000")
        .kernel_module("drivers/net/ethernet/intel/e1000/e1000.ko")
        .tool("netpipe")
        .nic("e1000", link.end_b())
        .script(E1000_PEER_SCRIPT);
    show(&Scenario::new("demo-e1000").vm(dut).vm(peer).run()?);

    println!("\nBooting a VM with two NVMe controllers: nvme_rs on one, the C nvme driver on the other...");
    let disk = || vec![Drive::Raw { size: 128 << 20 }];
    let vm = nvme::vm("nvme")
        .nvme(disk())
        .nvme(disk())
        .script(&format!("{BIND_ALTERNATELY}{NVME_SCRIPT}"));
    show(&Scenario::new("demo-nvme").vm(vm).run()?);
    println!("\nEverything worked: no Oops, WARNING, DMA-API or kmemleak report.");
    Ok(())
}
