# shellcheck shell=sh
check load insmod /modules/rust_smoke.ko len=12345
check listed grep -q '^rust_smoke ' /proc/modules
line=$(dmesg | grep 'rust_smoke: loaded:' | tail -n 1)
diag "loaded=${line#*loaded: }"
check unload rmmod rust_smoke
check unloaded sh -c '! grep -q "^rust_smoke " /proc/modules'
line=$(dmesg | grep 'rust_smoke: unloading:' | tail -n 1)
diag "unloaded=${line#*unloading: }"
