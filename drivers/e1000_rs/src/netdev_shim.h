/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The netdev side of e1000_rs: one-line wrappers of the static inline functions and macros that
 * Rust cannot call (the timer's and the work item's among them), two offsets it reads opaque
 * structures at, and the callbacks that Rust implements for the net_device_ops and ethtool_ops
 * tables.
 */
#ifndef E1000_RS_NETDEV_SHIM_H
#define E1000_RS_NETDEV_SHIM_H

#include <linux/ethtool.h>
#include <linux/netdevice.h>
#include <linux/workqueue.h>

/* Implemented in Rust (src/netdev.rs's net_device_ops!, exported by src/adapter.rs). */
int e1000_rs_open(struct net_device *dev);
int e1000_rs_stop(struct net_device *dev);
netdev_tx_t e1000_rs_start_xmit(struct sk_buff *skb, struct net_device *dev);
void e1000_rs_get_stats64(struct net_device *dev, struct rtnl_link_stats64 *stats);
int e1000_rs_set_mac_address(struct net_device *dev, void *addr);
int e1000_rs_set_rx_mode(struct net_device *dev, struct netdev_hw_addr_list *uc,
			 struct netdev_hw_addr_list *mc);
int e1000_rs_poll(struct napi_struct *napi, int budget);
int e1000_rs_change_mtu(struct net_device *dev, int mtu);
void e1000_rs_tx_timeout(struct net_device *dev, unsigned int queue);
netdev_features_t e1000_rs_fix_features(struct net_device *dev, netdev_features_t features);
int e1000_rs_set_features(struct net_device *dev, netdev_features_t features);
int e1000_rs_vlan_rx_add_vid(struct net_device *dev, __be16 protocol, u16 vid);
int e1000_rs_vlan_rx_kill_vid(struct net_device *dev, __be16 protocol, u16 vid);

/* Implemented in Rust (src/ethtool.rs's ethtool_ops!). */
int e1000_rs_get_link_ksettings(struct net_device *dev, struct ethtool_link_ksettings *cmd);
int e1000_rs_set_link_ksettings(struct net_device *dev, const struct ethtool_link_ksettings *cmd);
int e1000_rs_nway_reset(struct net_device *dev);
void e1000_rs_get_ringparam(struct net_device *dev, struct ethtool_ringparam *ring,
			    struct kernel_ethtool_ringparam *kernel_ring,
			    struct netlink_ext_ack *extack);
int e1000_rs_set_ringparam(struct net_device *dev, struct ethtool_ringparam *ring,
			   struct kernel_ethtool_ringparam *kernel_ring,
			   struct netlink_ext_ack *extack);
int e1000_rs_get_sset_count(struct net_device *dev, int set);
void e1000_rs_get_strings(struct net_device *dev, u32 set, u8 *data);
void e1000_rs_get_ethtool_stats(struct net_device *dev, struct ethtool_stats *stats, u64 *data);
void e1000_rs_get_pauseparam(struct net_device *dev, struct ethtool_pauseparam *pause);
int e1000_rs_set_pauseparam(struct net_device *dev, struct ethtool_pauseparam *pause);
u32 e1000_rs_get_msglevel(struct net_device *dev);
void e1000_rs_set_msglevel(struct net_device *dev, u32 level);
void e1000_rs_get_wol(struct net_device *dev, struct ethtool_wolinfo *wol);
int e1000_rs_set_wol(struct net_device *dev, struct ethtool_wolinfo *wol);
int e1000_rs_set_phys_id(struct net_device *dev, enum ethtool_phys_id_state state);
int e1000_rs_get_regs_len(struct net_device *dev);
void e1000_rs_get_regs(struct net_device *dev, struct ethtool_regs *regs, void *data);
int e1000_rs_get_eeprom_len(struct net_device *dev);
int e1000_rs_get_eeprom(struct net_device *dev, struct ethtool_eeprom *eeprom, u8 *data);
int e1000_rs_set_eeprom(struct net_device *dev, struct ethtool_eeprom *eeprom, u8 *data);
void e1000_rs_self_test(struct net_device *dev, struct ethtool_test *test, u64 *data);

/*
 * The counters e1000_rs reports through ndo_get_stats64; netdev.rs's Stats mirrors this layout
 * and asserts the same size.
 */
struct e1000_rs_stats {
	u64 rx_packets, rx_bytes, tx_packets, tx_bytes;
	u64 rx_errors, rx_dropped, tx_dropped;
	u64 rx_length_errors, rx_crc_errors, rx_missed_errors;
};
static_assert(sizeof(struct e1000_rs_stats) == 10 * sizeof(u64));

/* Offsets netdev.rs reads the private area and the adapter pointer at. */
extern const size_t e1000_rs_priv_offset;
extern const size_t e1000_rs_adapter_offset;

