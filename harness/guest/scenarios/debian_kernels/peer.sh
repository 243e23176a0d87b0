# shellcheck shell=sh
check load-e1000 insmod /modules/e1000.ko
up $PEER
check peer-carrier-up carrier_up
# The DUT loads e1000_rs only after its edu and NVMe checks: a minute or more on a busy host.
check ping-dut wait_for 180 ping -c 1 -W 1 $DUT
dd if=/dev/urandom of=/tmp/out bs=1M count=64 2>/dev/null
diag "peer_sent_sha=$(sha256sum </tmp/out | cut -d' ' -f1)"
check tcp-receive-64MiB sh -c 'timeout 300 netpipe recv 5001 | sha256sum | cut -d" " -f1 >/tmp/recv.sha'
diag "peer_received_sha=$(cat /tmp/recv.sha)"
check tcp-send-64MiB sh -c 'netpipe send $DUT 5002 </tmp/out'
check unload-e1000 rmmod e1000
