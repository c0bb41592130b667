//! [`QemuTransport`]: the firmware on its real instruction set, under
//! QEMU, reached through the board link ([`LinkTransport`]) over two named
//! pipes that the firmware opens as semihosting files.
//!
//! [`QemuTransport::spawn`] makes a private directory with the two pipes
//! and the console log, starts `qemu-system-aarch64 -M xlnx-zcu102` or
//! `qemu-system-arm -M xilinx-zynq-a9` on the board's ELF with semihosting
//! on, opens the pipes (giving up if QEMU exits first or 30 s pass), and
//! answers the firmware's Hello. [`QemuTransport::finish`] tells the
//! firmware to stop and returns QEMU's exit status; dropping the transport
//! without `finish` does the same and kills QEMU if it does not stop.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::timed::TimedReader;
use super::{DeviceTime, IoRequest, IoResult, LinkTransport, Transport, TransportError};

/// How long QEMU may take to boot the firmware and open the pipes.
const OPEN_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the firmware may stay silent while the host waits for it (the
/// CPU is emulated, so this is generous): then the board is stopped and
/// the command fails.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// How long QEMU may take to exit after the firmware is told to stop.
const EXIT_TIMEOUT: Duration = Duration::from_secs(10);

/// A QEMU board.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QemuBoard {
    /// `xlnx-zcu102`: Cortex-A53 (ZynqMP, as Daisyplus), `aarch64-unknown-none`.
    ZynqMp,
    /// `xilinx-zynq-a9`: Cortex-A9 (Zynq-7000, as Cosmos+), `armv7a-none-eabi`.
    Zynq7000,
}

impl QemuBoard {
    /// Every board.
    pub const ALL: [QemuBoard; 2] = [QemuBoard::ZynqMp, QemuBoard::Zynq7000];

    /// `zynqmp` or `zynq7000`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "zynqmp" => Some(Self::ZynqMp),
            "zynq7000" => Some(Self::Zynq7000),
            _ => None,
        }
    }

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::ZynqMp => "zynqmp",
            Self::Zynq7000 => "zynq7000",
        }
    }

    /// The Rust target the firmware is built for.
    pub fn target(self) -> &'static str {
        match self {
            Self::ZynqMp => "aarch64-unknown-none",
            Self::Zynq7000 => "armv7a-none-eabi",
        }
    }

    /// The firmware's cargo package.
    pub fn package(self) -> &'static str {
        match self {
            Self::ZynqMp => "board-qemu-zynqmp",
            Self::Zynq7000 => "board-qemu-zynq7000",
        }
    }

    /// The firmware binary's name.
    pub fn binary(self) -> &'static str {
        match self {
            Self::ZynqMp => "qemu-zynqmp",
            Self::Zynq7000 => "qemu-zynq7000",
        }
    }

    /// The QEMU system emulator and its machine arguments.
    fn qemu(self) -> (&'static str, &'static [&'static str]) {
        match self {
            Self::ZynqMp => ("qemu-system-aarch64", &["-M", "xlnx-zcu102", "-m", "2G"]),
            Self::Zynq7000 => ("qemu-system-arm", &["-M", "xilinx-zynq-a9", "-m", "1G"]),
        }
    }

    /// The QEMU command that boots `elf` with boot arguments `append`,
    /// the console UART going to the file `console` and the log UART (defmt
    /// frames) to [`log_file`]`(console)`, semihosting on.
    pub fn command(self, elf: &Path, console: &Path, append: &str) -> Command {
        let (qemu, machine) = self.qemu();
        let mut c = Command::new(qemu);
        c.args(machine)
            .args(["-nographic", "-monitor", "none", "-nodefaults"])
            .arg("-serial")
            .arg(format!("file:{}", console.display()))
            .arg("-serial")
            .arg(format!("file:{}", log_file(console).display()))
            .args(["-semihosting-config", "enable=on,target=native"])
            .arg("-kernel")
            .arg(elf)
            .arg("-append")
            .arg(append)
            .env("QEMU_AUDIO_DRV", "none")
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        c
    }

    /// Where `cargo xtask qemu` puts the firmware: `target/<triple>/release/<bin>`
    /// of the workspace `target_dir`.
    pub fn firmware_in(self, target_dir: &Path) -> PathBuf {
        target_dir
            .join(self.target())
            .join("release")
            .join(self.binary())
    }

    /// The environment variable naming this board's firmware ELF:
    /// `INSTINFER_FIRMWARE_ZYNQMP` or `INSTINFER_FIRMWARE_ZYNQ7000`.
    pub fn firmware_var(self) -> String {
        format!("INSTINFER_FIRMWARE_{}", self.name().to_uppercase())
    }

    /// The firmware ELF: the [`Self::firmware_var`] path if set, else next
    /// to this program's own target directory, else under `./target`.
    pub fn find_firmware(self) -> Result<PathBuf, TransportError> {
        if let Some(p) = std::env::var_os(self.firmware_var()) {
            return Ok(PathBuf::from(p));
        }
        let mut tried = Vec::new();
        if let Ok(exe) = std::env::current_exe() {
            // target/<profile>/instinfer or target/<profile>/deps/<test>.
            for up in exe.ancestors().skip(1).take(3) {
                tried.push(self.firmware_in(up));
            }
        }
        tried.push(self.firmware_in(Path::new("target")));
        tried.iter().find(|p| p.is_file()).cloned().ok_or_else(|| {
            TransportError::Setup(format!(
                "no {} firmware found (looked at {}); build it with `cargo xtask qemu --board {}` \
                 or set {}",
                self.name(),
                tried
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                self.name(),
                self.firmware_var()
            ))
        })
    }
}

