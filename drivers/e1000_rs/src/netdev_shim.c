// SPDX-License-Identifier: GPL-2.0
/*
 * One-line wrappers for what Rust cannot call: static inline functions, macros, the fields of
 * net_device and napi_struct (which bindgen leaves opaque), and the networking functions the
 * kernel's bindings do not declare. Also the net_device_ops and ethtool_ops tables, whose callbacks
 * are all in Rust, and two offsets into structures bindgen leaves opaque. No driver logic lives here.
 */
#include <linux/debugfs.h>
#include <linux/etherdevice.h>
#include <linux/fault-inject.h>
#include <linux/if_vlan.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/tcp.h>
#include <linux/timer.h>
#include <linux/workqueue.h>

#include "netdev_shim.h"

/* netdev.rs returns these as plain integers. */
static_assert(NETDEV_TX_OK == 0x00 && NETDEV_TX_BUSY == 0x10);

/* The net_device's private area: the NAPI context and a pointer to the Rust adapter. */
struct e1000_rs_priv {
	struct napi_struct napi;
	void *adapter;
};

/*
 * netdev.rs finds the private area (netdev_priv: the priv array) and the adapter in it at these
 * offsets, and the NAPI context at the area's start: bindgen leaves both structures opaque.
 */
const size_t e1000_rs_priv_offset = offsetof(struct net_device, priv);
const size_t e1000_rs_adapter_offset = offsetof(struct e1000_rs_priv, adapter);
static_assert(offsetof(struct e1000_rs_priv, napi) == 0);

static const struct net_device_ops e1000_rs_netdev_ops = {
	.ndo_open = e1000_rs_open,
	.ndo_stop = e1000_rs_stop,
	.ndo_start_xmit = e1000_rs_start_xmit,
	.ndo_get_stats64 = e1000_rs_get_stats64,
	.ndo_set_mac_address = e1000_rs_set_mac_address,
	.ndo_set_rx_mode_async = e1000_rs_set_rx_mode,
	.ndo_validate_addr = eth_validate_addr,
	.ndo_change_mtu = e1000_rs_change_mtu,
	.ndo_tx_timeout = e1000_rs_tx_timeout,
	.ndo_fix_features = e1000_rs_fix_features,
	.ndo_set_features = e1000_rs_set_features,
	.ndo_vlan_rx_add_vid = e1000_rs_vlan_rx_add_vid,
	.ndo_vlan_rx_kill_vid = e1000_rs_vlan_rx_kill_vid,
};

/* netdev.rs passes features as a u64. */
static_assert(sizeof(netdev_features_t) == sizeof(u64));

static const struct ethtool_ops e1000_rs_ethtool_ops = {
	.get_link = ethtool_op_get_link,
	.get_link_ksettings = e1000_rs_get_link_ksettings,
	.set_link_ksettings = e1000_rs_set_link_ksettings,
	.nway_reset = e1000_rs_nway_reset,
	.get_ringparam = e1000_rs_get_ringparam,
	.set_ringparam = e1000_rs_set_ringparam,
	.get_sset_count = e1000_rs_get_sset_count,
	.get_strings = e1000_rs_get_strings,
	.get_ethtool_stats = e1000_rs_get_ethtool_stats,
	.get_pauseparam = e1000_rs_get_pauseparam,
	.set_pauseparam = e1000_rs_set_pauseparam,
	.get_msglevel = e1000_rs_get_msglevel,
	.set_msglevel = e1000_rs_set_msglevel,
	.get_wol = e1000_rs_get_wol,
	.set_wol = e1000_rs_set_wol,
	.set_phys_id = e1000_rs_set_phys_id,
	.get_regs_len = e1000_rs_get_regs_len,
	.get_regs = e1000_rs_get_regs,
	.get_eeprom_len = e1000_rs_get_eeprom_len,
	.get_eeprom = e1000_rs_get_eeprom,
	.set_eeprom = e1000_rs_set_eeprom,
	.self_test = e1000_rs_self_test,
};