struct net_device *e1000_rs_alloc_netdev(struct device *parent, bool hw_csum, bool sg, bool tso,
					 bool rxcsum, bool rxfcs_rxall, bool unicast_filter, bool vlan,
					 unsigned int min_mtu,
					 unsigned int max_mtu,
					 unsigned int tx_timeout_ms);
void e1000_rs_set_mtu(struct net_device *dev, unsigned int mtu);
bool e1000_rs_is_up(struct net_device *dev);
void e1000_rs_device_detach(struct net_device *dev);
void e1000_rs_device_attach(struct net_device *dev);
void e1000_rs_rtnl_lock(void);
void e1000_rs_rtnl_unlock(void);
void e1000_rs_set_adapter(struct net_device *dev, void *adapter);
int e1000_rs_register(struct net_device *dev);
void e1000_rs_unregister(struct net_device *dev);
void e1000_rs_free(struct net_device *dev);
void e1000_rs_set_hw_addr(struct net_device *dev, const u8 *addr);
const u8 *e1000_rs_dev_addr(struct net_device *dev);
const u8 *e1000_rs_sockaddr_data(void *sockaddr);
bool e1000_rs_valid_ether_addr(const u8 *addr);
bool e1000_rs_device_can_wakeup(struct device *dev);
void e1000_rs_device_set_wakeup_enable(struct device *dev, bool enable);
void e1000_rs_carrier(struct net_device *dev, bool on);
bool e1000_rs_carrier_ok(struct net_device *dev);
unsigned int e1000_rs_flags(struct net_device *dev);
const unsigned char *e1000_rs_addr_next(struct netdev_hw_addr_list *list, const unsigned char *prev);
void e1000_rs_start_queue(struct net_device *dev);
void e1000_rs_stop_queue(struct net_device *dev);
void e1000_rs_disable_transmit(struct net_device *dev);
void e1000_rs_wake_queue(struct net_device *dev);
bool e1000_rs_queue_stopped(struct net_device *dev);
bool e1000_rs_xmit_stopped(struct net_device *dev);
bool e1000_rs_xmit_more(void);
bool e1000_rs_sent_queue(struct net_device *dev, unsigned int bytes);
void e1000_rs_completed_queue(struct net_device *dev, unsigned int packets, unsigned int bytes);
void e1000_rs_reset_queue(struct net_device *dev);
void e1000_rs_napi_enable(struct napi_struct *napi);
void e1000_rs_napi_disable(struct napi_struct *napi);
void e1000_rs_napi_schedule(struct napi_struct *napi);
bool e1000_rs_napi_complete_done(struct napi_struct *napi, int work_done);
u64 e1000_rs_features(struct net_device *dev);
void e1000_rs_skb_checksum_complete(struct sk_buff *skb, __wsum checksum);
void e1000_rs_skb_reserve(struct sk_buff *skb, unsigned int length);
void e1000_rs_receive(struct napi_struct *napi, struct sk_buff *skb);
void e1000_rs_free_skb(struct sk_buff *skb);
int e1000_rs_skb_checksum_help(struct sk_buff *skb);
void *e1000_rs_skb_frag_address(struct sk_buff *skb, unsigned int i);
int e1000_rs_skb_cow_head(struct sk_buff *skb);
unsigned int e1000_rs_skb_network_offset(struct sk_buff *skb);
unsigned int e1000_rs_skb_transport_offset(struct sk_buff *skb);
unsigned int e1000_rs_tcp_hdrlen(struct sk_buff *skb);
void e1000_rs_skb_vlan_tag_put(struct sk_buff *skb, u16 tci);
bool e1000_rs_skb_add_rx_frag(struct sk_buff *skb, void *data, unsigned int length,
			      unsigned int truesize);
void e1000_rs_set_stats(struct rtnl_link_stats64 *stats, const struct e1000_rs_stats *counters);

/* The timer of src/timer.rs. */
void e1000_rs_timer_setup(struct timer_list *timer, void (*fired)(struct timer_list *));
bool e1000_rs_timer_pending(const struct timer_list *timer);
void e1000_rs_timer_arm(struct timer_list *timer, unsigned int ms);

/* The work item of src/work.rs. */
void e1000_rs_work_init(struct work_struct *work, void (*run)(struct work_struct *));
bool e1000_rs_work_schedule(struct work_struct *work);

/* The fail_mmio_read fault attribute of src/hw.rs; stubs without CONFIG_FAULT_INJECTION_DEBUG_FS. */
void e1000_rs_fault_init(void);
void e1000_rs_fault_exit(void);
bool e1000_rs_fail_mmio_read(void);

#endif /* E1000_RS_NETDEV_SHIM_H */
