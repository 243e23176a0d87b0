//! A scenario: VMs booted together, their guests' reports and kernel logs checked.

use std::fmt::Write as _;
use std::fs::File;
use std::io::Write as _;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cores::Cores;
use crate::initramfs::Initramfs;
use crate::kbuild::build_module_for;
use crate::qemu::NetBackend;
use crate::{err, problems_except, Env, Kernel, Ktap, Machine, Qmp, Result, Vm};

/// The guest's `/init`: mounts, KTAP helpers, runs `/scenario.sh`, checks kmemleak, reboots.
const GUEST_INIT: &str = include_str!("../guest/init.sh");

/// How long the other VMs of a scenario may go on once one has ended failing: long enough to
/// finish reporting, where waiting for a peer that will not come would last until the timeout.
const AFTER_FAILURE: Duration = Duration::from_secs(30);

/// What the host does when a guest asks (`request NAME` in the guest script).
type Handler = Box<dyn FnMut(&mut Qmp) -> Result<()> + Send>;

/// One or more VMs, booted together and checked together.
pub struct Scenario {
    name: String,
    kernel: Kernel,
    after_failure: Duration,
    cores: usize,
    vms: Vec<Vm>,
    handlers: Vec<(String, String, Handler)>,
}

/// A socket netdev pair on 127.0.0.1 between two VMs of a scenario: UDP datagrams, one frame each.
///
/// The stream flavour (`listen=`/`connect=`, [`NetBackend::SocketListen`]) stalls in QEMU 7.2:
/// traffic from the connecting side towards the listening side stops for good after a few hundred
/// frames (seen here with the C e1000 on both ends). Datagrams behave like a wire: a frame nobody
/// takes is dropped.
///
/// The harness opens both sockets and QEMU inherits them (`-netdev dgram,local.type=fd`), so that
/// each can have a receive buffer of [`SocketLink::RECEIVE_BUFFER`]: with the default (208 KiB,
/// some 90 frames) the host dropped hundreds of frames per 8 MiB transfer whenever a VM's QEMU was
/// descheduled for a moment, and TCP spent the time recovering; a wire at these rates loses none.
/// (`-netdev socket,fd=` would not do: for an inherited UDP socket QEMU 7.2 sends to an empty
/// address, which the kernel refuses.)
#[derive(Debug, Clone)]
pub struct SocketLink {
    a: Arc<UdpSocket>,
    b: Arc<UdpSocket>,
}

impl SocketLink {
    /// Bytes of frames each end's socket holds while its VM is not reading them.
    pub const RECEIVE_BUFFER: usize = 4 << 20;

    /// Two sockets on free ports of 127.0.0.1, each connected to the other.
    pub fn new() -> Result<SocketLink> {
        let a = UdpSocket::bind("127.0.0.1:0")?;
        let b = UdpSocket::bind("127.0.0.1:0")?;
        a.connect(b.local_addr()?)?;
        b.connect(a.local_addr()?)?;
        for socket in [&a, &b] {
            set_receive_buffer(socket, Self::RECEIVE_BUFFER)?;
        }
        Ok(SocketLink {
            a: Arc::new(a),
            b: Arc::new(b),
        })
    }

    /// One end, for a NIC of one VM.
    pub fn end_a(&self) -> NetBackend {
        NetBackend::SocketUdp(self.a.clone())
    }

    /// The other end, for a NIC of the other VM.
    pub fn end_b(&self) -> NetBackend {
        NetBackend::SocketUdp(self.b.clone())
    }

    /// Frames the two ends' sockets have dropped so far for want of room.
    pub fn dropped(&self) -> Result<u64> {
        Ok(u64::from(dropped(&self.a)?) + u64::from(dropped(&self.b)?))
    }
}

/// Sets `socket`'s receive buffer to `bytes`: past the host's `net.core.rmem_max` where the harness
/// may (`SO_RCVBUFFORCE`, as root), up to it otherwise.
fn set_receive_buffer(socket: &UdpSocket, bytes: usize) -> Result<()> {
    let value = libc::c_int::try_from(bytes).map_err(|_| err!("receive buffer {bytes} too big"))?;
    let set = |option| {
        // SAFETY: `value` is a live `c_int` of the size passed; the descriptor is `socket`'s.
        unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                option,
                (&raw const value).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            )
        }
    };
    if set(libc::SO_RCVBUFFORCE) == 0 || set(libc::SO_RCVBUF) == 0 {
        Ok(())
    } else {
        Err(err!("SO_RCVBUF: {}", std::io::Error::last_os_error()))
    }
}

