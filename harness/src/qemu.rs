//! A VM's description and the QEMU command line it turns into. TCG only: the machines here have no
//! VT-x.

use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The QEMU machine type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Machine {
    /// `pc` (i440FX): the default.
    Pc,
    /// `q35` with a PCIe root port per device, for native PCIe hot-unplug.
    Q35,
    /// `q35` with `intel-iommu`, so that every DMA goes through IOMMU translation.
    Q35Iommu,
}

/// Where a NIC's frames go. Never slirp, tap or bridge: traffic stays inside QEMU or on 127.0.0.1.
#[derive(Debug, Clone)]
pub enum NetBackend {
    /// A QEMU hub inside this VM, by number: NICs on the same hub see each other's frames.
    Hub(u32),
    /// Listen on 127.0.0.1:port for the peer VM.
    SocketListen(u16),
    /// Connect to a peer VM listening on 127.0.0.1:port.
    SocketConnect(u16),
    /// Datagrams, one frame each, on a UDP socket bound and connected on 127.0.0.1 that QEMU
    /// inherits (`-netdev dgram,local.type=fd`, the datagram half of `-netdev socket` since QEMU
    /// 7.2): no stream to stall when one side's receive ring is full, which is how a wire behaves.
    /// See [`crate::SocketLink`].
    SocketUdp(Arc<UdpSocket>),
}

/// A network card.
#[derive(Debug, Clone)]
pub struct Nic {
    /// QEMU device model, e.g. `e1000`.
    pub model: String,
    /// Where its frames go.
    pub backend: NetBackend,
    /// Its MAC address.
    pub mac: String,
}

/// Bytes in a mebibyte, for drive sizes.
pub const MIB: u64 = 1024 * 1024;

/// A block device behind an NVMe controller.
#[derive(Debug, Clone)]
pub enum Drive {
    /// QEMU's `null-co` driver: reads return zeroes, writes are dropped. For throughput only.
    Null {
        /// Size in bytes.
        size: u64,
    },
    /// A raw image file of the given size, created fresh (sparse) for the run. Discards punch
    /// holes in it (`discard=unmap`).
    Raw {
        /// Size in bytes.
        size: u64,
    },
}

/// Where the counting plugin of a VM writes its running count at each mark, one line each.
pub(crate) const COUNTS_LOG: &str = "counts.log";
/// The socket on which the host answers the guest's requests (`request NAME` in a guest script),
/// one line with the request's name each, once it has acted on it.
pub(crate) const ANSWERS_SOCKET: &str = "answers.sock";

/// An emulated NVMe controller and its namespaces.
#[derive(Debug, Clone)]
pub(crate) struct NvmeController {
    /// The namespaces attached to it, NSIDs from 1.
    attached: Vec<Drive>,
    /// Namespaces of its NVM subsystem attached to no controller, NSIDs after the attached ones.
    detached: Vec<Drive>,
    /// The NVM subsystem it is in (QEMU's `nvme-subsys`, `subsys<N>`), if any, and whether it is
    /// the subsystem's first controller (which creates it).
    subsystem: Option<(usize, bool)>,
    /// Its serial number, `rdd<N>`: the controllers of a subsystem share one.
    serial: usize,
}

/// One VM of a scenario.
#[derive(Debug, Clone)]
pub struct Vm {
    pub(crate) name: String,
    pub(crate) machine: Machine,
    pub(crate) cpus: u32,
    pub(crate) memory_mib: u32,
    pub(crate) cmdline: Vec<String>,
    pub(crate) modules: Vec<PathBuf>,
    /// Modules of the kernel itself: path relative to its modules, and whether the kernel must
    /// have it.
    pub(crate) kernel_modules: Vec<(String, bool)>,
    pub(crate) files: Vec<(String, PathBuf)>,
    pub(crate) tools: Vec<String>,
    pub(crate) host_programs: Vec<PathBuf>,
    pub(crate) script: String,
    pub(crate) edu: bool,
    pub(crate) nics: Vec<Nic>,
    pub(crate) nvme: Vec<NvmeController>,
    pub(crate) timeout: Duration,
    pub(crate) debug_checks: bool,
    pub(crate) known_warnings: Vec<crate::KnownWarning>,
    pub(crate) counted: Option<Counted>,
}

