//! The project's main job, shown: boots QEMU with the project's modules and prints what they did.
//!
//! Run through `scripts/demo.sh`, which first sets up whatever is missing.

use harness::{Scenario, Vm};

/// What the demo guest does; each step is reported in KTAP and its kernel messages land in the console.
const DEMO_SCRIPT: &str = r#"
check load-rust_smoke insmod /modules/rust_smoke.ko len=65536
dmesg | grep 'rust_smoke:' | while IFS= read -r l; do diag "kernel: $l"; done
check unload-rust_smoke rmmod rust_smoke
dmesg | grep 'rust_smoke: unloading' | while IFS= read -r l; do diag "kernel: $l"; done
"#;

fn main() {
    let scenario =
        Scenario::new("demo").vm(Vm::new("demo").module("modules/smoke").script(DEMO_SCRIPT));
    println!("Booting QEMU (TCG) with the project's modules...");
    match scenario.run() {
        Ok(outcome) => {
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
                for r in &vm.ktap.results {
                    println!(
                        "{} {} {}",
                        if r.ok { "ok" } else { "not ok" },
                        r.number,
                        r.name
                    );
                }
            }
            println!("\nEverything worked.");
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