/// Datagrams `socket` has dropped so far (`SO_MEMINFO`'s drop counter).
fn dropped(socket: &UdpSocket) -> Result<u32> {
    let mut meminfo = [0u32; libc::SK_MEMINFO_DROPS as usize + 1];
    let mut len = size_of_val(&meminfo) as libc::socklen_t;
    // SAFETY: `meminfo` is writable for `len` bytes, which the kernel fills at most.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_MEMINFO,
            meminfo.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(err!("SO_MEMINFO: {}", std::io::Error::last_os_error()));
    }
    Ok(meminfo[libc::SK_MEMINFO_DROPS as usize])
}

/// What one VM left behind.
#[derive(Debug, Clone)]
pub struct VmOutcome {
    /// The VM's name.
    pub name: String,
    /// Its serial console (the kernel log).
    pub console_log: PathBuf,
    /// Its KTAP results.
    pub ktap: Ktap,
    /// The console log's text.
    pub console: String,
}

impl VmOutcome {
    /// Panics unless the guest reported `name` as passed.
    pub fn assert_passed(&self, name: &str) {
        match self.ktap.result(name) {
            Some(r) if r.ok => {}
            Some(r) => panic!(
                "{}: {name} failed: {:?}; see {}",
                self.name,
                r.directive,
                self.console_log.display()
            ),
            None => panic!(
                "{}: no result {name}; see {}",
                self.name,
                self.console_log.display()
            ),
        }
    }

    /// The guest instructions (or other events) counted up to each `mark` of a VM that counted
    /// them ([`crate::Vm::count`]).
    pub fn count_marks(&self) -> Result<CountMarks> {
        let log = self.console_log.with_file_name(crate::qemu::COUNTS_LOG);
        let text = std::fs::read_to_string(&log)
            .map_err(|e| err!("{}: cannot read {}: {e}", self.name, log.display()))?;
        text.lines()
            .map(|line| {
                line.parse()
                    .map_err(|_| err!("{}: bad line {line:?} in {}", self.name, log.display()))
            })
            .collect::<Result<_>>()
            .map(CountMarks)
    }

    /// A `# key=value` diagnostic the guest reported, or a panic naming the log.
    pub fn diagnostic(&self, key: &str) -> &str {
        self.ktap.diagnostic(key).unwrap_or_else(|| {
            panic!(
                "{}: the guest reported no {key}=; see {}",
                self.name,
                self.console_log.display()
            )
        })
    }
}

/// The running counts at a VM's marks, in order.
#[derive(Debug, Clone, Default)]
pub struct CountMarks(pub Vec<u64>);

impl CountMarks {
    /// What was counted between the `n - 1`-th and the `n`-th mark (counting from 1): a
    /// run that the guest wrapped in two marks and noted as ending at mark `n`.
    pub fn run_ending_at(&self, n: usize) -> Option<u64> {
        let (before, after) = (
            self.0.get(n.checked_sub(2)?)?,
            self.0.get(n.checked_sub(1)?)?,
        );
        after.checked_sub(*before)
    }
}

/// What a scenario left behind, one entry per VM.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Every VM's outcome, in the order the VMs were added.
    pub vms: Vec<VmOutcome>,
}

impl Outcome {
    /// The outcome of the VM called `name`.
    pub fn vm(&self, name: &str) -> &VmOutcome {
        self.vms
            .iter()
            .find(|v| v.name == name)
            .unwrap_or_else(|| panic!("no VM called {name} in this scenario"))
    }
}

struct Running {
    vm: Vm,
    dir: PathBuf,
    child: Child,
    started: Instant,
    /// The VM's time limit on this kernel ([`Env::slowdown`]).
    timeout: Duration,
    timed_out: bool,
    /// Stopped because this other VM had failed (its peer would wait for it until the timeout),
    /// and how long after its own start.
    stopped_after: Option<(String, Duration)>,
    exited: bool,
    requests_seen: usize,
    qmp: Option<Qmp>,
    answers: Option<UnixStream>,
}

impl Running {
    /// What the guest has reported, up to its last complete line: while the VM runs, the file may
    /// end in a line that the guest is still writing (a request read as "unplu" once).
    fn ktap(&self) -> Ktap {
        let text = std::fs::read_to_string(self.dir.join("results.ktap")).unwrap_or_default();
        Ktap::parse(text.rfind('\n').map_or("", |end| &text[..=end]))
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.exited = true;
    }
}

/// A VM still running when the scenario ends early (a request the host could not answer, say) is
/// stopped: nothing else would, and the next scenario would share the CPUs with it.
impl Drop for Running {
    fn drop(&mut self) {
        if !self.exited {
            self.stop();
        }
    }
}

