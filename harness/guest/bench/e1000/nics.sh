# shellcheck shell=sh
# What both VMs' scripts start with: their two NICs by PCI address (sorted: the NIC on link a
# first), and a way to bring one up.
# shellcheck disable=SC2046 # one argument per function
set -- $(pci_functions 0x8086:0x100e)
export NIC_A="$1" NIC_B="$2"
# up PCI ADDRESS: brings the NIC's interface up with ADDRESS/24.
up() { dev=$(iface_of "$1") && ip link set "$dev" up && ip addr add "$2/24" dev "$dev"; }
