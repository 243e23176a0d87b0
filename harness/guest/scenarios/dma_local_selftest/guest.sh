# shellcheck shell=sh
check load insmod /modules/dma_local_selftest.ko
check bus-master-while-bound pci_bus_master 0000:00:02.0
dmesg | sed -n 's/^\[[^]]*\] dma_local_selftest: //p' >/tmp/selftest.ktap
plan=$(sed -n 's/^1\.\.//p' /tmp/selftest.ktap)
diag "plan=$plan"
while IFS= read -r line; do
    case $line in
    "not ok "*)
        rest=${line#not ok * }
        ktap_result 1 "dma_local.${rest%% #*}" "${rest#* # }"
        ;;
    "ok "*)
        rest=${line#ok * }
        ktap_result 0 "dma_local.$rest"
        ;;
    esac
done </tmp/selftest.ktap
diag "forwarded=$KTAP_COUNT"
check unload rmmod dma_local_selftest
check released-at-unload pci_released 0000:00:02.0
