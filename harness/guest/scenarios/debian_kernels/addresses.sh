# shellcheck shell=sh
export DUT=169.254.0.1 PEER=169.254.0.2
up() { ip link set eth0 up && ip addr add "$1/16" dev eth0; }