/* ethtool.rs's msg module names the message classes with these values. */
static_assert(NETIF_MSG_DRV == 1 << 0 && NETIF_MSG_PROBE == 1 << 1 && NETIF_MSG_LINK == 1 << 2);

bool e1000_rs_device_can_wakeup(struct device *dev)
{
	return device_can_wakeup(dev);
}

/* A static inline without CONFIG_PM_SLEEP. */
void e1000_rs_device_set_wakeup_enable(struct device *dev, bool enable)
{
	device_set_wakeup_enable(dev, enable);
}

/* The features are offload.rs's choice; this only spells them as the stack does. */
struct net_device *e1000_rs_alloc_netdev(struct device *parent, bool hw_csum, bool sg, bool tso,
					 bool rxcsum, bool rxfcs_rxall, bool unicast_filter, bool vlan,
					 unsigned int min_mtu,
					 unsigned int max_mtu,
					 unsigned int tx_timeout_ms)
{
	struct net_device *dev = alloc_etherdev(sizeof(struct e1000_rs_priv));
	netdev_features_t offloads = (hw_csum ? NETIF_F_HW_CSUM : 0) | (sg ? NETIF_F_SG : 0) |
				     (tso ? NETIF_F_TSO : 0);
	netdev_features_t features = offloads | (rxcsum ? NETIF_F_RXCSUM : 0);

	if (dev) {
		SET_NETDEV_DEV(dev, parent);
		dev->netdev_ops = &e1000_rs_netdev_ops;
		dev->ethtool_ops = &e1000_rs_ethtool_ops;
		dev->min_mtu = min_mtu;
		dev->max_mtu = max_mtu;
		dev->watchdog_timeo = msecs_to_jiffies(tx_timeout_ms);
		dev->features |= features;
		dev->hw_features |= features;
		if (rxfcs_rxall)
			dev->hw_features |= NETIF_F_RXFCS | NETIF_F_RXALL;
		if (vlan) {
			dev->features |= NETIF_F_HW_VLAN_CTAG_RX | NETIF_F_HW_VLAN_CTAG_TX |
					 NETIF_F_HW_VLAN_CTAG_FILTER;
			/* Insertion follows stripping (e1000_rs_fix_features). */
			dev->hw_features |= NETIF_F_HW_VLAN_CTAG_RX;
			dev->vlan_features |= offloads;
		}
		if (unicast_filter)
			dev->priv_flags |= IFF_UNICAST_FLT;
		netif_napi_add(dev, netdev_priv(dev), e1000_rs_poll);
	}
	return dev;
}

void e1000_rs_set_mtu(struct net_device *dev, unsigned int mtu)
{
	WRITE_ONCE(dev->mtu, mtu);
}

bool e1000_rs_is_up(struct net_device *dev)
{
	return netif_running(dev);
}

void e1000_rs_device_detach(struct net_device *dev)
{
	netif_device_detach(dev);
}

void e1000_rs_device_attach(struct net_device *dev)
{
	netif_device_attach(dev);
}

void e1000_rs_rtnl_lock(void)
{
	rtnl_lock();
}

void e1000_rs_rtnl_unlock(void)
{
	rtnl_unlock();
}

void e1000_rs_set_adapter(struct net_device *dev, void *adapter)
{
	((struct e1000_rs_priv *)netdev_priv(dev))->adapter = adapter;
}

int e1000_rs_register(struct net_device *dev)
{
	return register_netdev(dev);
}

void e1000_rs_unregister(struct net_device *dev)
{
	unregister_netdev(dev);
}

void e1000_rs_free(struct net_device *dev)
{
	free_netdev(dev);
}

void e1000_rs_set_hw_addr(struct net_device *dev, const u8 *addr)
{
	eth_hw_addr_set(dev, addr);
}

const u8 *e1000_rs_dev_addr(struct net_device *dev)
{
	return dev->dev_addr;
}

const u8 *e1000_rs_sockaddr_data(void *sockaddr)
{
	return (const u8 *)((struct sockaddr *)sockaddr)->sa_data;
}

