//! Tests of the harness itself: failures in the guest or in the kernel log must fail a scenario
//! with a message that says what failed and where the log is.

use harness::{Env, Scenario, Vm};

#[test]
fn a_failing_guest_check_fails_the_scenario_and_names_the_log() {
    let err = Scenario::new("self-test-failing-check")
        .vm(Vm::new("guest").script(
            "check passes true\ncheck deliberately-fails sh -c 'echo expected failure; exit 3'\n",
        ))
        .run()
        .expect_err("a failing check must fail the scenario");
    let msg = err.to_string();
    assert!(
        msg.contains("check 'deliberately-fails' failed: exit status 3: expected failure"),
        "{msg}"
    );
    assert!(!msg.contains("'passes'"), "{msg}");
    let log = Env::get()
        .expect("environment")
        .run_dir("self-test-failing-check")
        .join("guest/console.log");
    assert!(msg.contains(&log.display().to_string()), "{msg}");
}

#[test]
fn a_kernel_warning_fails_the_scenario() {
    // Writing to /dev/kmsg puts the line in the kernel log exactly as a real report would appear.
    let err = Scenario::new("self-test-kernel-warning")
        .vm(Vm::new("guest").script(
            "check says-warning sh -c 'echo \"WARNING: CPU: 0 PID: 1 at self-test\" >/dev/kmsg'\n",
        ))
        .run()
        .expect_err("a WARNING in the kernel log must fail the scenario");
    let msg = err.to_string();
    assert!(msg.contains("WARNING report at line"), "{msg}");
    assert!(msg.contains("console.log"), "{msg}");
}

#[test]
fn a_guest_that_does_not_finish_fails_the_scenario() {
    let err = Scenario::new("self-test-timeout")
        .vm(Vm::new("guest")
            .script("check before-hang true\nsleep 1000\n")
            .timeout(std::time::Duration::from_secs(10)))
        .run()
        .expect_err("a guest past its time limit must fail the scenario");
    // The limit is stretched on a slower kernel (RDD_KERNEL=kasan).
    let limit = 10 * Env::get().expect("environment").slowdown();
    assert!(
        err.to_string()
            .contains(&format!("timed out after {limit} s")),
        "{err}"
    );
}

#[test]
fn a_vm_that_fails_stops_the_vm_waiting_for_it() {
    // The second VM would wait for the first until its time limit, as a benchmark peer waits for
    // transfers that will not come.
    let err = Scenario::new("self-test-failed-peer")
        .vm(Vm::new("quitter").script("check gives-up false\n"))
        .vm(Vm::new("waiter")
            .script("check before-wait true\nsleep 1000\n")
            .timeout(std::time::Duration::from_secs(600)))
        .stop_others_after(std::time::Duration::from_secs(5))
        .run()
        .expect_err("a failing VM must fail the scenario");
    let msg = err.to_string();
    assert!(msg.contains("check 'gives-up' failed"), "{msg}");
    // How long the waiter ran, from its start (not the test's: the scenario may wait for cores).
    let ran: u64 = msg
        .split("stopped 5 s after VM quitter ended failing, ")
        .nth(1)
        .and_then(|rest| rest.split(" s after it started").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no 'stopped 5 s after VM quitter ended failing, N s' in {msg}"));
    assert!(ran < 300, "the waiter ran {ran} s");
}

#[test]
fn qmp_requests_reach_qemu() {
    // The guest asks the host to take its NIC's link down, then up, and sees the carrier follow.
    // A request returns once the host has acted, however long that takes.
    let script = r#"
before=$(uptime_cs)
request slow
check request-waits-for-the-host test $(($(uptime_cs) - before)) -ge 150
check load-e1000 insmod /modules/e1000.ko
ip link set eth0 up
check carrier-up wait_for 20 grep -qx 1 /sys/class/net/eth0/carrier
request link-down
check carrier-down wait_for 20 grep -qx 0 /sys/class/net/eth0/carrier
request link-up
check carrier-up-again wait_for 20 grep -qx 1 /sys/class/net/eth0/carrier
"#;
    Scenario::new("self-test-qmp")
        .vm(Vm::new("guest")
            .kernel_module("drivers/net/ethernet/intel/e1000/e1000.ko")
            .nic("e1000", harness::NetBackend::Hub(0))
            .script(script))
        .on_request("guest", "slow", |_| {
            std::thread::sleep(std::time::Duration::from_secs(2));
            Ok(())
        })
        .on_request("guest", "link-down", |qmp| qmp.set_link("net0", false))
        .on_request("guest", "link-up", |qmp| qmp.set_link("net0", true))
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
}
