#!/bin/busybox sh
# shellcheck shell=dash
# /init of every test VM. It reports on the second serial port (/dev/ttyS1) in KTAP, the format of
# the kernel's KUnit, and leaves the console (/dev/ttyS0) to the kernel's own log.
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /mnt /usr/bin /usr/sbin /sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /tmp
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

KTAP_OUT=/dev/ttyS1
KTAP_COUNT=0
echo "KTAP version 1" >"$KTAP_OUT"

# Report one result: ktap_result PASSED NAME [DIAGNOSTIC]
ktap_result() {
	KTAP_COUNT=$((KTAP_COUNT + 1))
	if [ "$1" = 0 ]; then
		echo "ok $KTAP_COUNT $2" >"$KTAP_OUT"
	else
		echo "not ok $KTAP_COUNT $2${3:+ # $3}" >"$KTAP_OUT"
	fi
}

# check NAME COMMAND...: run COMMAND and report it as test NAME; its output goes to the console log.
check() {
	name=$1
	shift
	out=$("$@" 2>&1)
	rc=$?
	[ -n "$out" ] && printf '%s\n' "$out" | sed "s/^/[$name] /" >/dev/kmsg
	ktap_result "$rc" "$name" "exit status $rc: $(printf '%s' "$out" | tail -n 1)"
	return $rc
}

# diag TEXT: a KTAP diagnostic line the host can read (key=value pairs by convention).
diag() { echo "# $*" >"$KTAP_OUT"; }

# The host answers each request on the third serial port, once it has acted. The port stays open
# from here on, so that an answer that comes before the guest reads it waits in the tty's buffer.
exec 3<>/dev/ttyS2
stty -echo <&3

# request NAME: ask the host to act (e.g. through QMP), and wait until it has: at most a minute,
# else a failed result. A late answer to an earlier request is skipped.
request() {
	echo "# request: $1" >"$KTAP_OUT"
	request_deadline=$(($(uptime_cs) + 6000))
	while [ "$(uptime_cs)" -lt "$request_deadline" ]; do
		# busybox's shell has read -t.
		# shellcheck disable=SC3045
		read -r -t 60 request_answer <&3 || break
		[ "$request_answer" = "$1" ] && return 0
	done
	ktap_result 1 "request-$1" "the host did not answer"
	return 1
}