bool e1000_rs_valid_ether_addr(const u8 *addr)
{
	return is_valid_ether_addr(addr);
}

void e1000_rs_carrier(struct net_device *dev, bool on)
{
	if (on)
		netif_carrier_on(dev);
	else
		netif_carrier_off(dev);
}

bool e1000_rs_carrier_ok(struct net_device *dev)
{
	return netif_carrier_ok(dev);
}

unsigned int e1000_rs_flags(struct net_device *dev)
{
	return dev->flags;
}

/* The address after prev in list (the first for NULL), or NULL after the last. */
const unsigned char *e1000_rs_addr_next(struct netdev_hw_addr_list *list, const unsigned char *prev)
{
	struct list_head *next = prev ?
		container_of_const(prev, struct netdev_hw_addr, addr[0])->list.next : list->list.next;

	return next == &list->list ? NULL : list_entry(next, struct netdev_hw_addr, list)->addr;
}

void e1000_rs_start_queue(struct net_device *dev)
{
	netif_start_queue(dev);
}

void e1000_rs_stop_queue(struct net_device *dev)
{
	netif_stop_queue(dev);
}

void e1000_rs_disable_transmit(struct net_device *dev)
{
	netif_tx_disable(dev);
}

void e1000_rs_wake_queue(struct net_device *dev)
{
	netif_wake_queue(dev);
}

bool e1000_rs_queue_stopped(struct net_device *dev)
{
	return netif_queue_stopped(dev);
}

bool e1000_rs_xmit_stopped(struct net_device *dev)
{
	return netif_xmit_stopped(netdev_get_tx_queue(dev, 0));
}

bool e1000_rs_xmit_more(void)
{
	return netdev_xmit_more();
}

bool e1000_rs_sent_queue(struct net_device *dev, unsigned int bytes)
{
	return __netdev_tx_sent_queue(netdev_get_tx_queue(dev, 0), bytes, netdev_xmit_more());
}

void e1000_rs_completed_queue(struct net_device *dev, unsigned int packets, unsigned int bytes)
{
	netdev_completed_queue(dev, packets, bytes);
}

void e1000_rs_reset_queue(struct net_device *dev)
{
	netdev_reset_queue(dev);
}

void e1000_rs_napi_enable(struct napi_struct *napi)
{
	napi_enable(napi);
}

void e1000_rs_napi_disable(struct napi_struct *napi)
{
	napi_disable(napi);
}

void e1000_rs_napi_schedule(struct napi_struct *napi)
{
	napi_schedule(napi);
}

bool e1000_rs_napi_complete_done(struct napi_struct *napi, int work_done)
{
	return napi_complete_done(napi, work_done);
}

u64 e1000_rs_features(struct net_device *dev)
{
	return dev->features;
}

void e1000_rs_skb_checksum_complete(struct sk_buff *skb, __wsum checksum)
{
	skb->ip_summed = CHECKSUM_COMPLETE;
	skb->csum = checksum;
}

void e1000_rs_skb_reserve(struct sk_buff *skb, unsigned int length)
{
	/* skb.rs's RX_HEADROOM, which it reserves; NET_SKB_PAD is not constant at file scope. */
	BUILD_BUG_ON(NET_SKB_PAD + NET_IP_ALIGN != 64);
	skb_reserve(skb, length);
}

void e1000_rs_receive(struct napi_struct *napi, struct sk_buff *skb)
{
	skb->protocol = eth_type_trans(skb, napi->dev);
	napi_gro_receive(napi, skb);
}

void e1000_rs_free_skb(struct sk_buff *skb)
{
	dev_kfree_skb_any(skb);
}

int e1000_rs_skb_checksum_help(struct sk_buff *skb)
{
	return skb_checksum_help(skb);
}

void *e1000_rs_skb_frag_address(struct sk_buff *skb, unsigned int i)
{
	return skb_frag_address(&skb_shinfo(skb)->frags[i]);
}

int e1000_rs_skb_cow_head(struct sk_buff *skb)
{
	return skb_cow_head(skb, 0);
}

