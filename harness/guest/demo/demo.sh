# shellcheck shell=sh
# The demo VM: the smoke module, and edu_demo generated from the template, on an edu device.
check load-rust_smoke insmod /modules/rust_smoke.ko len=65536
check unload-rust_smoke rmmod rust_smoke
check load-edu_demo insmod /modules/edu_demo.ko
check unbind-edu_demo sh -c 'echo 0000:00:02.0 >/sys/bus/pci/drivers/edu_demo/unbind'
check rebind-edu_demo sh -c 'echo 0000:00:02.0 >/sys/bus/pci/drivers/edu_demo/bind'
diag "edu_demo: $(cat /sys/kernel/debug/edu_demo/verified_round_trips) DMA round trips verified byte for byte, 2 per bind"
check unload-edu_demo rmmod edu_demo
dmesg | grep -E 'rust_smoke:|edu_demo' | while IFS= read -r l; do diag "kernel: $l"; done
