# shellcheck shell=sh
# The peer: the C e1000 on both NICs, the other end of every transfer. After nics.sh (NIC_A,
# NIC_B, up). Exported by bench_e1000: CHUNK_MIB per transfer, PER_LINK (transfers each way on
# each link).
dd if=/dev/urandom of=/tmp/data bs=1M count="$CHUNK_MIB" 2>/dev/null
insmod /modules/e1000.ko
wait_for 10 iface_of $NIC_A && wait_for 10 iface_of $NIC_B
up $NIC_A 10.0.0.2 && up $NIC_B 10.0.1.2
# serve LINK PORT DUT BACK: on LINK, receive each transfer from the DUT and send one back.
serve() {
    n=0
    while [ $n -lt "$PER_LINK" ]; do
        tx=$(netpipe recv $2 2>&1 >/dev/null)
        diag "$1.$n.tx=$tx"
        netpipe send $3 $4 </tmp/data 2>/dev/null
        n=$((n + 1))
    done
}
serve a 6001 10.0.0.1 6002 &
serve b 6003 10.0.1.1 6004 &
wait
check benchmark-done true
