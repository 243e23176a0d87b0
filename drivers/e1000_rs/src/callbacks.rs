// SPDX-License-Identifier: GPL-2.0

//! The callbacks `netdev_shim.c`'s `net_device_ops` and `ethtool_ops` tables and NAPI registration
//! name, exported for the driver's adapter type by one macro: the one place that ties the network
//! device's interface ([`netdev`](crate::netdev)) to its ethtool answers
//! ([`ethtool`](crate::ethtool)), which neither module imports from the other.

/// Exports the callbacks that `netdev_shim.c`'s `net_device_ops` and `ethtool_ops` tables and NAPI
/// registration name, each passing its call on to the [`Interface`](crate::netdev::Interface) and
/// [`Ethtool`](crate::ethtool::Ethtool) `$adapter`,
/// and marks it [`Exported`](crate::netdev::Exported): the type that
/// [`NetDev::set_adapter`](crate::netdev::NetDev::set_adapter) takes. Both tables' callbacks
/// are exported together, so that the adapter the ethtool callbacks read is the one set.
macro_rules! net_device_ops {
    ($adapter:ty) => {
        // SAFETY: The callbacks below are `$adapter`'s.
        unsafe impl $crate::netdev::Exported for $adapter {}

        /// `ndo_open` of `netdev_shim.c`'s table.
        ///
        /// # Safety
        ///
        /// As for [`netdev::open`](crate::netdev::open).
        #[no_mangle]
        unsafe extern "C" fn e1000_rs_open(
            dev: *mut $crate::netdev::NetDevice,
        ) -> ::kernel::ffi::c_int {
            // SAFETY: By the function's safety requirements.
            unsafe { $crate::netdev::open::<$adapter>(dev) }
        }

        /// `ndo_stop` of `netdev_shim.c`'s table.
        ///
        /// # Safety
        ///
        /// As for [`netdev::stop`](crate::netdev::stop).
        #[no_mangle]
        unsafe extern "C" fn e1000_rs_stop(
            dev: *mut $crate::netdev::NetDevice,
        ) -> ::kernel::ffi::c_int {
            // SAFETY: By the function's safety requirements.
            unsafe { $crate::netdev::stop::<$adapter>(dev) }
        }

        /// `ndo_start_xmit` of `netdev_shim.c`'s table.
        ///
        /// # Safety
        ///
        /// As for [`netdev::start_xmit`](crate::netdev::start_xmit).
        #[no_mangle]
        unsafe extern "C" fn e1000_rs_start_xmit(
            skb: *mut ::kernel::bindings::sk_buff,
            dev: *mut $crate::netdev::NetDevice,
        ) -> ::kernel::ffi::c_int {
            // SAFETY: By the function's safety requirements.
            unsafe { $crate::netdev::start_xmit::<$adapter>(skb, dev) }
        }

        /// `ndo_get_stats64` of `netdev_shim.c`'s table.
        ///
        /// # Safety
        ///
        /// As for [`netdev::get_stats64`](crate::netdev::get_stats64).
        #[no_mangle]
        unsafe extern "C" fn e1000_rs_get_stats64(
            dev: *mut $crate::netdev::NetDevice,
            stats: *mut $crate::netdev::LinkStats64,
        ) {
            // SAFETY: By the function's safety requirements.
            unsafe { $crate::netdev::get_stats64::<$adapter>(dev, stats) }
        }

        /// `ndo_set_mac_address` of `netdev_shim.c`'s table.
        ///
        /// # Safety
        ///
        /// As for [`netdev::set_mac_address`](crate::netdev::set_mac_address).
        #[no_mangle]
        unsafe extern "C" fn e1000_rs_set_mac_address(
            dev: *mut $crate::netdev::NetDevice,
            addr: *mut ::kernel::ffi::c_void,
        ) -> ::kernel::ffi::c_int {
            // SAFETY: By the function's safety requirements.
            unsafe { $crate::netdev::set_mac_address::<$adapter>(dev, addr) }
        }

        /// `ndo_set_rx_mode_async` of `netdev_shim.c`'s table.
        ///
        /// # Safety
        ///
        /// As for [`netdev::set_rx_mode`](crate::netdev::set_rx_mode).
        #[no_mangle]
        unsafe extern "C" fn e1000_rs_set_rx_mode(
            dev: *mut $crate::netdev::NetDevice,
            unicast: *mut $crate::netdev::AddrList,
            multicast: *mut $crate::netdev::AddrList,
        ) -> ::kernel::ffi::c_int {
            // SAFETY: By the function's safety requirements.
            unsafe { $crate::netdev::set_rx_mode::<$adapter>(dev, unicast, multicast) }
        }

        /// `ndo_change_mtu` of `netdev_shim.c`'s table.
        ///
        /// # Safety
        ///
        /// As for [`netdev::change_mtu`](crate::netdev::change_mtu).
        #[no_mangle]
        unsafe extern "C" fn e1000_rs_change_mtu(
            dev: *mut $crate::netdev::NetDevice,
            mtu: ::kernel::ffi::c_int,
        ) -> ::kernel::ffi::c_int {
            // SAFETY: By the function's safety requirements.
            unsafe { $crate::netdev::change_mtu::<$adapter>(dev, mtu) }
        }

        /// `ndo_tx_timeout` of `netdev_shim.c`'s table.
        ///
        /// # Safety
        ///
        /// As for [`netdev::tx_timeout`](crate::netdev::tx_timeout).
        #[no_mangle]
        unsafe extern "C" fn e1000_rs_tx_timeout(
            dev: *mut $crate::netdev::NetDevice,
            _queue: ::kernel::ffi::c_uint,
        ) {
            // SAFETY: By the function's safety requirements.
            unsafe { $crate::netdev::tx_timeout::<$adapter>(dev) }
        }

        /// `ndo_fix_features` of `netdev_shim.c`'s table.
        ///
        /// # Safety
        ///
        /// As for [`netdev::fix_features`](crate::netdev::fix_features).
        #[no_mangle]
        unsafe extern "C" fn e1000_rs_fix_features(
            dev: *mut $crate::netdev::NetDevice,
            features: u64,
        ) -> u64 {
            // SAFETY: By the function's safety requirements.
            unsafe { $crate::netdev::fix_features::<$adapter>(dev, features) }
        }

        /// `ndo_set_features` of `netdev_shim.c`'s table.
        ///
        /// # Safety
        ///
        /// As for [`netdev::set_features`](crate::netdev::set_features).
        #[no_mangle]
        unsafe extern "C" fn e1000_rs_set_features(
            dev: *mut $crate::netdev::NetDevice,
            features: u64,
        ) -> ::kernel::ffi::c_int {
            // SAFETY: By the function's safety requirements.
            unsafe { $crate::netdev::set_features::<$adapter>(dev, features) }
        }

        /// `ndo_vlan_rx_add_vid` of `netdev_shim.c`'s table.
        ///
        /// # Safety
        ///
        /// As for [`netdev::set_vlan`](crate::netdev::set_vlan).
        #[no_mangle]
        unsafe extern "C" fn e1000_rs_vlan_rx_add_vid(
            dev: *mut $crate::netdev::NetDevice,
            _protocol: u16,
            vid: u16,
        ) -> ::kernel::ffi::c_int {
            // SAFETY: By the function's safety requirements.
            unsafe { $crate::netdev::set_vlan::<$adapter>(dev, vid, true) }
        }

        /// `ndo_vlan_rx_kill_vid` of `netdev_shim.c`'s table.
        ///
        /// # Safety
        ///
        /// As for [`netdev::set_vlan`](crate::netdev::set_vlan).
        #[no_mangle]
        unsafe extern "C" fn e1000_rs_vlan_rx_kill_vid(
            dev: *mut $crate::netdev::NetDevice,
            _protocol: u16,
            vid: u16,
        ) -> ::kernel::ffi::c_int {
            // SAFETY: By the function's safety requirements.
            unsafe { $crate::netdev::set_vlan::<$adapter>(dev, vid, false) }
        }

        $crate::ethtool::ethtool_ops!($adapter);

        /// The NAPI poll `netdev_shim.c` registers.
        ///
        /// # Safety
        ///
        /// As for [`netdev::poll`](crate::netdev::poll).
        #[no_mangle]
        unsafe extern "C" fn e1000_rs_poll(
            napi: *mut $crate::netdev::NapiStruct,
            budget: ::kernel::ffi::c_int,
        ) -> ::kernel::ffi::c_int {
            // SAFETY: By the function's safety requirements.
            unsafe { $crate::netdev::poll::<$adapter>(napi, budget) }
        }
    };
}
pub(crate) use net_device_ops;
