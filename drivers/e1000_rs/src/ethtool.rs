// SPDX-License-Identifier: GPL-2.0

//! The driver's ethtool layer: `netdev_shim.c`'s `ethtool_ops` table calls the functions here,
//! which hand each request to the adapter's [`Ethtool`] implementation and answer in the ethtool
//! core's own structures (which the kernel's bindings declare). Like `netdev.rs`, it does not name
//! the adapter.

use kernel::{
    bindings,
    ffi::{c_int, c_ulong, c_void},
    prelude::*,
};

use crate::netdev::{adapter, Interface, NetDevice};

/// `ETH_GSTRING_LEN`: each statistic's name takes this many bytes, NUL-padded.
const NAME_LEN: usize = bindings::ETH_GSTRING_LEN as usize;

/// Link modes (`ETHTOOL_LINK_MODE_*_BIT`), as bits of the first word of a link mode mask.
pub(crate) mod link_mode {
    use kernel::bindings;

    pub(crate) const T10_HALF: u64 =
        1 << bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_10baseT_Half_BIT;
    pub(crate) const T10_FULL: u64 =
        1 << bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_10baseT_Full_BIT;
    pub(crate) const T100_HALF: u64 =
        1 << bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_100baseT_Half_BIT;
    pub(crate) const T100_FULL: u64 =
        1 << bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_100baseT_Full_BIT;
    pub(crate) const T1000_FULL: u64 =
        1 << bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_1000baseT_Full_BIT;
    pub(crate) const AUTONEG: u64 =
        1 << bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_Autoneg_BIT;
    pub(crate) const TP: u64 =
        1 << bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_TP_BIT;
}

/// A twisted-pair port's link, as `ethtool DEV` shows it.
pub(crate) struct LinkSettings {
    /// The link modes the port supports and advertises ([`link_mode`] bits).
    pub(crate) supported: u64,
    pub(crate) advertising: u64,
    /// Speed in Mb/s and whether full duplex, while the link is up.
    pub(crate) speed_duplex: Option<(u32, bool)>,
    /// Auto-negotiation is on.
    pub(crate) autoneg: bool,
    /// The PHY's address on the MDIO bus.
    pub(crate) phy_address: u8,
}

/// Descriptor ring sizes, current and most, as `ethtool -g` shows them.
pub(crate) struct RingSizes {
    pub(crate) rx: u32,
    pub(crate) tx: u32,
    pub(crate) rx_max: u32,
    pub(crate) tx_max: u32,
}

/// What the driver answers ethtool with. Every request comes under the RTNL lock.
pub(crate) trait Ethtool: Interface {
    /// How many statistics `ethtool -S` shows.
    const STAT_COUNT: usize;
    /// The name of statistic `i` (below [`Ethtool::STAT_COUNT`]), as `ethtool -S` shows it.
    fn stat_name(i: usize) -> &'static core::ffi::CStr;
    /// The statistics' values, in order; `values` has [`Ethtool::STAT_COUNT`] slots.
    fn stat_values(&self, values: &mut [u64]);
    /// The link's settings (`get_link_ksettings`).
    fn link_settings(&self) -> LinkSettings;
    /// Restarts auto-negotiation (`ethtool -r`, `nway_reset`).
    fn restart_autoneg(&self) -> Result;
    /// The rings' sizes (`ethtool -g`).
    fn ring_sizes(&self) -> RingSizes;
    /// Resizes the rings (`ethtool -G`), to counts the core checked against the most that
    /// [`Ethtool::ring_sizes`] reports.
    fn set_ring_sizes(&self, rx: u32, tx: u32) -> Result;
}

/// `get_link_ksettings`.
///
/// # Safety
///
/// Called by the ethtool core with one of this driver's registered devices, whose adapter is an
/// `A`, and a valid, zeroed `cmd`.
pub(crate) unsafe fn get_link_ksettings<A: Ethtool>(
    dev: *mut NetDevice,
    cmd: *mut bindings::ethtool_link_ksettings,
) -> c_int {
    // SAFETY: A registered device of this driver has its adapter set until it is unregistered.
    let link = unsafe { adapter::<A>(dev) }.link_settings();
    // SAFETY: `cmd` is valid and the core's for the call (safety requirement).
    let cmd = unsafe { &mut *cmd };
    // The first word of each mask holds every mode this layer names (bits below 64).
    cmd.link_modes.supported[0] = link.supported as c_ulong;
    cmd.link_modes.advertising[0] = link.advertising as c_ulong;
    let base = &mut cmd.base;
    let (speed, duplex) = match link.speed_duplex {
        Some((speed, full)) => (
            speed,
            if full {
                bindings::DUPLEX_FULL
            } else {
                bindings::DUPLEX_HALF
            },
        ),
        None => (bindings::SPEED_UNKNOWN as u32, bindings::DUPLEX_UNKNOWN),
    };
    base.speed = speed;
    base.duplex = duplex as u8;
    base.port = bindings::PORT_TP as u8;
    base.phy_address = link.phy_address;
    base.autoneg = if link.autoneg {
        bindings::AUTONEG_ENABLE
    } else {
        bindings::AUTONEG_DISABLE
    } as u8;
    0
}

