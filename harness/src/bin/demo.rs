//! The project's main job, shown: boots QEMU with the project's drivers and prints what they did.
//!
//! Run through `scripts/demo.sh`, which first sets up whatever is missing.

use harness::{generate_driver, Scenario, Vm};

/// The driver the demo generates from the template, as a user would.
const EDU_DRIVER: &str = "edu_demo";

/// What the demo guest does; each step is reported in KTAP, and the drivers' kernel messages are shown.
const DEMO_SCRIPT: &str = r#"
check load-rust_smoke insmod /modules/rust_smoke.ko len=65536
check unload-rust_smoke rmmod rust_smoke
check load-edu_demo insmod /modules/edu_demo.ko
check unbind-edu_demo sh -c 'echo 0000:00:02.0 >/sys/bus/pci/drivers/edu_demo/unbind'
check rebind-edu_demo sh -c 'echo 0000:00:02.0 >/sys/bus/pci/drivers/edu_demo/bind'
check unload-edu_demo rmmod edu_demo
dmesg | grep -E 'rust_smoke:|edu_demo' | while IFS= read -r l; do diag "kernel: $l"; done
"#;

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
    let outcome = Scenario::new("demo").vm(vm).run()?;
    for vm in &outcome.vms {
        println!(
            "\n== VM {} (kernel log: {})",
            vm.name,
            vm.console_log.display()
        );
        for d in &vm.ktap.diagnostics {
            if let Some(k) = d.strip_prefix("kernel: ") {
                println!("   {k}");
            }
        }
        println!();
        for r in &vm.ktap.results {
            println!(
                "{} {} {}",
                if r.ok { "ok" } else { "not ok" },
                r.number,
                r.name
            );
        }
    }
    println!("\nEverything worked: no Oops, WARNING, DMA-API or kmemleak report.");
    Ok(())
}
