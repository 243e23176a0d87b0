//! nvme_rs when commands time out, and when the controller goes while they do: lost completions
//! and lost interrupts, stale and duplicated completions, a command the controller keeps (the host
//! throttles its namespace), a controller that stops answering while the probe adds its disks, and
//! removal and surprise removal while a timeout is due. Every byte read back verifies, the disk
//! works afterwards, and the C nvme driver's twin controller is not touched.
//!
//! It runs on the KASAN kernel: a request ended twice, or memory freed while the controller may
//! still write it, shows there even where the data comes out right.

use harness::{
    nvme::{self, BIND_ALTERNATELY},
    Drive, Scenario, MIB,
};

const SCRIPT: &str = include_str!("../guest/scenarios/nvme_rs_timeouts/guest.sh");

#[test]
fn nvme_rs_ends_every_request_once_whatever_times_out() {
    let drives = || vec![Drive::Raw { size: 64 * MIB }, Drive::Raw { size: 16 * MIB }];
    let vm = nvme::vm("dut")
        .nvme(drives())
        .nvme(vec![Drive::Raw { size: 16 * MIB }])
        .script(&format!("{BIND_ALTERNATELY}{SCRIPT}"))
        .timeout(std::time::Duration::from_secs(600));
    Scenario::new("nvme-rs-timeouts")
        .on_kasan_kernel()
        // Which handler meets which controller state depends on timeouts a second apart.
        .cores(usize::MAX)
        .vm(vm)
        .on_request("dut", "throttle", |qmp| qmp.throttle("nvme0ns1", 1))
        .on_request("dut", "throttle-and-fill", |qmp| {
            qmp.throttle("nvme0ns1", 1)?;
            // The first read through the throttle passes at once and fills its bucket. qemu-io
            // prints what it read on QEMU's standard output (qemu.log), a failure in its answer.
            let out = qmp.human_monitor("qemu-io -d nvme0ns1 \"read 0 64k\"")?;
            match out.trim() {
                "" => Ok(()),
                failure => Err(harness::err!(
                    "the host's read through the throttle: {failure}"
                )),
            }
        })
        .on_request("dut", "unthrottle", |qmp| qmp.throttle("nvme0ns1", 0))
        .on_request("dut", "throttle-both", |qmp| {
            qmp.throttle("nvme0ns1", 1)?;
            qmp.throttle("nvme0ns2", 1)
        })
        .on_request("dut", "unthrottle-both", |qmp| {
            qmp.throttle("nvme0ns1", 0)?;
            qmp.throttle("nvme0ns2", 0)
        })
        .on_request("dut", "unthrottle-and-unplug", |qmp| {
            qmp.throttle("nvme0ns1", 0)?;
            qmp.device_del("nvme0")
        })
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
}
