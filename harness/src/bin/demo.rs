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
const DEMO_SCRIPT: &str = include_str!("../../guest/demo/demo.sh");

/// e1000_rs on one VM, then the C e1000 on the same NIC; the C e1000 on the other VM, joined by a
/// socket link on 127.0.0.1.
const E1000_DUT_SCRIPT: &str = include_str!("../../guest/demo/e1000_rs.sh");

const E1000_PEER_SCRIPT: &str = include_str!("../../guest/demo/c-e1000.sh");

/// nvme_rs on one NVMe controller, the C nvme driver on its twin.
const NVME_SCRIPT: &str = include_str!("../../guest/demo/nvme.sh");

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

    println!("\nBooting two VMs joined on 127.0.0.1: e1000_rs, then the C e1000, on one; the C e1000 on the other...");
    let link = SocketLink::new()?;
    let dut = Vm::new("e1000_rs")
        .module("drivers/e1000_rs")
        .kernel_module("drivers/net/ethernet/intel/e1000/e1000.ko")
        .host_program("/usr/sbin/ethtool")
        .tool("netpipe")
        .nic("e1000", link.end_a())
        .script(E1000_DUT_SCRIPT);
    let peer = Vm::new("c-e1000")
        .kernel_module("drivers/net/ethernet/intel/e1000/e1000.ko")
        .tool("netpipe")
        .nic("e1000", link.end_b())
        .script(E1000_PEER_SCRIPT);
    show(&Scenario::new("demo-e1000").vm(dut).vm(peer).run()?);

    println!(
        "\nBooting a VM with two NVMe controllers: nvme_rs on one, the C nvme driver on the other \
         (without kmemleak and DMA-API debugging, which cost more than an I/O: as in the benchmark)..."
    );
    let disk = || vec![Drive::Raw { size: 128 << 20 }];
    let vm = nvme::vm("nvme")
        .host_program("/usr/sbin/nvme")
        .nvme(disk())
        .nvme(disk())
        .without_debug_checks()
        .script(&format!("{BIND_ALTERNATELY}{NVME_SCRIPT}"));
    show(&Scenario::new("demo-nvme").vm(vm).run()?);
    println!("\nEverything worked: no Oops or WARNING, and no DMA-API or kmemleak report where they ran.");
    Ok(())
}
