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
    /// While the link is up, whether the PHY crossed the pairs over (MDI-X) rather than not
    /// (MDI).
    pub(crate) crossed_over: Option<bool>,
    /// How it chooses: `ETH_TP_MDI_AUTO`, or forced `ETH_TP_MDI` or `ETH_TP_MDI_X`.
    pub(crate) crossover_ctrl: u8,
}

/// What `ethtool -s` passes the driver (`ethtool_link_ksettings`): the core fills in what the
/// command leaves out from what the driver reported.
pub(crate) struct LinkRequest {
    pub(crate) autoneg: bool,
    /// [`link_mode`] bits, of which those the PHY cannot advertise are dropped.
    pub(crate) advertising: u64,
    pub(crate) speed: u32,
    pub(crate) duplex: u8,
    /// An `ETH_TP_MDI*` value; `ETH_TP_MDI_INVALID` leaves the crossover as it is.
    pub(crate) mdix_ctrl: u8,
}

/// Flow control as `ethtool -a` shows it and `-A` sets it: negotiated or forced, and the
/// directions PAUSE frames work in.
#[derive(Clone, Copy)]
pub(crate) struct PauseParams {
    pub(crate) autoneg: bool,
    pub(crate) rx: bool,
    pub(crate) tx: bool,
}

/// Wake-on-LAN, as `ethtool DEV` shows it: `WAKE_*` bits.
pub(crate) struct WakeOnLan {
    pub(crate) supported: u32,
    pub(crate) enabled: u32,
}

/// What `ethtool -p` asks of the identification LED (`enum ethtool_phys_id_state`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Identify {
    /// Identification starts: the driver may blink by itself, or ask for `On`/`Off` this many
    /// times a second ([`Ethtool::identify`] returns it).
    Start,
    On,
    Off,
    /// Identification ends: the LEDs as before.
    Stop,
}

/// Message classes (`NETIF_MSG_*`, which `netdev_shim.c` checks against the kernel's) of
/// `ethtool -s DEV msglvl`.
pub(crate) mod msg {
    pub(crate) const DRV: u32 = 1 << 0;
    pub(crate) const PROBE: u32 = 1 << 1;
    pub(crate) const LINK: u32 = 1 << 2;
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
    /// Changes them (`set_link_ksettings`): `ethtool -s DEV speed/duplex/autoneg/advertise/mdix`.
    fn set_link_settings(&self, request: &LinkRequest) -> Result;
    /// Restarts auto-negotiation (`ethtool -r`, `nway_reset`).
    fn restart_autoneg(&self) -> Result;
    /// The rings' sizes (`ethtool -g`).
    fn ring_sizes(&self) -> RingSizes;
    /// Resizes the rings (`ethtool -G`), to counts the core checked against the most that
    /// [`Ethtool::ring_sizes`] reports.
    fn set_ring_sizes(&self, rx: u32, tx: u32) -> Result;
    /// Flow control (`ethtool -a`).
    fn pause(&self) -> PauseParams;
    /// Sets flow control (`ethtool -A`).
    fn set_pause(&self, pause: PauseParams) -> Result;
    /// The message classes the driver logs ([`msg`] bits; `ethtool -s DEV msglvl`).
    fn msg_level(&self) -> u32;
    fn set_msg_level(&self, level: u32);
    /// Wake-on-LAN (`ethtool DEV`, `-s DEV wol`); the core refused unsupported bits already.
    fn wake_on_lan(&self) -> WakeOnLan;
    fn set_wake_on_lan(&self, enabled: u32) -> Result;
    /// Identification (`ethtool -p`): for [`Identify::Start`], how many `On`/`Off` cycles a
    /// second the core is to ask for (0: the device blinks by itself).
    fn identify(&self, state: Identify) -> Result<u32>;
    /// The register dump (`ethtool -d`) has this many 32-bit words.
    const REGS_WORDS: usize;
    /// Fills the dump's words, zeroed, and returns its layout version.
    fn dump_regs(&self, words: &mut [u32]) -> u32;
    /// The EEPROM's size in bytes (`ethtool -e`).
    fn eeprom_len(&self) -> usize;
    /// The number `ethtool -E` must give to write the EEPROM (`ethtool_eeprom.magic`).
    fn eeprom_magic(&self) -> u32;
    /// Reads `bytes.len()` EEPROM bytes from `offset`, which the core checked against
    /// [`Ethtool::eeprom_len`].
    fn read_eeprom(&self, offset: usize, bytes: &mut [u8]) -> Result;
    /// Writes `bytes` from `offset`, which the core checked against [`Ethtool::eeprom_len`].
    fn write_eeprom(&self, offset: usize, bytes: &[u8]) -> Result;
    /// How many results the self-test gives (`ethtool -t`), and their names.
    const TEST_COUNT: usize;
    fn test_name(i: usize) -> &'static CStr;
    /// Runs the self-test, `offline` or online, into `results` (0: passed), [`Ethtool::TEST_COUNT`]
    /// of them.
    fn self_test(&self, offline: bool, results: &mut [u64]) -> Result;
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
    base.eth_tp_mdix = match link.crossed_over {
        Some(true) => bindings::ETH_TP_MDI_X,
        Some(false) => bindings::ETH_TP_MDI,
        None => bindings::ETH_TP_MDI_INVALID,
    } as u8;
    base.eth_tp_mdix_ctrl = link.crossover_ctrl;
    base.autoneg = if link.autoneg {
        bindings::AUTONEG_ENABLE
    } else {
        bindings::AUTONEG_DISABLE
    } as u8;
    0
}