impl Scenario {
    /// A scenario called `name`; its logs go to `runs/<name>/<vm>/`.
    pub fn new(name: &str) -> Scenario {
        Scenario {
            name: name.to_string(),
            kernel: Kernel::Lab,
            after_failure: AFTER_FAILURE,
            cores: 1,
            vms: Vec::new(),
            handlers: Vec::new(),
        }
    }

    /// How many of the host's cores the scenario keeps busy: one unless set, so that two such
    /// scenarios run side by side on two cores. A scenario whose guests count on timing (timeouts
    /// set in milliseconds, pings that must all come back) or keep every vCPU busy asks for
    /// `usize::MAX`: all of them, and no other scenario beside it.
    pub fn cores(mut self, cores: usize) -> Scenario {
        self.cores = cores;
        self
    }

    /// Boots the KASAN kernel ([`Kernel::Kasan`]) instead of the lab kernel: for scenarios whose
    /// business is error paths and races. `RDD_KERNEL` overrides it.
    pub fn on_kasan_kernel(self) -> Scenario {
        self.on_kernel(Kernel::Kasan)
    }

    /// How long the other VMs may go on once one has ended failing (30 s unless set), so that one
    /// still writing its results can finish, and one waiting for the failed VM does not wait out
    /// its time limit.
    pub fn stop_others_after(mut self, grace: Duration) -> Scenario {
        self.after_failure = grace;
        self
    }

    /// Boots `kernel` instead of the lab kernel, and builds the VMs' modules for it.
    pub fn on_kernel(mut self, kernel: Kernel) -> Scenario {
        self.kernel = kernel;
        self
    }

    /// Adds a VM.
    pub fn vm(mut self, vm: Vm) -> Scenario {
        self.vms.push(vm);
        self
    }

    /// When the guest of VM `vm` writes `request NAME`, runs `action` with that VM's QMP session.
    pub fn on_request(
        mut self,
        vm: &str,
        request: &str,
        action: impl FnMut(&mut Qmp) -> Result<()> + Send + 'static,
    ) -> Scenario {
        self.handlers
            .push((vm.to_string(), request.to_string(), Box::new(action)));
        self
    }

    /// Builds, boots and waits for every VM, then checks what they left. `Err` carries a message
    /// naming every failed check, every kernel problem report and the log files to read.
    pub fn run(mut self) -> Result<Outcome> {
        // The kernel first: one still being made holds no cores while it is waited for.
        let env = Env::of(self.kernel)?;
        let _cores = Cores::take(self.cores);

        let top = env.run_dir(&self.name);
        let _ = std::fs::remove_dir_all(&top);
        let mut running = Vec::new();
        // Listening ends first, so that connecting ends find them.
        let mut vms = std::mem::take(&mut self.vms);
        vms.sort_by_key(|vm| {
            !vm.nics
                .iter()
                .any(|n| matches!(n.backend, NetBackend::SocketListen(_)))
        });
        for vm in vms {
            running.push(self.start(env, &top, vm)?);
        }
        self.supervise(&mut running)?;
        self.conclude(running)
    }