# uptime_cs: hundredths of a second since boot (/proc/uptime has two decimals; the 1 prefix keeps
# a fraction such as 08 from reading as octal).
uptime_cs() {
	read -r up _ </proc/uptime
	echo $((${up%.*} * 100 + 1${up#*.} - 100))
}

# wait_for SECONDS COMMAND...: poll COMMAND until it succeeds, for at most SECONDS of time (a slow
# COMMAND such as ping -W 1 counts with its own duration); it runs at least once.
wait_for() {
	wait_for_deadline=$(($(uptime_cs) + $1 * 100))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$(uptime_cs)" -lt "$wait_for_deadline" ] || return 1
		sleep 0.1
	done
}

# carrier_up: eth0's carrier is on within 30 s (a link negotiated again after a reset included).
carrier_up() { wait_for 30 grep -qx 1 /sys/class/net/eth0/carrier; }

# pci_bus_master ADDRESS: the PCI function at ADDRESS may do DMA (Command register bit 2 set);
# status 1 when it may not, 2 when its configuration space cannot be read.
pci_bus_master() {
	pci_command=$(od -An -tu2 -j4 -N2 "/sys/bus/pci/devices/$1/config") || return 2
	[ -n "$pci_command" ] || return 2
	pci_command=$((pci_command))
	[ $((pci_command & 4)) != 0 ]
}

# pci_released ADDRESS: the PCI function at ADDRESS is as its driver must leave it at unbind:
# disabled (enable count 0) and no bus master, so it cannot DMA.
pci_released() {
	pci_enable=$(cat "/sys/bus/pci/devices/$1/enable")
	pci_bus_master "$1"
	pci_master=$?
	echo "$1: enable count ${pci_enable:-unreadable}, command register ${pci_command:-unreadable}"
	[ "$pci_enable" = 0 ] && [ $pci_master = 1 ]
}

# fail_nth_setup: makes every slab and page allocation count for fail-nth (the kernel's
# fault-injection, Documentation/fault-injection), also those that may sleep, single pages and
# highmem ones, and has an injected failure noted in the log without a stack trace.
fail_nth_setup() {
	for fail_attr in failslab fail_page_alloc; do
		echo N >"/sys/kernel/debug/$fail_attr/ignore-gfp-wait" &&
			echo 1 >"/sys/kernel/debug/$fail_attr/verbose" || return 1
	done
	echo N >/sys/kernel/debug/fail_page_alloc/ignore-gfp-highmem &&
		echo 0 >/sys/kernel/debug/fail_page_alloc/min-order
}

# nvme_rs_counter NAME [C]: counter NAME of nvme_rs's controller number C (default 0), since its
# probe, from its debugfs files.
nvme_rs_counter() { cat "/sys/kernel/debug/rsnvme${2:-0}/counters/$1"; }
# nvme_rs_total NAME: counter NAME summed over nvme_rs's controllers.
nvme_rs_total() { cat /sys/kernel/debug/rsnvme*/counters/"$1" | awk '{ n += $1 } END { print n + 0 }'; }

# fault_on ATTR [TIMES [INTERVAL]]: the fault_attr directory ATTR (a driver's fault injection point,
# Documentation/fault-injection) fails every INTERVAL-th time it is reached (default 1: every
# time), TIMES times (default: no limit), without a stack trace in the log each time.
fault_on() {
	echo 0 >"$1/verbose" &&
		echo "${3:-1}" >"$1/interval" &&
		echo "${2:--1}" >"$1/times" &&
		echo 100 >"$1/probability"
}

# fault_off ATTR: ATTR fails no more.
fault_off() { echo 0 >"$1/probability"; }

# failing_nth_allocation N COMMAND...: runs COMMAND, a builtin or function so that it runs in this
# task, in a subshell whose N-th allocation fails (a fork starts with none set), its output
# discarded. Prints "reached" when COMMAND got that far and "unreached" when it made fewer
# allocations; returns COMMAND's status.
failing_nth_allocation() (
	echo "$1" >/proc/self/fail-nth || exit 125
	shift
	"$@" >/dev/null
	fail_rc=$?
	# Left positive when no allocation was failed. Opening the file may take the failure itself,
	# which counts as reached: the next N goes further.
	fail_left=0
	read -r fail_left </proc/self/fail-nth 2>/dev/null
	echo 0 >/proc/self/fail-nth 2>/dev/null
	if [ "${fail_left:-0}" -gt 0 ]; then echo unreached; else echo reached; fi
	exit $fail_rc
)

# fault_sweep NAME STEP ATTEMPT CHECK EVIDENCE: runs ATTEMPT (a function) with its first allocation
# failing, then its (1 + STEP)-th, and so on until it makes fewer allocations than the one set to
# fail (at most 5000 attempts). After each attempt, CHECK (a function, given the attempt's status)
# must succeed: it tests what the attempt left and undoes a success. Reports test NAME: every
# CHECK passed; the kernel log gained lines with EVIDENCE, what the code under test says when it
# fails (the first allocations are the shell's own, opening a file, so failed attempts alone prove
# nothing); and the sweep reached ATTEMPT's end with an attempt that no injected failure touched,
# which must succeed.
fault_sweep() {
	fail_nth_setup || { ktap_result 1 "$1" "fault injection not available"; return; }
	sweep_evidence=$(dmesg | grep -c "$5")
	sweep_n=1 sweep_attempts=0 sweep_failed=0 sweep_bad=
	sweep_reached=reached
	while [ "$sweep_reached" = reached ] && [ $sweep_attempts -lt 5000 ]; do
		sweep_reached=$(failing_nth_allocation $sweep_n "$3" 2>/dev/null)
		sweep_rc=$?
		[ $sweep_rc = 0 ] || sweep_failed=$((sweep_failed + 1))
		"$4" $sweep_rc || sweep_bad="$sweep_bad $sweep_n"
		sweep_attempts=$((sweep_attempts + 1))
		sweep_n=$((sweep_n + $2))
	done
	sweep_evidence=$(($(dmesg | grep -c "$5") - sweep_evidence))
	if [ "$sweep_reached" = unreached ]; then
		sweep_end="the last, with no failure injected: status $sweep_rc"
	else
		sweep_end="stopped at 5000 attempts"
	fi
	diag "$1: $sweep_attempts attempts (allocation 1 to $((sweep_n - $2)) failing, step $2)," \
		"$sweep_failed failed, $sweep_evidence logged '$5'," \
		"checks failed after allocation:${sweep_bad:- none}; $sweep_end"
	[ "$sweep_reached" = unreached ] && [ $sweep_rc = 0 ] && [ -z "$sweep_bad" ] &&
		[ $sweep_evidence -gt 0 ]
	ktap_result $? "$1"
}

# probe_sweep NAME STEP DRIVER ADDRESS PRESENT: a fault_sweep of binding DRIVER to the unbound PCI
# function at ADDRESS, with the driver core's report of a failed probe as evidence. After each
# attempt the function is either bound, with what PRESENT (a command, given ADDRESS) finds, and is
# unbound again, or unbound without it; and released.
probe_sweep() {
	probe_sweep_driver=$3 probe_sweep_pci=$4 probe_sweep_present=$5
	fault_sweep "$1" "$2" probe_sweep_bind probe_sweep_left \
		"$4: probe with driver $3 failed with error"
}
probe_sweep_bind() { echo "$probe_sweep_pci" >"/sys/bus/pci/drivers/$probe_sweep_driver/bind"; }
probe_sweep_left() {
	if pci_bound "$probe_sweep_pci"; then
		[ "$1" = 0 ] && $probe_sweep_present "$probe_sweep_pci" >/dev/null &&
			echo "$probe_sweep_pci" >"/sys/bus/pci/drivers/$probe_sweep_driver/unbind" ||
			return 1
	else
		[ "$1" != 0 ] && ! $probe_sweep_present "$probe_sweep_pci" >/dev/null || return 1
	fi
	pci_released "$probe_sweep_pci" >/dev/null
}

# pci_bound ADDRESS: the PCI function at ADDRESS has a driver.
pci_bound() { [ -e "/sys/bus/pci/devices/$1/driver" ]; }

# pci_functions VENDOR:DEVICE: the addresses of the PCI functions with that ID (e.g.
# 0x8086:0x100e), sorted.
pci_functions() {
	for pci_dir in /sys/bus/pci/devices/*; do
		[ "$(cat "$pci_dir/vendor"):$(cat "$pci_dir/device")" = "$1" ] && echo "${pci_dir##*/}"
	done | sort
}

# iface_of ADDRESS: the network interface of the PCI function at ADDRESS; fails if it has none.
iface_of() { ls "/sys/bus/pci/devices/$1/net" 2>/dev/null | head -n 1 | grep .; }

# net_stat IFACE NAME: a counter of IFACE (/sys/class/net/IFACE/statistics/NAME).
net_stat() { cat "/sys/class/net/$1/statistics/$2"; }

# Leaks from before the scenario (boot) are not the scenario's.
[ -e /sys/kernel/debug/kmemleak ] && echo clear >/sys/kernel/debug/kmemleak

echo "guest: scenario starting" >/dev/kmsg
. /scenario.sh
echo "guest: scenario finished" >/dev/kmsg

# kmemleak reports only objects older than 5 s, so let the scenario's last frees age before the
# scan.
if [ -e /sys/kernel/debug/kmemleak ] && grep -qw kmemleak=on /proc/cmdline; then
	sleep 6
	echo scan >/sys/kernel/debug/kmemleak
	leaks=$(cat /sys/kernel/debug/kmemleak)
	printf '%s\n' "$leaks" | while IFS= read -r line; do
		[ -n "$line" ] && echo "kmemleak: $line" >/dev/kmsg
	done
	[ -z "$leaks" ]
	ktap_result $? kmemleak "unreferenced objects, see the console log"
fi

echo "1..$KTAP_COUNT" >"$KTAP_OUT"
echo "# guest: done" >"$KTAP_OUT"
sync
reboot -f