/// `set_link_ksettings`.
///
/// # Safety
///
/// Called by the ethtool core with one of this driver's registered devices, whose adapter is an
/// `A`, and a valid `cmd`, under the RTNL lock.
pub(crate) unsafe fn set_link_ksettings<A: Ethtool>(
    dev: *mut NetDevice,
    cmd: *const bindings::ethtool_link_ksettings,
) -> c_int {
    // SAFETY: `cmd` is valid for the call (safety requirement).
    let cmd = unsafe { &*cmd };
    let request = LinkRequest {
        autoneg: u32::from(cmd.base.autoneg) == bindings::AUTONEG_ENABLE,
        // The first word of the mask holds every mode this layer names (bits below 64).
        advertising: cmd.link_modes.advertising[0] as u64,
        speed: cmd.base.speed,
        duplex: cmd.base.duplex,
        mdix_ctrl: cmd.base.eth_tp_mdix_ctrl,
    };
    // SAFETY: A registered device of this driver has its adapter set until it is unregistered.
    errno(unsafe { adapter::<A>(dev) }.set_link_settings(&request))
}

/// `nway_reset`.
///
/// # Safety
///
/// As for [`get_link_ksettings`].
pub(crate) unsafe fn nway_reset<A: Ethtool>(dev: *mut NetDevice) -> c_int {
    // SAFETY: As in `get_link_ksettings`.
    errno(unsafe { adapter::<A>(dev) }.restart_autoneg())
}

/// `get_ringparam`.
///
/// # Safety
///
/// As for [`get_link_ksettings`], with a valid `ring`.
pub(crate) unsafe fn get_ringparam<A: Ethtool>(
    dev: *mut NetDevice,
    ring: *mut bindings::ethtool_ringparam,
    _kernel_ring: *mut c_void,
    _extack: *mut c_void,
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
    _kernel_ring: *mut c_void,
    _extack: *mut c_void,
) -> c_int {
    // SAFETY: `ring` is valid and the core's for the call (safety requirement).
    let (rx, tx) = unsafe { ((*ring).rx_pending, (*ring).tx_pending) };
    // SAFETY: As in `get_link_ksettings`.
    errno(unsafe { adapter::<A>(dev) }.set_ring_sizes(rx, tx))
}

/// `get_sset_count`: how many statistics `ethtool -S` shows, and how many results `ethtool -t`;
/// none of the other string sets.
///
/// # Safety
///
/// As for [`get_link_ksettings`].
pub(crate) unsafe fn get_sset_count<A: Ethtool>(_dev: *mut NetDevice, set: c_int) -> c_int {
    match u32::try_from(set) {
        Ok(bindings::ethtool_stringset_ETH_SS_STATS) => A::STAT_COUNT as c_int,
        Ok(bindings::ethtool_stringset_ETH_SS_TEST) => A::TEST_COUNT as c_int,
        _ => eopnotsupp().to_errno(),
    }
}