unsigned int e1000_rs_skb_network_offset(struct sk_buff *skb)
{
	return skb_network_offset(skb);
}

unsigned int e1000_rs_skb_transport_offset(struct sk_buff *skb)
{
	return skb_transport_offset(skb);
}

unsigned int e1000_rs_tcp_hdrlen(struct sk_buff *skb)
{
	return tcp_hdrlen(skb);
}

void e1000_rs_skb_vlan_tag_put(struct sk_buff *skb, u16 tci)
{
	__vlan_hwaccel_put_tag(skb, htons(ETH_P_8021Q), tci);
}

/* Hands the skb the reference to the page fragment at data, as freeing it with page_frag_free would drop. */
bool e1000_rs_skb_add_rx_frag(struct sk_buff *skb, void *data, unsigned int length,
			      unsigned int truesize)
{
	struct page *page = virt_to_head_page(data);

	if (skb_shinfo(skb)->nr_frags >= MAX_SKB_FRAGS)
		return false;
	skb_add_rx_frag(skb, skb_shinfo(skb)->nr_frags, page, data - page_address(page), length,
			truesize);
	return true;
}

void e1000_rs_set_stats(struct rtnl_link_stats64 *stats, const struct e1000_rs_stats *counters)
{
	stats->rx_packets = counters->rx_packets;
	stats->rx_bytes = counters->rx_bytes;
	stats->tx_packets = counters->tx_packets;
	stats->tx_bytes = counters->tx_bytes;
	stats->rx_errors = counters->rx_errors;
	stats->rx_dropped = counters->rx_dropped;
	stats->tx_dropped = counters->tx_dropped;
	stats->rx_length_errors = counters->rx_length_errors;
	stats->rx_crc_errors = counters->rx_crc_errors;
	stats->rx_missed_errors = counters->rx_missed_errors;
}

void e1000_rs_timer_setup(struct timer_list *timer, void (*fired)(struct timer_list *))
{
	timer_setup(timer, fired, 0);
}

bool e1000_rs_timer_pending(const struct timer_list *timer)
{
	return timer_pending(timer);
}

void e1000_rs_timer_arm(struct timer_list *timer, unsigned int ms)
{
	mod_timer(timer, jiffies + msecs_to_jiffies(ms));
}

void e1000_rs_work_init(struct work_struct *work, void (*run)(struct work_struct *))
{
	INIT_WORK(work, run);
}

/* Not schedule_work: its system_wq is deprecated for new users. */
bool e1000_rs_work_schedule(struct work_struct *work)
{
	return queue_work(system_dfl_wq, work);
}

#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
/*
 * fail_mmio_read (Documentation/fault-injection): while it fires, a register read returns all ones
 * once it has reached the device, as a device gone from the bus reads. Its knobs are in
 * /sys/kernel/debug/e1000_rs/fail_mmio_read/ from module init to module exit.
 */
static DECLARE_FAULT_ATTR(fail_mmio_read);
static struct dentry *e1000_rs_debugfs;

void e1000_rs_fault_init(void)
{
	/* debugfs failures are not the module's: an error parent makes the attribute fail too. */
	e1000_rs_debugfs = debugfs_create_dir("e1000_rs", NULL);
	fault_create_debugfs_attr("fail_mmio_read", e1000_rs_debugfs, &fail_mmio_read);
}

void e1000_rs_fault_exit(void)
{
	debugfs_remove_recursive(e1000_rs_debugfs);
}

bool e1000_rs_fail_mmio_read(void)
{
	/*
	 * Off (probability 0), the reads are no fault point at all: not even for fail-nth, which
	 * should_fail() would otherwise count them for in a task that set it.
	 */
	if (likely(!READ_ONCE(fail_mmio_read.probability)))
		return false;
	return should_fail(&fail_mmio_read, sizeof(u32));
}
#else
void e1000_rs_fault_init(void)
{
}

void e1000_rs_fault_exit(void)
{
}

bool e1000_rs_fail_mmio_read(void)
{
	return false;
}
#endif