/// `nway_reset`.
///
/// # Safety
///
/// As for [`get_link_ksettings`].
pub(crate) unsafe fn nway_reset<A: Ethtool>(dev: *mut NetDevice) -> c_int {
    // SAFETY: As in `get_link_ksettings`.
    match unsafe { adapter::<A>(dev) }.restart_autoneg() {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `get_ringparam`.
///
/// # Safety
///
/// As for [`get_link_ksettings`], with a valid `ring`.
pub(crate) unsafe fn get_ringparam<A: Ethtool>(
    dev: *mut NetDevice,
    ring: *mut bindings::ethtool_ringparam,
) {
    // SAFETY: As in `get_link_ksettings`.
    let sizes = unsafe { adapter::<A>(dev) }.ring_sizes();
    // SAFETY: `ring` is valid and the core's for the call (safety requirement).
    let ring = unsafe { &mut *ring };
    ring.rx_max_pending = sizes.rx_max;
    ring.tx_max_pending = sizes.tx_max;
    ring.rx_pending = sizes.rx;
    ring.tx_pending = sizes.tx;
}

/// `set_ringparam`.
///
/// # Safety
///
/// As for [`get_ringparam`].
pub(crate) unsafe fn set_ringparam<A: Ethtool>(
    dev: *mut NetDevice,
    ring: *mut bindings::ethtool_ringparam,
) -> c_int {
    // SAFETY: `ring` is valid and the core's for the call (safety requirement).
    let (rx, tx) = unsafe { ((*ring).rx_pending, (*ring).tx_pending) };
    // SAFETY: As in `get_link_ksettings`.
    match unsafe { adapter::<A>(dev) }.set_ring_sizes(rx, tx) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `get_sset_count`: how many statistics `ethtool -S` shows; none of the other string sets.
///
/// # Safety
///
/// As for [`get_link_ksettings`].
pub(crate) unsafe fn get_sset_count<A: Ethtool>(_dev: *mut NetDevice, set: c_int) -> c_int {
    if set == bindings::ethtool_stringset_ETH_SS_STATS as c_int {
        A::STAT_COUNT as c_int
    } else {
        // Not `EOPNOTSUPP.to_errno()`: 7.2's kernel crate does not name it.
        -(bindings::EOPNOTSUPP as c_int)
    }
}

/// `get_strings`: the statistics' names, [`NAME_LEN`] bytes each.
///
/// # Safety
///
/// As for [`get_link_ksettings`]; `data` has room for as many names as [`get_sset_count`] said.
pub(crate) unsafe fn get_strings<A: Ethtool>(_dev: *mut NetDevice, set: u32, data: *mut u8) {
    if set != bindings::ethtool_stringset_ETH_SS_STATS {
        return;
    }
    for i in 0..A::STAT_COUNT {
        let name = A::stat_name(i).to_bytes();
        let len = name.len().min(NAME_LEN - 1);
        // SAFETY: Slot `i` of `NAME_LEN` bytes lies in `data` (safety requirement); the name
        // fills at most all but its last byte, and the rest is zeroed.
        unsafe {
            let slot = data.add(i * NAME_LEN);
            core::ptr::copy_nonoverlapping(name.as_ptr(), slot, len);
            core::ptr::write_bytes(slot.add(len), 0, NAME_LEN - len);
        }
    }
}

/// `get_ethtool_stats`.
///
/// # Safety
///
/// As for [`get_link_ksettings`]; `data` has room for as many values as [`get_sset_count`] said.
pub(crate) unsafe fn get_ethtool_stats<A: Ethtool>(
    dev: *mut NetDevice,
    _stats: *mut c_void,
    data: *mut u64,
) {
    // SAFETY: `data` holds a `u64` per statistic, the core's for the call (safety requirement).
    let values = unsafe { core::slice::from_raw_parts_mut(data, A::STAT_COUNT) };
    values.fill(0);
    // SAFETY: As in `get_link_ksettings`.
    unsafe { adapter::<A>(dev) }.stat_values(values);
}

/// Exports the callbacks of `netdev_shim.c`'s `ethtool_ops` table for the [`Ethtool`] `$adapter`;
/// `callbacks::net_device_ops!` invokes it.
macro_rules! ethtool_ops {
    ($adapter:ty) => {
        /// `get_link_ksettings` of `netdev_shim.c`'s ethtool table.
        ///
        /// # Safety
        ///
        /// As for [`ethtool::get_link_ksettings`](crate::ethtool::get_link_ksettings).
        #[no_mangle]
        unsafe extern "C" fn e1000_rs_get_link_ksettings(
            dev: *mut $crate::netdev::NetDevice,
            cmd: *mut ::kernel::bindings::ethtool_link_ksettings,
        ) -> ::kernel::ffi::c_int {
            // SAFETY: By the function's safety requirements.
            unsafe { $crate::ethtool::get_link_ksettings::<$adapter>(dev, cmd) }
        }

        /// `nway_reset` of `netdev_shim.c`'s ethtool table.
        ///
        /// # Safety
        ///
        /// As for [`ethtool::nway_reset`](crate::ethtool::nway_reset).
        #[no_mangle]
        unsafe extern "C" fn e1000_rs_nway_reset(
            dev: *mut $crate::netdev::NetDevice,
        ) -> ::kernel::ffi::c_int {
            // SAFETY: By the function's safety requirements.
            unsafe { $crate::ethtool::nway_reset::<$adapter>(dev) }
        }

        /// `get_ringparam` of `netdev_shim.c`'s ethtool table.
        ///
        /// # Safety
        ///
        /// As for [`ethtool::get_ringparam`](crate::ethtool::get_ringparam).
        #[no_mangle]
        unsafe extern "C" fn e1000_rs_get_ringparam(
            dev: *mut $crate::netdev::NetDevice,
            ring: *mut ::kernel::bindings::ethtool_ringparam,
            _kernel_ring: *mut ::kernel::ffi::c_void,
            _extack: *mut ::kernel::ffi::c_void,
        ) {
            // SAFETY: By the function's safety requirements.
            unsafe { $crate::ethtool::get_ringparam::<$adapter>(dev, ring) }
        }

        /// `set_ringparam` of `netdev_shim.c`'s ethtool table.
        ///
        /// # Safety
        ///
        /// As for [`ethtool::set_ringparam`](crate::ethtool::set_ringparam).
        #[no_mangle]
        unsafe extern "C" fn e1000_rs_set_ringparam(
            dev: *mut $crate::netdev::NetDevice,
            ring: *mut ::kernel::bindings::ethtool_ringparam,
            _kernel_ring: *mut ::kernel::ffi::c_void,
            _extack: *mut ::kernel::ffi::c_void,
        ) -> ::kernel::ffi::c_int {
            // SAFETY: By the function's safety requirements.
            unsafe { $crate::ethtool::set_ringparam::<$adapter>(dev, ring) }
        }

        /// `get_sset_count` of `netdev_shim.c`'s ethtool table.
        ///
        /// # Safety
        ///
        /// As for [`ethtool::get_sset_count`](crate::ethtool::get_sset_count).
        #[no_mangle]
        unsafe extern "C" fn e1000_rs_get_sset_count(
            dev: *mut $crate::netdev::NetDevice,
            set: ::kernel::ffi::c_int,
        ) -> ::kernel::ffi::c_int {
            // SAFETY: By the function's safety requirements.
            unsafe { $crate::ethtool::get_sset_count::<$adapter>(dev, set) }
        }

        /// `get_strings` of `netdev_shim.c`'s ethtool table.
        ///
        /// # Safety
        ///
        /// As for [`ethtool::get_strings`](crate::ethtool::get_strings).
        #[no_mangle]
        unsafe extern "C" fn e1000_rs_get_strings(
            dev: *mut $crate::netdev::NetDevice,
            set: u32,
            data: *mut u8,
        ) {
            // SAFETY: By the function's safety requirements.
            unsafe { $crate::ethtool::get_strings::<$adapter>(dev, set, data) }
        }

        /// `get_ethtool_stats` of `netdev_shim.c`'s ethtool table.
        ///
        /// # Safety
        ///
        /// As for [`ethtool::get_ethtool_stats`](crate::ethtool::get_ethtool_stats).
        #[no_mangle]
        unsafe extern "C" fn e1000_rs_get_ethtool_stats(
            dev: *mut $crate::netdev::NetDevice,
            stats: *mut ::kernel::ffi::c_void,
            data: *mut u64,
        ) {
            // SAFETY: By the function's safety requirements.
            unsafe { $crate::ethtool::get_ethtool_stats::<$adapter>(dev, stats, data) }
        }
    };
}
pub(crate) use ethtool_ops;