/// `get_strings`: the statistics' or the tests' names, [`NAME_LEN`] bytes each.
///
/// # Safety
///
/// As for [`get_link_ksettings`]; `data` has room for as many names as [`get_sset_count`] said.
pub(crate) unsafe fn get_strings<A: Ethtool>(_dev: *mut NetDevice, set: u32, data: *mut u8) {
    let (count, name_of): (usize, fn(usize) -> &'static CStr) = match set {
        bindings::ethtool_stringset_ETH_SS_STATS => (A::STAT_COUNT, A::stat_name),
        bindings::ethtool_stringset_ETH_SS_TEST => (A::TEST_COUNT, A::test_name),
        _ => return,
    };
    for i in 0..count {
        let name = name_of(i).to_bytes();
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

/// `self_test`: the tests `ethtool -t` asks for (offline: all, which take the interface down
/// meanwhile; online: those that leave it be), a result each (0: passed), and whether any
/// failed.
///
/// # Safety
///
/// As for [`get_link_ksettings`], with a valid `test` and `data` of a `u64` per test.
pub(crate) unsafe fn self_test<A: Ethtool>(
    dev: *mut NetDevice,
    test: *mut bindings::ethtool_test,
    data: *mut u64,
) {
    // SAFETY: `test` is valid and the core's for the call (safety requirement).
    let test = unsafe { &mut *test };
    // SAFETY: `data` holds a `u64` per test, the core's for the call (safety requirement).
    let results = unsafe { core::slice::from_raw_parts_mut(data, A::TEST_COUNT) };
    results.fill(0);
    // Offline alone, as the C driver decides: with external loopback asked for too, online.
    let offline = test.flags == bindings::ethtool_test_flags_ETH_TEST_FL_OFFLINE;
    // SAFETY: As in `get_link_ksettings`.
    let ran = unsafe { adapter::<A>(dev) }.self_test(offline, results);
    if ran.is_err() || results.iter().any(|result| *result != 0) {
        test.flags |= bindings::ethtool_test_flags_ETH_TEST_FL_FAILED;
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

/// `EOPNOTSUPP`, which 7.2's `kernel::error::code` does not name.
pub(crate) fn eopnotsupp() -> Error {
    Error::from_errno(-(bindings::EOPNOTSUPP as i32))
}

/// Answers `Err(e)` as the negative errno the ethtool core takes, `Ok` as 0.
fn errno(result: Result) -> c_int {
    match result {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `get_pauseparam`.
///
/// # Safety
///
/// As for [`get_link_ksettings`], with a valid, zeroed `pause`.
pub(crate) unsafe fn get_pauseparam<A: Ethtool>(
    dev: *mut NetDevice,
    pause: *mut bindings::ethtool_pauseparam,
) {
    // SAFETY: As in `get_link_ksettings`.
    let answer = unsafe { adapter::<A>(dev) }.pause();
    // SAFETY: `pause` is valid and the core's for the call (safety requirement).
    let pause = unsafe { &mut *pause };
    pause.autoneg = answer.autoneg.into();
    pause.rx_pause = answer.rx.into();
    pause.tx_pause = answer.tx.into();
}

/// `set_pauseparam`.
///
/// # Safety
///
/// As for [`get_pauseparam`].
pub(crate) unsafe fn set_pauseparam<A: Ethtool>(
    dev: *mut NetDevice,
    pause: *mut bindings::ethtool_pauseparam,
) -> c_int {
    // SAFETY: `pause` is valid and the core's for the call (safety requirement).
    let wanted = unsafe {
        PauseParams {
            autoneg: (*pause).autoneg != 0,
            rx: (*pause).rx_pause != 0,
            tx: (*pause).tx_pause != 0,
        }
    };
    // SAFETY: As in `get_link_ksettings`.
    errno(unsafe { adapter::<A>(dev) }.set_pause(wanted))
}

/// `get_msglevel`.
///
/// # Safety
///
/// As for [`get_link_ksettings`].
pub(crate) unsafe fn get_msglevel<A: Ethtool>(dev: *mut NetDevice) -> u32 {
    // SAFETY: As in `get_link_ksettings`.
    unsafe { adapter::<A>(dev) }.msg_level()
}

/// `set_msglevel`.
///
/// # Safety
///
/// As for [`get_link_ksettings`].
pub(crate) unsafe fn set_msglevel<A: Ethtool>(dev: *mut NetDevice, level: u32) {
    // SAFETY: As in `get_link_ksettings`.
    unsafe { adapter::<A>(dev) }.set_msg_level(level)
}

/// `get_wol`.
///
/// # Safety
///
/// As for [`get_link_ksettings`], with a valid, zeroed `wol`.
pub(crate) unsafe fn get_wol<A: Ethtool>(dev: *mut NetDevice, wol: *mut bindings::ethtool_wolinfo) {
    // SAFETY: As in `get_link_ksettings`.
    let answer = unsafe { adapter::<A>(dev) }.wake_on_lan();
    // SAFETY: `wol` is valid and the core's for the call (safety requirement).
    let wol = unsafe { &mut *wol };
    wol.supported = answer.supported;
    wol.wolopts = answer.enabled;
}

/// `set_wol`.
///
/// # Safety
///
/// As for [`get_wol`].
pub(crate) unsafe fn set_wol<A: Ethtool>(
    dev: *mut NetDevice,
    wol: *mut bindings::ethtool_wolinfo,
) -> c_int {
    // SAFETY: `wol` is valid and the core's for the call (safety requirement).
    let wanted = unsafe { (*wol).wolopts };
    // SAFETY: As in `get_link_ksettings`.
    errno(unsafe { adapter::<A>(dev) }.set_wake_on_lan(wanted))
}

/// `set_phys_id`.
///
/// # Safety
///
/// As for [`get_link_ksettings`].
pub(crate) unsafe fn set_phys_id<A: Ethtool>(
    dev: *mut NetDevice,
    state: bindings::ethtool_phys_id_state,
) -> c_int {
    let state = match state {
        bindings::ethtool_phys_id_state_ETHTOOL_ID_ACTIVE => Identify::Start,
        bindings::ethtool_phys_id_state_ETHTOOL_ID_ON => Identify::On,
        bindings::ethtool_phys_id_state_ETHTOOL_ID_OFF => Identify::Off,
        bindings::ethtool_phys_id_state_ETHTOOL_ID_INACTIVE => Identify::Stop,
        _ => return EINVAL.to_errno(),
    };
    // SAFETY: As in `get_link_ksettings`.
    match unsafe { adapter::<A>(dev) }.identify(state) {
        Ok(cycles) => c_int::try_from(cycles).unwrap_or(0),
        Err(e) => e.to_errno(),
    }
}

/// `get_regs_len`: the dump's size in bytes.
///
/// # Safety
///
/// As for [`get_link_ksettings`].
pub(crate) unsafe fn get_regs_len<A: Ethtool>(_dev: *mut NetDevice) -> c_int {
    (A::REGS_WORDS * core::mem::size_of::<u32>()) as c_int
}

/// `get_regs`.
///
/// # Safety
///
/// As for [`get_link_ksettings`], with a valid `regs` and `data` of as many bytes as
/// [`get_regs_len`] said, suitably aligned for `u32`s (the core's allocation).
pub(crate) unsafe fn get_regs<A: Ethtool>(
    dev: *mut NetDevice,
    regs: *mut bindings::ethtool_regs,
    data: *mut c_void,
) {
    // SAFETY: `data` holds `A::REGS_WORDS` words, the core's for the call (safety requirement).
    let words = unsafe { core::slice::from_raw_parts_mut(data.cast::<u32>(), A::REGS_WORDS) };
    words.fill(0);
    // SAFETY: As in `get_link_ksettings`.
    let version = unsafe { adapter::<A>(dev) }.dump_regs(words);
    // SAFETY: `regs` is valid and the core's for the call (safety requirement).
    unsafe { (*regs).version = version };
}

/// `get_eeprom_len`.
///
/// # Safety
///
/// As for [`get_link_ksettings`].
pub(crate) unsafe fn get_eeprom_len<A: Ethtool>(dev: *mut NetDevice) -> c_int {
    // SAFETY: As in `get_link_ksettings`.
    unsafe { adapter::<A>(dev) }.eeprom_len() as c_int
}

/// `get_eeprom`: `eeprom.len` bytes from `eeprom.offset`, which the core checked against
/// [`get_eeprom_len`].
///
/// # Safety
///
/// As for [`get_link_ksettings`], with a valid `eeprom` and `data` of `eeprom.len` bytes.
pub(crate) unsafe fn get_eeprom<A: Ethtool>(
    dev: *mut NetDevice,
    eeprom: *mut bindings::ethtool_eeprom,
    data: *mut u8,
) -> c_int {
    // SAFETY: As in `get_link_ksettings`.
    let adapter = unsafe { adapter::<A>(dev) };
    // SAFETY: `eeprom` is valid and the core's for the call (safety requirement).
    let eeprom = unsafe { &mut *eeprom };
    let (offset, len) = (eeprom.offset as usize, eeprom.len as usize);
    match offset.checked_add(len) {
        Some(end) if len > 0 && end <= adapter.eeprom_len() => {}
        _ => return EINVAL.to_errno(),
    }
    eeprom.magic = adapter.eeprom_magic();
    // SAFETY: `data` holds `len` bytes, the core's for the call (safety requirement).
    let bytes = unsafe { core::slice::from_raw_parts_mut(data, len) };
    errno(adapter.read_eeprom(offset, bytes))
}

/// `set_eeprom`: `eeprom.len` bytes to `eeprom.offset`, which the core checked against
/// [`get_eeprom_len`], if `eeprom.magic` is the one [`get_eeprom`] gives: `EFAULT` otherwise, as
/// the C driver answers (which also refuses no bytes, as the core already does).
///
/// # Safety
///
/// As for [`get_eeprom`].
pub(crate) unsafe fn set_eeprom<A: Ethtool>(
    dev: *mut NetDevice,
    eeprom: *mut bindings::ethtool_eeprom,
    data: *mut u8,
) -> c_int {
    // SAFETY: As in `get_link_ksettings`.
    let adapter = unsafe { adapter::<A>(dev) };
    // SAFETY: `eeprom` is valid and the core's for the call (safety requirement).
    let eeprom = unsafe { &*eeprom };
    let (offset, len) = (eeprom.offset as usize, eeprom.len as usize);
    if len == 0 {
        return eopnotsupp().to_errno();
    }
    if eeprom.magic != adapter.eeprom_magic() {
        return EFAULT.to_errno();
    }
    match offset.checked_add(len) {
        Some(end) if end <= adapter.eeprom_len() => {}
        _ => return EINVAL.to_errno(),
    }
    // SAFETY: `data` holds `len` bytes, the core's for the call (safety requirement).
    let bytes = unsafe { core::slice::from_raw_parts(data, len) };
    errno(adapter.write_eeprom(offset, bytes))
}

/// Exports, for the [`Ethtool`] type `$adapter`, each listed `extern "C"` callback under the name
/// `netdev_shim.c`'s `ethtool_ops` table gives it, passing its arguments on to the generic function
/// of this module that the entry names.
macro_rules! export_callbacks {
    ($adapter:ty; $($c_name:ident => $callee:ident($($arg:ident: $arg_ty:ty),*) $(-> $ret:ty)?;)*) => {
        $(
            #[doc = concat!("`", stringify!($callee), "` of `netdev_shim.c`'s ethtool table.")]
            ///
            /// # Safety
            ///
            #[doc = concat!(
                "As for [`ethtool::", stringify!($callee), "`](crate::ethtool::",
                stringify!($callee), ")."
            )]
            #[no_mangle]
            unsafe extern "C" fn $c_name($($arg: $arg_ty),*) $(-> $ret)? {
                // SAFETY: By the function's safety requirements.
                unsafe { $crate::ethtool::$callee::<$adapter>($($arg),*) }
            }
        )*
    };
}
pub(crate) use export_callbacks;

/// Exports the callbacks of `netdev_shim.c`'s `ethtool_ops` table for the [`Ethtool`] `$adapter`;
/// `callbacks::net_device_ops!` invokes it.
macro_rules! ethtool_ops {
    ($adapter:ty) => {
        $crate::ethtool::export_callbacks! { $adapter;
            e1000_rs_get_link_ksettings => get_link_ksettings(
                dev: *mut $crate::netdev::NetDevice,
                cmd: *mut ::kernel::bindings::ethtool_link_ksettings
            ) -> ::kernel::ffi::c_int;
            e1000_rs_set_link_ksettings => set_link_ksettings(
                dev: *mut $crate::netdev::NetDevice,
                cmd: *const ::kernel::bindings::ethtool_link_ksettings
            ) -> ::kernel::ffi::c_int;
            e1000_rs_nway_reset => nway_reset(
                dev: *mut $crate::netdev::NetDevice
            ) -> ::kernel::ffi::c_int;
            e1000_rs_get_ringparam => get_ringparam(
                dev: *mut $crate::netdev::NetDevice,
                ring: *mut ::kernel::bindings::ethtool_ringparam,
                kernel_ring: *mut ::kernel::ffi::c_void,
                extack: *mut ::kernel::ffi::c_void
            );
            e1000_rs_set_ringparam => set_ringparam(
                dev: *mut $crate::netdev::NetDevice,
                ring: *mut ::kernel::bindings::ethtool_ringparam,
                kernel_ring: *mut ::kernel::ffi::c_void,
                extack: *mut ::kernel::ffi::c_void
            ) -> ::kernel::ffi::c_int;
            e1000_rs_get_sset_count => get_sset_count(
                dev: *mut $crate::netdev::NetDevice,
                set: ::kernel::ffi::c_int
            ) -> ::kernel::ffi::c_int;
            e1000_rs_get_strings => get_strings(
                dev: *mut $crate::netdev::NetDevice,
                set: u32,
                data: *mut u8
            );
            e1000_rs_get_ethtool_stats => get_ethtool_stats(
                dev: *mut $crate::netdev::NetDevice,
                stats: *mut ::kernel::ffi::c_void,
                data: *mut u64
            );
            e1000_rs_get_pauseparam => get_pauseparam(
                dev: *mut $crate::netdev::NetDevice,
                pause: *mut ::kernel::bindings::ethtool_pauseparam
            );
            e1000_rs_set_pauseparam => set_pauseparam(
                dev: *mut $crate::netdev::NetDevice,
                pause: *mut ::kernel::bindings::ethtool_pauseparam
            ) -> ::kernel::ffi::c_int;
            e1000_rs_get_msglevel => get_msglevel(
                dev: *mut $crate::netdev::NetDevice
            ) -> u32;
            e1000_rs_set_msglevel => set_msglevel(
                dev: *mut $crate::netdev::NetDevice,
                level: u32
            );
            e1000_rs_get_wol => get_wol(
                dev: *mut $crate::netdev::NetDevice,
                wol: *mut ::kernel::bindings::ethtool_wolinfo
            );
            e1000_rs_set_wol => set_wol(
                dev: *mut $crate::netdev::NetDevice,
                wol: *mut ::kernel::bindings::ethtool_wolinfo
            ) -> ::kernel::ffi::c_int;
            e1000_rs_set_phys_id => set_phys_id(
                dev: *mut $crate::netdev::NetDevice,
                state: ::kernel::bindings::ethtool_phys_id_state
            ) -> ::kernel::ffi::c_int;
            e1000_rs_get_regs_len => get_regs_len(
                dev: *mut $crate::netdev::NetDevice
            ) -> ::kernel::ffi::c_int;
            e1000_rs_get_regs => get_regs(
                dev: *mut $crate::netdev::NetDevice,
                regs: *mut ::kernel::bindings::ethtool_regs,
                data: *mut ::kernel::ffi::c_void
            );
            e1000_rs_get_eeprom_len => get_eeprom_len(
                dev: *mut $crate::netdev::NetDevice
            ) -> ::kernel::ffi::c_int;
            e1000_rs_get_eeprom => get_eeprom(
                dev: *mut $crate::netdev::NetDevice,
                eeprom: *mut ::kernel::bindings::ethtool_eeprom,
                data: *mut u8
            ) -> ::kernel::ffi::c_int;
            e1000_rs_self_test => self_test(
                dev: *mut $crate::netdev::NetDevice,
                test: *mut ::kernel::bindings::ethtool_test,
                data: *mut u64
            );
            e1000_rs_set_eeprom => set_eeprom(
                dev: *mut $crate::netdev::NetDevice,
                eeprom: *mut ::kernel::bindings::ethtool_eeprom,
                data: *mut u8
            ) -> ::kernel::ffi::c_int;
        }
    };
}
pub(crate) use ethtool_ops;