    fn start(&self, env: &Env, top: &Path, mut vm: Vm) -> Result<Running> {
        if env.kernel == Kernel::Kasan {
            // Four-level paging. With five (`-cpu max` has LA57), KASAN's idea of where the
            // kernel's addresses end follows the LA57 feature bit, which `identify_cpu` clears
            // and sets again with interrupts on: an interrupt in that window reported a per-CPU
            // read as "wild-memory-access in rcu_is_watching" at 0.003 s, twice in ten boots here.
            vm = vm.cmdline("no5lvl");
            if vm.machine == Machine::Pc {
                // The guest's ACPI interpreter takes longer to route an i440FX INTx than ACPICA
                // lets a loop run (30 s, AE_AML_LOOP_TIMEOUT), and the function gets none.
                vm = vm.bios_irq_routing();
            }
        }
        let dir = top.join(&vm.name);
        std::fs::create_dir_all(&dir)?;
        let initrd = dir.join("initramfs.cpio");
        self.initramfs(env, &vm, &initrd)?;
        let plugin = vm
            .counted
            .is_some()
            .then(|| crate::guest_tools::qemu_plugin("counter"))
            .transpose()?;
        let args = vm.qemu_args(&dir, &env.bzimage()?, &initrd, plugin.as_deref())?;
        std::fs::write(dir.join("qemu.cmdline"), shell_words(&args))?;
        let log = File::create(dir.join("qemu.log"))?;
        let inherited = vm.inherited_fds();
        let mut command = Command::new("qemu-system-x86_64");
        command
            .args(&args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        // SAFETY: Between fork and exec the closure only calls `fcntl`, which is async-signal-safe,
        // on descriptors this process holds open (the VM's sockets) and allocates nothing.
        unsafe {
            command.pre_exec(move || {
                for &fd in &inherited {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            })
        };
        let child = command
            .spawn()
            .map_err(|e| err!("cannot start qemu-system-x86_64 (run scripts/setup.sh): {e}"))?;
        for nic in &vm.nics {
            if let NetBackend::SocketListen(port) = nic.backend {
                wait_listening(port, Duration::from_secs(20)).map_err(|e| {
                    err!("{}: {e}; see {}", vm.name, dir.join("qemu.log").display())
                })?;
            }
        }
        Ok(Running {
            timeout: vm.timeout * env.slowdown(),
            vm,
            dir,
            child,
            started: Instant::now(),
            timed_out: false,
            stopped_after: None,
            exited: false,
            requests_seen: 0,
            qmp: None,
            answers: None,
        })
    }

    fn initramfs(&self, env: &Env, vm: &Vm, out: &Path) -> Result<()> {
        let mut ramfs = Initramfs::new();
        for d in ["bin", "sbin", "dev", "modules", "usr", "usr/bin"] {
            ramfs.dir(d);
        }
        ramfs.host_file("bin/busybox", 0o755, Path::new("/bin/busybox"))?;
        ramfs.file("init", 0o755, GUEST_INIT.as_bytes());
        ramfs.file("scenario.sh", 0o644, vm.script.as_bytes());
        for dir in &vm.modules {
            for ko in build_module_for(env, dir, &[])? {
                let name = ko.file_name().unwrap().to_string_lossy().into_owned();
                ramfs.host_file(&format!("modules/{name}"), 0o644, &ko)?;
            }
        }
        for (rel, required) in &vm.kernel_modules {
            let ko = env.kernel_module(rel)?;
            if !required && !ko.exists() {
                continue;
            }
            let name = ko.file_name().unwrap().to_string_lossy().into_owned();
            ramfs.host_file(&format!("modules/{name}"), 0o644, &ko)?;
        }
        for name in &vm.tools {
            ramfs.host_file(&format!("bin/{name}"), 0o755, &crate::guest_tool(name)?)?;
        }
        for (guest, host) in &vm.files {
            ramfs.host_file(guest, 0o755, host)?;
        }
        let mut dirs = std::collections::BTreeSet::new();
        for program in &vm.host_programs {
            let name = program.file_name().unwrap_or_default().to_string_lossy();
            ramfs.host_file(&format!("bin/{name}"), 0o755, program)?;
            for lib in shared_libraries(program)? {
                let mut parent = PathBuf::new();
                for part in lib.parent().into_iter().flat_map(|p| p.iter()).skip(1) {
                    parent.push(part);
                    if dirs.insert(parent.clone())
                        && !["bin", "usr", "usr/bin", "sbin"]
                            .contains(&parent.to_str().unwrap_or(""))
                    {
                        ramfs.dir(&parent.to_string_lossy());
                    }
                }
                ramfs.host_file(&lib.to_string_lossy(), 0o755, &lib)?;
            }
        }
        ramfs.write_to(out)
    }

    /// Waits for every VM to exit, each within its own time limit, answering the guests' requests.
    fn supervise(&mut self, running: &mut [Running]) -> Result<()> {
        // The first VM that ended failing, and when: the others are stopped a while later.
        let mut failed: Option<(String, Instant)> = None;
        while running.iter().any(|r| !r.exited) {
            for r in running.iter_mut().filter(|r| !r.exited) {
                if r.child.try_wait()?.is_some() {
                    r.exited = true;
                    if failed.is_none() && !r.ktap().passed() {
                        failed = Some((r.vm.name.clone(), Instant::now()));
                    }
                } else if r.started.elapsed() > r.timeout {
                    r.timed_out = true;
                    r.stop();
                } else if let Some((name, at)) = &failed {
                    if at.elapsed() > self.after_failure {
                        r.stopped_after = Some((name.clone(), r.started.elapsed()));
                        r.stop();
                    }
                }
                self.answer_requests(r)?;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }

    fn answer_requests(&mut self, r: &mut Running) -> Result<()> {
        let ktap = r.ktap();
        let requests: Vec<String> = ktap
            .requests()
            .skip(r.requests_seen)
            .map(str::to_string)
            .collect();
        for request in requests {
            r.requests_seen += 1;
            if r.exited {
                continue;
            }
            let handler = self
                .handlers
                .iter_mut()
                .find(|(vm, name, _)| *vm == r.vm.name && *name == request)
                .ok_or_else(|| {
                    err!(
                        "{}: the guest asked for '{request}', which the scenario does not handle",
                        r.vm.name
                    )
                })?;
            if r.qmp.is_none() {
                r.qmp = Some(Qmp::connect(&r.dir.join("qmp.sock"))?);
            }
            (handler.2)(r.qmp.as_mut().expect("connected above"))
                .map_err(|e| err!("{}: request '{request}': {e}", r.vm.name))?;
            if r.answers.is_none() {
                let socket = r.dir.join(crate::qemu::ANSWERS_SOCKET);
                r.answers = Some(
                    UnixStream::connect(&socket)
                        .map_err(|e| err!("{}: {}: {e}", r.vm.name, socket.display()))?,
                );
            }
            writeln!(r.answers.as_mut().expect("connected above"), "{request}")
                .map_err(|e| err!("{}: answering '{request}': {e}", r.vm.name))?;
        }
        Ok(())
    }

    fn conclude(&self, running: Vec<Running>) -> Result<Outcome> {
        let mut report = String::new();
        let mut outcome = Outcome { vms: Vec::new() };
        for r in running {
            let console_log = r.dir.join("console.log");
            let console = String::from_utf8_lossy(&std::fs::read(&console_log).unwrap_or_default())
                .into_owned();
            let ktap = r.ktap();
            let name = &r.vm.name;
            let mut failures = Vec::new();
            if r.timed_out {
                failures.push(format!("timed out after {} s", r.timeout.as_secs()));
            } else if let Some((other, ran)) = &r.stopped_after {
                failures.push(format!(
                    "stopped {} s after VM {other} ended failing, {} s after it started",
                    self.after_failure.as_secs(),
                    ran.as_secs()
                ));
            } else if !ktap.complete() {
                failures.push(format!(
                    "the guest did not finish ({} results, plan {:?}); QEMU's own messages are in {}",
                    ktap.results.len(),
                    ktap.plan,
                    r.dir.join("qemu.log").display()
                ));
            }
            for t in ktap.results.iter().filter(|t| !t.ok) {
                failures.push(format!(
                    "check '{}' failed: {}",
                    t.name,
                    t.directive.as_deref().unwrap_or("")
                ));
            }
            for p in problems_except(&console, &r.vm.known_warnings) {
                failures.push(format!("{} report at line {}: {}", p.kind, p.line, p.text));
            }
            if !failures.is_empty() {
                let _ = writeln!(
                    report,
                    "scenario {} VM {name}: see {}",
                    self.name,
                    console_log.display()
                );
                for f in failures {
                    let _ = writeln!(report, "  - {f}");
                }
            }
            outcome.vms.push(VmOutcome {
                name: name.clone(),
                console_log,
                ktap,
                console,
            });
        }
        if report.is_empty() {
            Ok(outcome)
        } else {
            Err(err!("{report}"))
        }
    }
}

/// Waits until something listens on 127.0.0.1:`port` (read from /proc/net/tcp, so as not to take
/// the one connection QEMU accepts).
fn wait_listening(port: u16, limit: Duration) -> Result<()> {
    let needle = format!("0100007F:{port:04X}");
    let start = Instant::now();
    while start.elapsed() < limit {
        let tcp = std::fs::read_to_string("/proc/net/tcp")?;
        if tcp.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && f[1] == needle && f[3] == "0A"
        }) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(err!(
        "QEMU did not listen on 127.0.0.1:{port} within {} s",
        limit.as_secs()
    ))
}

fn shell_words(args: &[String]) -> String {
    let mut s = String::from("qemu-system-x86_64");
    for a in args {
        s.push(' ');
        if a.contains([' ', ',', '=']) {
            let _ = write!(s, "'{a}'");
        } else {
            s.push_str(a);
        }
    }
    s.push('\n');
    s
}

/// The shared libraries (and the dynamic loader) `ldd` lists for `program`.
fn shared_libraries(program: &Path) -> Result<Vec<PathBuf>> {
    let out = std::process::Command::new("ldd")
        .arg(program)
        .output()
        .map_err(|e| err!("cannot run ldd on {}: {e}", program.display()))?;
    if !out.status.success() {
        return Err(err!(
            "ldd {} failed: {}",
            program.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().find(|word| word.starts_with('/')))
        .map(PathBuf::from)
        .collect())
}