/// What the counting QEMU plugin (`harness/qemu-plugins/counter.c`) counts between the guest's
/// `mark` commands. Under emulation an instruction's cost depends on its kind: besides the
/// instructions themselves, these are the events that cost the emulator most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counted {
    /// Guest instructions.
    Instructions,
    /// Translated blocks executed: about one per branch, taken or not (an indirect one costs a
    /// lookup).
    Blocks,
    /// Atomic read-modify-write instructions (`lock` prefix, `xchg` with memory): each a call out
    /// of the translated code.
    Atomics,
    /// Memory-mapped accesses that reach an emulated device (MMIO; port I/O is not counted): each
    /// a call into the device model.
    Mmio,
}

impl Counted {
    const ALL: [Counted; 4] = [
        Counted::Instructions,
        Counted::Blocks,
        Counted::Atomics,
        Counted::Mmio,
    ];

    /// The name the plugin and the benchmarks' `--count` take, and the unit their tables print.
    pub fn name(self) -> &'static str {
        match self {
            Counted::Instructions => "insns",
            Counted::Blocks => "blocks",
            Counted::Atomics => "atomics",
            Counted::Mmio => "mmio",
        }
    }

    /// Takes a benchmark's leading `--instructions` or `--count KIND` off `args`.
    pub fn from_args(
        args: &mut std::iter::Peekable<impl Iterator<Item = String>>,
    ) -> std::result::Result<Option<Counted>, String> {
        if args.next_if(|a| a == "--instructions").is_some() {
            return Ok(Some(Counted::Instructions));
        }
        if args.next_if(|a| a == "--count").is_none() {
            return Ok(None);
        }
        let kind = args.next().unwrap_or_default();
        Counted::ALL
            .into_iter()
            .find(|c| c.name() == kind)
            .map(Some)
            .ok_or_else(|| format!("--count {kind:?}: one of insns, blocks, atomics, mmio"))
    }
}

impl Vm {
    /// A VM called `name` (its logs are named after it) with 2 vCPUs and 512 MiB.
    pub fn new(name: &str) -> Vm {
        Vm {
            name: name.to_string(),
            machine: Machine::Pc,
            cpus: 2,
            memory_mib: 512,
            cmdline: Vec::new(),
            modules: Vec::new(),
            kernel_modules: Vec::new(),
            files: Vec::new(),
            tools: Vec::new(),
            host_programs: Vec::new(),
            script: String::new(),
            edu: false,
            nics: Vec::new(),
            nvme: Vec::new(),
            timeout: Duration::from_secs(180),
            debug_checks: true,
            known_warnings: Vec::new(),
            counted: None,
        }
    }

    /// The machine type.
    pub fn machine(mut self, machine: Machine) -> Vm {
        self.machine = machine;
        self
    }

    /// Number of vCPUs.
    pub fn cpus(mut self, cpus: u32) -> Vm {
        self.cpus = cpus;
        self
    }

    /// Memory in MiB.
    pub fn memory_mib(mut self, mib: u32) -> Vm {
        self.memory_mib = mib;
        self
    }

    /// Boots without kmemleak and DMA-API debugging, for benchmarks. Both record a stack trace for
    /// every tracked allocation and mapping, which costs more than the rest of an I/O and grows
    /// with the depth of the caller's stack; tests keep them on.
    pub fn without_debug_checks(mut self) -> Vm {
        self.debug_checks = false;
        self
    }

    /// Excuses a kernel warning that Linux itself gives in this scenario, not the code under test:
    /// a `WARNING:` line containing `at` whose call trace passes through the function `through`.
    /// Every other warning still fails the scenario. The caller says why at the call.
    pub fn known_kernel_warning(mut self, at: &str, through: &str) -> Vm {
        self.known_warnings.push(crate::KnownWarning {
            at: at.to_string(),
            through: through.to_string(),
        });
        self
    }

    /// Excuses, for a VM whose script fails allocations on purpose (`fault_sweep`), the one warning
    /// Linux itself then gives to drivers with MSI or MSI-X vectors; it sets nothing up. The IRQ
    /// core creates an interrupt's `/proc/irq/N/*` entries on a best-effort basis and removes all
    /// of them unconditionally, so a failure injected while a driver requests a vector warns
    /// ("name '…'", `fs/proc/generic.c:742` in 7.3) from `unregister_irq_proc` when it is freed.
    /// The other warning of `remove_proc_entry`, a directory removed while not empty, stays one.
    pub fn excuses_irq_proc_warning(self) -> Vm {
        self.known_kernel_warning(
            "fs/proc/generic.c:742 at remove_proc_entry",
            "unregister_irq_proc",
        )
    }