/// Where the defmt log frames of a board whose console is `console` go:
/// `defmt.bin` beside it.
pub fn log_file(console: &Path) -> PathBuf {
    console.with_file_name("defmt.bin")
}

/// What a stopped QEMU board left.
#[derive(Debug)]
pub struct QemuExit {
    /// QEMU's exit status (success when the firmware stopped cleanly).
    pub status: ExitStatus,
    /// The console UART's text.
    pub console: String,
    /// The log UART's defmt frames (decode against the firmware ELF).
    pub log_frames: Vec<u8>,
}

/// The firmware under QEMU, behind the [`Transport`] trait.
#[derive(Debug)]
pub struct QemuTransport {
    link: Option<LinkTransport<TimedReader, File>>,
    child: Child,
    dir: PathBuf,
    board: QemuBoard,
}

static SPAWNED: AtomicU32 = AtomicU32::new(0);

fn setup(what: impl std::fmt::Display) -> TransportError {
    TransportError::Setup(what.to_string())
}

impl QemuTransport {
    /// Boots `elf` on `board` with `page_size`-byte flash pages.
    pub fn spawn(board: QemuBoard, elf: &Path, page_size: u32) -> Result<Self, TransportError> {
        if !elf.is_file() {
            return Err(setup(format!("firmware {} not found", elf.display())));
        }
        let dir = std::env::temp_dir().join(format!(
            "instinfer-qemu-{}-{}",
            std::process::id(),
            SPAWNED.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).map_err(|e| setup(format!("{}: {e}", dir.display())))?;
        let to_dev = dir.join("to_dev.fifo");
        let from_dev = dir.join("from_dev.fifo");
        for p in [&to_dev, &from_dev] {
            let ok = Command::new("mkfifo")
                .arg(p)
                .status()
                .map_err(|e| setup(format!("mkfifo: {e}")))?
                .success();
            if !ok {
                return Err(setup(format!("mkfifo {} failed", p.display())));
            }
        }
        let console = dir.join("console.log");
        let child = board
            .command(
                elf,
                &console,
                &format!(
                    "page_size={page_size} to_dev={} from_dev={}",
                    to_dev.display(),
                    from_dev.display()
                ),
            )
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                setup(format!(
                    "cannot start {}: {e} (apt install qemu-system-arm)",
                    board.qemu().0
                ))
            })?;
        let mut t = Self {
            link: None,
            child,
            dir,
            board,
        };
        let files = t.open_pipes(&to_dev, &from_dev)?;
        let (tx, rx) = files;
        t.link = Some(LinkTransport::connect(
            TimedReader::new(rx, COMMAND_TIMEOUT),
            tx,
        )?);
        Ok(t)
    }

    /// Opens the pipes in the firmware's order (host→device, then
    /// device→host) on a helper thread, watching QEMU meanwhile.
    fn open_pipes(
        &mut self,
        to_dev: &Path,
        from_dev: &Path,
    ) -> Result<(File, File), TransportError> {
        let (done_tx, done_rx) = mpsc::channel();
        let (a, b) = (to_dev.to_path_buf(), from_dev.to_path_buf());
        std::thread::spawn(move || {
            let r = std::fs::OpenOptions::new()
                .write(true)
                .open(&a)
                .and_then(|w| File::open(&b).map(|r| (w, r)));
            let _ = done_tx.send(r);
        });
        let start = Instant::now();
        loop {
            match done_rx.recv_timeout(Duration::from_millis(50)) {
                Ok(r) => return r.map_err(TransportError::from),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(setup("the pipe opener died"));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            let exited = self.child.try_wait()?;
            if exited.is_some() || start.elapsed() > OPEN_TIMEOUT {
                // Unblock the opener thread (its peers never came).
                let _ = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(to_dev);
                let _ = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(from_dev);
                let _ = self.child.kill();
                let status = self.child.wait()?;
                return Err(setup(format!(
                    "{} firmware did not open its link ({status}); console: {}{}",
                    self.board.name(),
                    self.console().trim(),
                    self.qemu_stderr()
                )));
            }
        }
    }

    /// The board.
    pub fn board(&self) -> QemuBoard {
        self.board
    }

    /// What the firmware printed on its UART so far.
    pub fn console(&self) -> String {
        std::fs::read_to_string(self.dir.join("console.log")).unwrap_or_default()
    }

    fn qemu_stderr(&mut self) -> String {
        let mut s = String::new();
        if let Some(e) = self.child.stderr.as_mut() {
            let _ = e.read_to_string(&mut s);
        }
        let s: String = s
            .lines()
            .filter(|l| !l.starts_with("ALSA") && !l.starts_with("alsa") && !l.starts_with("audio"))
            .collect::<Vec<_>>()
            .join("\n");
        if s.is_empty() {
            String::new()
        } else {
            format!("; qemu: {s}")
        }
    }

    fn link(&mut self) -> Result<&mut LinkTransport<TimedReader, File>, TransportError> {
        self.link
            .as_mut()
            .ok_or_else(|| TransportError::DeviceFailed("the QEMU board was stopped".into()))
    }

    /// Runs `f` on the link; a firmware silent past [`COMMAND_TIMEOUT`]
    /// stops the board (the link's state is unknown from then on).
    fn on_link<X>(
        &mut self,
        f: impl FnOnce(&mut LinkTransport<TimedReader, File>) -> Result<X, TransportError>,
    ) -> Result<X, TransportError> {
        let r = f(self.link()?);
        if let Err(TransportError::Io(e)) = &r
            && e.kind() == std::io::ErrorKind::TimedOut
        {
            self.link = None;
            let _ = self.child.kill();
            return Err(TransportError::DeviceFailed(format!(
                "the firmware under QEMU was silent for {COMMAND_TIMEOUT:?}; the board was stopped"
            )));
        }
        r
    }

    /// Stops the firmware; returns QEMU's exit status, the console and the
    /// log frames.
    pub fn finish(mut self) -> Result<QemuExit, TransportError> {
        let status = self.stop()?;
        Ok(QemuExit {
            status,
            console: self.console(),
            log_frames: std::fs::read(log_file(&self.dir.join("console.log"))).unwrap_or_default(),
        })
    }

    fn stop(&mut self) -> Result<ExitStatus, TransportError> {
        if let Some(mut link) = self.link.take() {
            let said = link.shutdown();
            drop(link);
            if let Err(e) = said {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(e);
            }
        }
        let start = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait()? {
                return Ok(s);
            }
            if start.elapsed() > EXIT_TIMEOUT {
                let _ = self.child.kill();
                return Ok(self.child.wait()?);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for QemuTransport {
    fn drop(&mut self) {
        if self.link.is_some() || self.child.try_wait().ok().flatten().is_none() {
            let _ = self.stop();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Transport for QemuTransport {
    fn admin(&mut self, req: IoRequest) -> Result<IoResult, TransportError> {
        self.on_link(|l| l.admin(req))
    }

    fn submit(&mut self, req: IoRequest) -> Result<u16, TransportError> {
        self.on_link(|l| l.submit(req))
    }

    fn reap(&mut self) -> Result<(u16, IoResult), TransportError> {
        self.on_link(|l| l.reap())
    }

    fn in_flight(&self) -> usize {
        self.link.as_ref().map_or(0, Transport::in_flight)
    }

    fn device_time(&self) -> Option<DeviceTime> {
        None
    }

    fn holds_caller(&self) -> bool {
        true
    }
}