    /// Counts `what` (guest instructions, or one of the costly kinds of event) executed between the
    /// guest's `mark` commands (a QEMU plugin, `harness/qemu-plugins/counter.c`): see
    /// [`crate::VmOutcome::count_marks`].
    pub fn count(mut self, what: Counted) -> Vm {
        self.counted = Some(what);
        self.tools.push("mark".to_string());
        self
    }

    /// An extra kernel command-line option, e.g. `fail_page_alloc=100,100,0,1`.
    pub fn cmdline(mut self, option: &str) -> Vm {
        self.cmdline.push(option.to_string());
        self
    }

    /// Routes PCI INTx interrupts by the BIOS's table (`$PIR`) instead of ACPI (`acpi=noirq`), for
    /// i440FX VMs (`Machine::Pc`) that load and unload a driver many times: under TCG the guest's
    /// ACPI interpreter takes about 1.8 s there to route a function's INTx in `pci_enable_device`,
    /// and as long again to release it in `pci_disable_device`, which a driver that disables its
    /// device at unbind calls each time (the C drivers too). q35 VMs showed no such cost.
    pub fn bios_irq_routing(self) -> Vm {
        self.cmdline("acpi=noirq")
    }

    /// An out-of-tree module directory (relative to the repository root) to build; its `.ko` files
    /// go to `/modules/` in the guest.
    pub fn module(mut self, dir: impl AsRef<Path>) -> Vm {
        self.modules.push(dir.as_ref().to_path_buf());
        self
    }

    /// A module of the kernel build itself (path relative to the build), e.g.
    /// `drivers/net/ethernet/intel/e1000/e1000.ko`; it goes to `/modules/` in the guest.
    pub fn kernel_module(mut self, rel: &str) -> Vm {
        self.kernel_modules.push((rel.to_string(), true));
        self
    }

    /// As [`Vm::kernel_module`], for a module only some kernels build as one: Debian's builds
    /// `nvme-keyring` and `nvme-auth`, which its `nvme-core` needs; the lab kernels have neither.
    pub fn kernel_module_if_built(mut self, rel: &str) -> Vm {
        self.kernel_modules.push((rel.to_string(), false));
        self
    }

    /// A host file copied to `guest_path`, executable.
    pub fn file(mut self, guest_path: &str, host: impl AsRef<Path>) -> Vm {
        self.files
            .push((guest_path.to_string(), host.as_ref().to_path_buf()));
        self
    }

    /// A guest tool from `harness/guest/tools/<name>.c`, built static and put in `/bin/<name>`.
    pub fn tool(mut self, name: &str) -> Vm {
        self.tools.push(name.to_string());
        self
    }

    /// A dynamically linked program of the host (e.g. `/usr/sbin/e2fsck`), put in `/bin` with the
    /// shared libraries `ldd` lists for it at their host paths. Scripts call it by its full path
    /// (`/bin/e2fsck`): busybox's shell prefers its own applet of the same name otherwise.
    pub fn host_program(mut self, path: &str) -> Vm {
        self.host_programs.push(PathBuf::from(path));
        self
    }

    /// The guest script, run by `/init` with its helpers (`check`, `diag`, `request`, `wait_for`).
    pub fn script(mut self, script: &str) -> Vm {
        self.script = script.to_string();
        self
    }

    /// Attaches QEMU's `edu` educational PCI device (1234:11e8).
    pub fn edu(mut self) -> Vm {
        self.edu = true;
        self
    }

    /// Attaches a NIC; its netdev id is `net<N>` in the order NICs were added (for QMP `set_link`).
    pub fn nic(mut self, model: &str, backend: NetBackend) -> Vm {
        let n = self.nics.len();
        let mac = format!("52:54:00:12:{:02x}:{:02x}", name_byte(&self.name), n);
        self.nics.push(Nic {
            model: model.to_string(),
            backend,
            mac,
        });
        self
    }

    /// Attaches an NVMe controller with one namespace per drive; its QEMU id is `nvme<N>` in the
    /// order controllers were added (for QMP `device_del`), its namespaces' `nvme<N>ns<NSID>`.
    pub fn nvme(mut self, namespaces: Vec<Drive>) -> Vm {
        self.nvme.push(NvmeController {
            attached: namespaces,
            detached: Vec::new(),
            subsystem: None,
            serial: self.nvme.len(),
        });
        self
    }

    /// The number the next NVM subsystem gets.
    fn next_subsystem(&self) -> usize {
        self.nvme
            .iter()
            .filter(|c| matches!(c.subsystem, Some((_, true))))
            .count()
    }

    /// As [`Vm::nvme`], the controller in an NVM subsystem of its own (QEMU's `nvme-subsys`,
    /// `subsys<N>`), which also holds `detached` namespaces, attached to no controller until a
    /// Namespace Attachment command (`nvme attach-ns`) attaches them; their NSIDs follow those of
    /// `attached`.
    pub fn nvme_with_detached(mut self, attached: Vec<Drive>, detached: Vec<Drive>) -> Vm {
        let subsystem = Some((self.next_subsystem(), true));
        self.nvme.push(NvmeController {
            attached,
            detached,
            subsystem,
            serial: self.nvme.len(),
        });
        self
    }

    /// `controllers` NVMe controllers (two at least) in one NVM subsystem, which holds `detached`
    /// namespaces (NSIDs from 1) attached to none of them: a Namespace Attachment command sent to
    /// any controller attaches one to any of them, which the others learn through an
    /// asynchronous event.
    pub fn nvme_shared_subsystem(mut self, controllers: usize, detached: Vec<Drive>) -> Vm {
        let (number, serial) = (self.next_subsystem(), self.nvme.len());
        for c in 0..controllers {
            self.nvme.push(NvmeController {
                attached: Vec::new(),
                detached: if c == 0 { detached.clone() } else { Vec::new() },
                subsystem: Some((number, c == 0)),
                serial,
            });
        }
        self
    }

    /// The hard time limit of this VM.
    pub fn timeout(mut self, timeout: Duration) -> Vm {
        self.timeout = timeout;
        self
    }

    /// The file descriptors QEMU must inherit: the sockets its `local.type=fd` netdevs name.
    pub(crate) fn inherited_fds(&self) -> Vec<std::os::fd::RawFd> {
        self.nics
            .iter()
            .filter_map(|nic| match &nic.backend {
                NetBackend::SocketUdp(socket) => Some(socket.as_raw_fd()),
                _ => None,
            })
            .collect()
    }

    /// The QEMU arguments for this VM; files it needs are created in `dir`. `plugin` is the
    /// instruction counter, when the VM counts instructions.
    pub(crate) fn qemu_args(
        &self,
        dir: &Path,
        bzimage: &Path,
        initrd: &Path,
        plugin: Option<&Path>,
    ) -> std::io::Result<Vec<String>> {
        let path = |name: &str| dir.join(name).display().to_string();
        let mut append = vec![
            "console=ttyS0".to_string(),
            "panic=-1".to_string(),
            "oops=panic".to_string(),
            "loglevel=7".to_string(),
            // The TSC under TCG comes from one clock for every vCPU, so it needs no watchdog, and
            // the watchdog's cross-CPU check can deadlock a booting guest: once, CPU 0 spun in
            // `watchdog_check_skew` with interrupts off, timing out by jiffies that no CPU
            // advanced, while CPU 1 waited in `stop_machine`.
            "tsc=reliable".to_string(),
        ];
        if self.debug_checks {
            append.push("kmemleak=on".to_string());
        } else {
            append.extend(["kmemleak=off".to_string(), "dma_debug=off".to_string()]);
        }
        append.extend(self.cmdline.iter().cloned());
        let mut args: Vec<String> = [
            "-accel",
            "tcg",
            "-cpu",
            "max",
            "-nodefaults",
            "-no-reboot",
            "-display",
            "none",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let machine = match self.machine {
            Machine::Pc => "pc",
            Machine::Q35 => "q35",
            Machine::Q35Iommu => "q35,kernel-irqchip=split",
        };
        args.extend([
            "-machine".into(),
            machine.into(),
            "-smp".into(),
            self.cpus.to_string(),
            "-m".into(),
            format!("{}M", self.memory_mib),
            "-kernel".into(),
            bzimage.display().to_string(),
            "-initrd".into(),
            initrd.display().to_string(),
            "-append".into(),
            append.join(" "),
            "-serial".into(),
            format!("file:{}", path("console.log")),
            "-serial".into(),
            format!("file:{}", path("results.ktap")),
            "-qmp".into(),
            format!("unix:{},server=on,wait=off", path("qmp.sock")),
            // The third serial port (ttyS2) carries the host's answers to the guest's requests.
            "-chardev".into(),
            format!(
                "socket,id=answers,path={},server=on,wait=off",
                path(ANSWERS_SOCKET)
            ),
            "-device".into(),
            "isa-serial,chardev=answers,index=2".into(),
        ]);
        if let (Some(plugin), Some(what)) = (plugin, self.counted) {
            args.extend([
                "-plugin".into(),
                format!(
                    "{},out={},count={}",
                    plugin.display(),
                    path(COUNTS_LOG),
                    what.name()
                ),
            ]);
        }
        if self.machine == Machine::Q35Iommu {
            args.extend(["-device".into(), "intel-iommu,intremap=on".into()]);
        }
        // On q35 each device sits behind its own PCIe root port, so that it can be hot-unplugged.
        let mut ports = 0;
        let mut bus = |args: &mut Vec<String>| -> String {
            if self.machine == Machine::Pc {
                return String::new();
            }
            ports += 1;
            args.extend([
                "-device".into(),
                format!("pcie-root-port,id=rp{ports},chassis={ports},slot={ports}"),
            ]);
            format!(",bus=rp{ports}")
        };
        if self.edu {
            let b = bus(&mut args);
            args.extend(["-device".into(), format!("edu,id=edu0{b}")]);
        }
        for (i, nic) in self.nics.iter().enumerate() {
            let netdev = match &nic.backend {
                NetBackend::Hub(hub) => format!("hubport,id=net{i},hubid={hub}"),
                NetBackend::SocketListen(port) => {
                    format!("socket,id=net{i},listen=127.0.0.1:{port}")
                }
                NetBackend::SocketConnect(port) => {
                    format!("socket,id=net{i},connect=127.0.0.1:{port}")
                }
                NetBackend::SocketUdp(socket) => {
                    format!(
                        "dgram,id=net{i},local.type=fd,local.str={}",
                        socket.as_raw_fd()
                    )
                }
            };
            let b = bus(&mut args);
            args.extend([
                "-netdev".into(),
                netdev,
                "-device".into(),
                format!("{},id=nic{i},netdev=net{i},mac={}{b}", nic.model, nic.mac),
            ]);
        }
        for (c, controller) in self.nvme.iter().enumerate() {
            let b = bus(&mut args);
            let subsys = match controller.subsystem {
                None => String::new(),
                Some((s, creates)) => {
                    if creates {
                        args.extend([
                            "-device".into(),
                            format!("nvme-subsys,id=subsys{s},nqn=rdd-subsys{s}"),
                        ]);
                    }
                    format!(",subsys=subsys{s}")
                }
            };
            args.extend([
                "-device".into(),
                format!(
                    "nvme,id=nvme{c},serial=rdd{:04}{subsys}{b}",
                    controller.serial
                ),
            ]);
            let drives = controller.attached.iter().map(|d| (d, ""));
            let detached = controller.detached.iter().map(|d| (d, ",detached=on"));
            for (n, (drive, attachment)) in drives.chain(detached).enumerate() {
                let id = format!("nvme{c}n{}", n + 1);
                let blockdev = match drive {
                    Drive::Null { size } => {
                        format!("driver=null-co,node-name={id},size={size},read-zeroes=on")
                    }
                    Drive::Raw { size } => {
                        let image = dir.join(format!("{id}.img"));
                        let f = std::fs::File::create(&image)?;
                        f.set_len(*size)?;
                        format!(
                            "driver=raw,node-name={id},discard=unmap,file.driver=file,file.filename={},file.aio=threads,file.discard=unmap,cache.direct=off",
                            image.display()
                        )
                    }
                };
                args.extend([
                    "-blockdev".into(),
                    blockdev,
                    "-device".into(),
                    format!(
                        "nvme-ns,id=nvme{c}ns{nsid},drive={id},bus=nvme{c},nsid={nsid}{attachment}",
                        nsid = n + 1
                    ),
                ]);
            }
        }
        Ok(args)
    }
}

/// A byte derived from a VM's name, so that two VMs of a scenario get different MAC addresses.
fn name_byte(name: &str) -> u8 {
    name.bytes()
        .fold(0u8, |acc, b| acc.wrapping_mul(31).wrapping_add(b))
}
