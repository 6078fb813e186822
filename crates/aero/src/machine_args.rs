//! The machine options `aero headless` and `aero run` share (memory, disks, boot order,
//! BIOS), and turning them into a [`MachineConfig`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use aero_gpu::aerogpu::{Executor, NullExecutor, SoftExecutor, SoftExecutorConfig, WgpuExecutor};
use aero_machine::{BootDevice, DriveSlot, LinuxBoot, MachineConfig};
use aero_storage::ide::IdeDrive;
use aero_storage::{BlockDevice, MemoryDisk};
use clap::{Args, ValueEnum};
use serde::Deserialize;

use crate::drives::{self, DriveSpec};
use crate::monitor::MediaFiles;
use crate::nic::NicSpec;

/// The IDE secondary master: where `--cdrom` goes and the CD drive our BIOS boots.
const BIOS_CD_SLOT: DriveSlot = DriveSlot::Ide {
    channel: 1,
    slave: false,
};

/// Guest RAM without `-m` under `aero headless`: a contract with scripts and tests.
pub const HEADLESS_MEMORY_MIB: u64 = 512;
/// Guest RAM without `-m` in the window (`aero run`): what Windows 7 x64 needs at least.
pub const WINDOW_MEMORY_MIB: u64 = 2048;

#[derive(Args, Debug)]
pub struct MachineArgs {
    /// First hard disk (same as --hda); the built-in demo guest when no disk, CD or floppy
    /// is given.
    pub disk: Option<PathBuf>,
    /// Guest RAM in MiB (default: 512 headless, 2048 in the window).
    #[arg(short = 'm', long = "memory", value_name = "MIB")]
    pub memory: Option<u64>,
    /// First hard disk (AHCI port 0, as Windows 7 expects; our BIOS and SeaBIOS boot it).
    #[arg(long, value_name = "FILE")]
    pub hda: Option<PathBuf>,
    /// CD-ROM image (ISO), on the IDE secondary master.
    #[arg(long, value_name = "FILE")]
    pub cdrom: Option<PathBuf>,
    /// Floppy image.
    #[arg(long, value_name = "FILE")]
    pub fda: Option<PathBuf>,
    /// Boot order: a = floppy, c = hard disk, d = CD-ROM (e.g. "dc").
    #[arg(long, value_name = "ORDER")]
    pub boot: Option<String>,
    /// Never write to any disk image (writes stay in memory).
    #[arg(long)]
    pub snapshot: bool,
    /// External system BIOS ROM (e.g. SeaBIOS).
    #[arg(long, value_name = "FILE")]
    pub bios: Option<PathBuf>,
    /// Force the image format of the hard disk and floppy (raw, qcow2, vhd); detected from
    /// the header otherwise.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,
    /// A drive, QEMU style: file=PATH,if=ide|ahci,index=N,media=disk|cdrom,format=F,readonly=on
    /// (repeatable). The first disk becomes the boot disk when there is no --hda.
    #[arg(long = "drive", value_name = "SPEC")]
    pub drives: Vec<String>,
    /// Read these options from a TOML file (keys: disk, memory, hda, cdrom, fda, boot,
    /// snapshot, bios, format, drive = [...], usb = true/false, kernel, initrd, append);
    /// options given on the command line win.
    /// Relative paths in the file are relative to the file.
    #[arg(long, value_name = "FILE.toml")]
    pub config: Option<PathBuf>,
    /// What runs AeroGPU's commands: wgpu (the GPU, lavapipe without one), cpu (copies,
    /// clears and presents on the CPU, no 3D draws), null (nothing), or auto (wgpu when an
    /// adapter exists, else cpu).
    #[arg(long, value_enum, default_value_t = GpuChoice::Auto)]
    pub gpu: GpuChoice,
    /// The e1000 NIC's host side: none, or user[,hostfwd=tcp:127.0.0.1:HOST-:GUEST]
    /// [,mac=52:54:00:12:34:56][,pcap=FILE] (libslirp NAT: DHCP 10.0.2.15, gateway
    /// 10.0.2.2 = the host's 127.0.0.1, DNS 10.0.2.3). Default: user in the window,
    /// none headless.
    #[arg(long, value_name = "SPEC")]
    pub nic: Option<String>,
    /// USB: ICH9's EHCI controller with its three UHCI companions, a HID tablet (absolute
    /// pointer: the window needs no mouse grab), keyboard and mouse, and host gamepads as
    /// they connect. The default (headless too): this flag only overrides a config file's
    /// `usb = false`.
    #[arg(long, conflicts_with = "no_usb")]
    pub usb: bool,
    /// No USB controllers (see --usb).
    #[arg(long = "no-usb")]
    pub no_usb: bool,
    /// Boot this Linux kernel directly, before any disk (QEMU's -kernel): a bzImage (boot
    /// protocol 2.02+), which our BIOS loads at INT 19h as a boot loader would, or an ELF
    /// vmlinux with a PVH entry note (CONFIG_PVH), entered in 32-bit mode without the
    /// kernel's self-decompression.
    #[arg(long, value_name = "FILE")]
    pub kernel: Option<PathBuf>,
    /// Initial ramdisk for --kernel (placed at the top of RAM).
    #[arg(long, value_name = "FILE")]
    pub initrd: Option<PathBuf>,
    /// Kernel command line for --kernel.
    #[arg(long, value_name = "CMDLINE")]
    pub append: Option<String>,
}

/// `--gpu`: AeroGPU's executor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GpuChoice {
    Auto,
    Wgpu,
    Cpu,
    Null,
}

/// The executor `--gpu` asks for; `auto` falls back to the CPU one with one log line.
pub fn aerogpu_executor(gpu: GpuChoice) -> anyhow::Result<Box<dyn Executor + Send>> {
    let config = SoftExecutorConfig::default();
    Ok(match gpu {
        GpuChoice::Cpu => Box::new(SoftExecutor::new(config)),
        GpuChoice::Null => Box::new(NullExecutor::default()),
        GpuChoice::Wgpu => Box::new(
            WgpuExecutor::new_headless(config).map_err(|e| anyhow::anyhow!("--gpu wgpu: {e}"))?,
        ),
        GpuChoice::Auto => match WgpuExecutor::new_headless(config) {
            Ok(e) => Box::new(e),
            Err(e) => {
                tracing::warn!("aerogpu: {e}; using the CPU executor (no 3D draws)");
                Box::new(SoftExecutor::new(config))
            }
        },
    })
}

/// `--config` file contents: the same settings as the flags.
#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    disk: Option<PathBuf>,
    memory: Option<u64>,
    hda: Option<PathBuf>,
    cdrom: Option<PathBuf>,
    fda: Option<PathBuf>,
    boot: Option<String>,
    snapshot: Option<bool>,
    bios: Option<PathBuf>,
    format: Option<String>,
    drive: Option<Vec<String>>,
    usb: Option<bool>,
    kernel: Option<PathBuf>,
    initrd: Option<PathBuf>,
    append: Option<String>,
}

impl ConfigFile {
    fn parse(text: &str, path: &Path) -> anyhow::Result<ConfigFile> {
        // The short message and its line: one sentence, no source excerpt.
        toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(String::new(), |span| {
                let n = text
                    .get(..span.start)
                    .map_or(0, |t| t.matches('\n').count());
                format!(", line {}", n + 1)
            });
            let message = e.message().trim_end().replace('\n', " ");
            anyhow::anyhow!("{}{line}: {message}", path.display())
        })
    }
}

/// The built-in demo guest as a read-only in-memory hard disk (booted when no disk is given).
pub fn demo_disk() -> anyhow::Result<Box<dyn BlockDevice>> {
    Ok(Box::new(MemoryDisk::new(
        aero_firmware::demo::demo_disk_image(),
        512,
        true,
    )?))
}

/// `spec` with a relative `file=` taken relative to `base`.
fn drive_file_relative_to(spec: &str, base: &Path) -> String {
    spec.split(',')
        .map(|part| match part.strip_prefix("file=") {
            Some(file) if Path::new(file).is_relative() => {
                format!("file={}", base.join(file).display())
            }
            _ => part.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn parse_boot_order(order: &str) -> anyhow::Result<Vec<BootDevice>> {
    order
        .chars()
        .map(|c| match c {
            'a' => Ok(BootDevice::Floppy),
            'c' => Ok(BootDevice::HardDisk),
            'd' => Ok(BootDevice::Cdrom),
            other => anyhow::bail!("--boot: unknown boot device '{other}' (use a, c or d)"),
        })
        .collect()
}

impl MachineArgs {
    /// Fills every option not given on the command line from the `--config` file, if any.
    pub fn load_config(&mut self) -> anyhow::Result<()> {
        let Some(path) = self.config.clone() else {
            return Ok(());
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        let file = ConfigFile::parse(&text, &path)?;
        self.merge(file, path.parent().unwrap_or(Path::new("")));
        Ok(())
    }

    /// Takes the file's values for the options the command line left out; relative file
    /// paths (and `file=` in drive specs) are taken relative to `base`.
    fn merge(&mut self, file: ConfigFile, base: &Path) {
        let rel = |p: PathBuf| if p.is_relative() { base.join(p) } else { p };
        // DISK and --hda name the same drive: a command-line one replaces the file's.
        if self.disk.is_none() && self.hda.is_none() {
            self.disk = file.disk.map(rel);
            self.hda = file.hda.map(rel);
        }
        self.memory = self.memory.or(file.memory);
        self.cdrom = self.cdrom.take().or(file.cdrom.map(rel));
        self.fda = self.fda.take().or(file.fda.map(rel));
        self.boot = self.boot.take().or(file.boot);
        self.snapshot |= file.snapshot.unwrap_or(false);
        self.bios = self.bios.take().or(file.bios.map(rel));
        self.format = self.format.take().or(file.format);
        if !self.usb && !self.no_usb {
            self.usb = file.usb == Some(true);
            self.no_usb = file.usb == Some(false);
        }
        // The kernel, its initrd and command line belong together: a kernel on the
        // command line takes none of the file's.
        if self.kernel.is_none() {
            self.kernel = file.kernel.map(rel);
            self.initrd = self.initrd.take().or(file.initrd.map(rel));
            self.append = self.append.take().or(file.append);
        }
        if self.drives.is_empty() {
            self.drives = file
                .drive
                .unwrap_or_default()
                .into_iter()
                .map(|spec| drive_file_relative_to(&spec, base))
                .collect();
        }
    }

    /// The options of a `--config` file given as TOML text (a scenario's `[machine]` table),
    /// relative paths taken relative to `base`; `origin` names the text in messages.
    pub fn from_config_text(text: &str, origin: &Path, base: &Path) -> anyhow::Result<Self> {
        let mut args = MachineArgs {
            disk: None,
            memory: None,
            hda: None,
            cdrom: None,
            fda: None,
            boot: None,
            snapshot: false,
            bios: None,
            format: None,
            drives: Vec::new(),
            config: None,
            gpu: GpuChoice::Auto,
            nic: None,
            usb: false,
            no_usb: false,
            kernel: None,
            initrd: None,
            append: None,
        };
        args.merge(ConfigFile::parse(text, origin)?, base);
        Ok(args)
    }

    /// Opens every image (bad arguments fail here, before the guest starts).
    pub fn machine_config(
        &self,
        default_memory_mib: u64,
        deterministic: bool,
    ) -> anyhow::Result<MachineConfig> {
        if self.disk.is_some() && self.hda.is_some() {
            anyhow::bail!("give the hard disk either as DISK or with --hda, not both");
        }
        let memory = self.memory.unwrap_or(default_memory_mib);
        anyhow::ensure!(
            (1..=65536).contains(&memory),
            "--memory must be between 1 and 65536 MiB"
        );
        let format = self
            .format
            .as_deref()
            .map(drives::parse_format)
            .transpose()?;
        let mut specs = self
            .drives
            .iter()
            .map(|d| DriveSpec::parse(d))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let hda_path = self.disk.as_ref().or(self.hda.as_ref());
        let mut hda = hda_path
            .map(|p| drives::open_disk(p, self.snapshot, false, false, format))
            .transpose()?;
        // Windows 7's layout: the hard disk on AHCI port 0 (inbox msahci), the CD on IDE.
        let mut hda_slot = DriveSlot::Ahci(0);
        if hda.is_none()
            && let Some(i) = specs.iter().position(|d| !d.cdrom)
        {
            // The first --drive disk is the boot disk, in the slot it asks for.
            let first = specs.remove(i);
            if let Some((slot, IdeDrive::Disk(d))) =
                drives::open_drives(std::slice::from_ref(&first), self.snapshot, &[])?.pop()
            {
                hda_slot = slot;
                hda = Some(d);
            }
        }
        // `--cdrom` is the IDE secondary master (QEMU's ide index 2). Without it that slot
        // is free for `--drive` like any other, and the machine adds its default empty CD
        // drive there only if no drive took it (as QEMU leaves its default CD out).
        let mut taken = Vec::new();
        if self.cdrom.is_some() {
            taken.push(BIOS_CD_SLOT);
        }
        if hda.is_some() {
            taken.push(hda_slot);
        }
        let mut extra_drives = drives::open_drives(&specs, self.snapshot, &taken)?;
        // CD-ROMs are read-only media; nothing is ever written to the ISO.
        let mut cdrom = self
            .cdrom
            .as_ref()
            .map(|p| drives::open_disk(p, false, true, true, None))
            .transpose()?;
        // A `--drive` disc in that slot is the CD our BIOS boots, just as `--cdrom` would be.
        if cdrom.is_none()
            && let Some(i) = extra_drives.iter().position(|(slot, drive)| {
                *slot == BIOS_CD_SLOT && matches!(drive, IdeDrive::Cdrom(Some(_)))
            })
            && let (_, IdeDrive::Cdrom(disc)) = extra_drives.remove(i)
        {
            cdrom = disc;
        }
        // (With --bios, Machine::new refuses it: only our BIOS loads kernels.)
        let linux = self.linux_boot()?;
        if hda.is_none()
            && cdrom.is_none()
            && self.fda.is_none()
            && extra_drives.is_empty()
            && linux.is_none()
        {
            tracing::info!("no disk given: booting the built-in demo guest");
            hda = Some(demo_disk()?);
        }
        let fda = self
            .fda
            .as_ref()
            .map(|p| drives::open_disk(p, self.snapshot, false, false, format))
            .transpose()?;
        let boot_order = match &self.boot {
            Some(o) => parse_boot_order(o)?,
            None => vec![BootDevice::HardDisk, BootDevice::Cdrom, BootDevice::Floppy],
        };
        let external_bios = self
            .bios
            .as_ref()
            .map(|p| {
                std::fs::read(p)
                    .map_err(|e| anyhow::anyhow!("cannot read BIOS {}: {e}", p.display()))
            })
            .transpose()?;
        Ok(MachineConfig {
            memory_bytes: memory << 20,
            hda,
            cdrom,
            fda,
            boot_order,
            external_bios,
            deterministic,
            hda_slot,
            extra_drives,
            nic: {
                let nic = self.nic_spec(default_memory_mib)?;
                if deterministic && nic != NicSpec::None {
                    // Idle guest time is skipped, host replies are not: timeouts in the
                    // guest fire long before the host could answer.
                    tracing::warn!(
                        "--nic with deterministic time: guest network timeouts run ahead of \
                         the host; use --realtime"
                    );
                }
                nic.start()?
            },
            usb: self.usb_enabled(),
            audio: None,
            linux,
        })
    }

    /// `--kernel` with `--initrd`/`--append`, read and its setup header checked.
    fn linux_boot(&self) -> anyhow::Result<Option<std::sync::Arc<LinuxBoot>>> {
        let Some(path) = &self.kernel else {
            if self.initrd.is_some() || self.append.is_some() {
                anyhow::bail!("--initrd and --append need --kernel");
            }
            return Ok(None);
        };
        let read = |p: &Path, what: &str| {
            std::fs::read(p).map_err(|e| anyhow::anyhow!("cannot read {what} {}: {e}", p.display()))
        };
        let kernel = read(path, "kernel")?;
        let initrd = self
            .initrd
            .as_deref()
            .map(|p| read(p, "initrd"))
            .transpose()?;
        let boot = LinuxBoot::new(kernel, initrd, self.append.as_deref().unwrap_or(""))
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        Ok(Some(std::sync::Arc::new(boot)))
    }

    /// On unless `--no-usb` (or the config file's `usb = false`), in the window and
    /// headless alike: idle controllers cost nothing per frame and the guest decides
    /// whether to run them, so deterministic runs stay deterministic.
    pub fn usb_enabled(&self) -> bool {
        !self.no_usb
    }

    /// `--nic`, or the default: NAT in the window (`aero run`, recognised by its memory
    /// default), no NIC headless.
    pub fn nic_spec(&self, default_memory_mib: u64) -> anyhow::Result<NicSpec> {
        match &self.nic {
            Some(text) => NicSpec::parse(text),
            None if default_memory_mib == WINDOW_MEMORY_MIB => NicSpec::parse("user"),
            None => Ok(NicSpec::None),
        }
    }

    /// The CD images given on the command line, by slot (for the monitor's `info block`).
    /// Only `--cdrom` and `--drive` CDs with an explicit index have a known slot here.
    /// The media the monitor starts with (CD/DVD images by drive, the floppy in drive A).
    pub fn media_files(&self) -> MediaFiles {
        MediaFiles {
            cds: self.cd_files(),
            floppy: self.fda.clone(),
            snapshot: self.snapshot,
        }
    }

    fn cd_files(&self) -> HashMap<DriveSlot, PathBuf> {
        let mut files = HashMap::new();
        if let Some(path) = &self.cdrom {
            files.insert(BIOS_CD_SLOT, path.clone());
        }
        for spec in self.drives.iter().filter_map(|d| DriveSpec::parse(d).ok()) {
            if let (true, Some(file), Ok(Some(slot))) = (spec.cdrom, &spec.file, spec.slot()) {
                files.insert(slot, file.clone());
            }
        }
        files
    }

    /// A short name for the guest: the first image's file name, or "demo".
    pub fn display_name(&self) -> String {
        let drive_file = self
            .drives
            .iter()
            .find_map(|d| DriveSpec::parse(d).ok()?.file);
        [
            self.disk.clone(),
            self.hda.clone(),
            self.cdrom.clone(),
            self.fda.clone(),
            drive_file,
            self.kernel.clone(),
        ]
        .into_iter()
        .flatten()
        .next()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "demo".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boot_order_letters() {
        assert_eq!(
            parse_boot_order("dc").unwrap(),
            vec![BootDevice::Cdrom, BootDevice::HardDisk]
        );
        assert!(parse_boot_order("cz").is_err());
    }

    /// MachineArgs as clap builds them from `flags`.
    fn args(flags: &[&str]) -> MachineArgs {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            machine: MachineArgs,
        }
        let argv = std::iter::once("aero").chain(flags.iter().copied());
        <Cli as clap::Parser>::try_parse_from(argv).unwrap().machine
    }

    #[test]
    fn memory_defaults_per_front_end() {
        let headless = args(&[]).machine_config(HEADLESS_MEMORY_MIB, true).unwrap();
        assert_eq!(headless.memory_bytes, 512 << 20);
        let window = args(&[]).machine_config(WINDOW_MEMORY_MIB, false).unwrap();
        assert_eq!(window.memory_bytes, 2048 << 20);
        let given = args(&["-m", "3072"])
            .machine_config(WINDOW_MEMORY_MIB, false)
            .unwrap();
        assert_eq!(given.memory_bytes, 3072 << 20);
    }

    #[test]
    fn usb_is_on_by_default_and_follows_flags_and_file() {
        let on = |a: &MachineArgs| a.usb_enabled();
        assert!(on(&args(&[])));
        assert!(on(&args(&["--usb"])));
        assert!(!on(&args(&["--no-usb"])));
        let base = Path::new("/vm");
        let file = |text| MachineArgs::from_config_text(text, Path::new("c.toml"), base).unwrap();
        assert!(on(&file("usb = true")));
        assert!(!on(&file("usb = false")));
        // The command line wins over the file.
        let mut a = args(&["--usb"]);
        a.merge(
            ConfigFile::parse("usb = false", Path::new("c.toml")).unwrap(),
            base,
        );
        assert!(on(&a));
        let mut a = args(&["--no-usb"]);
        a.merge(
            ConfigFile::parse("usb = true", Path::new("c.toml")).unwrap(),
            base,
        );
        assert!(!on(&a));
    }

    const FILE: &str = r#"
memory = 1024
hda = "disks/win7.qcow2"
cdrom = "/isos/win7.iso"
boot = "dc"
snapshot = true
format = "qcow2"
drive = ["file=extra.img,if=ide,index=1", "if=ide,index=3,media=cdrom"]
"#;

    #[test]
    fn config_file_fills_what_the_command_line_left_out() {
        let mut a = args(&[]);
        a.merge(
            ConfigFile::parse(FILE, Path::new("cfg.toml")).unwrap(),
            Path::new("/vm"),
        );
        assert_eq!(a.memory, Some(1024));
        assert_eq!(a.hda, Some(PathBuf::from("/vm/disks/win7.qcow2")));
        assert_eq!(a.cdrom, Some(PathBuf::from("/isos/win7.iso")));
        assert_eq!(a.boot.as_deref(), Some("dc"));
        assert!(a.snapshot);
        assert_eq!(a.format.as_deref(), Some("qcow2"));
        assert_eq!(
            a.drives,
            [
                "file=/vm/extra.img,if=ide,index=1",
                "if=ide,index=3,media=cdrom"
            ]
        );
        assert_eq!(a.display_name(), "win7.qcow2");
    }

    #[test]
    fn command_line_options_win_over_the_file() {
        let mut a = args(&[
            "-m",
            "256",
            "--cdrom",
            "other.iso",
            "--drive",
            "file=b.img",
            "mine.img",
        ]);
        a.merge(
            ConfigFile::parse(FILE, Path::new("cfg.toml")).unwrap(),
            Path::new("/vm"),
        );
        assert_eq!(a.memory, Some(256));
        assert_eq!(a.cdrom, Some(PathBuf::from("other.iso")));
        assert_eq!(a.drives, ["file=b.img"]);
        // The disk given as DISK replaces the file's hda.
        assert_eq!(a.disk, Some(PathBuf::from("mine.img")));
        assert_eq!(a.hda, None);
        // Not on the command line: from the file.
        assert_eq!(a.boot.as_deref(), Some("dc"));
    }

    /// QEMU's four-IDE-drive line: disk, disk, CD, disk in indexes 0-3. The default
    /// empty CD drive gives way, and the CD in its slot is the one our BIOS boots.
    #[test]
    fn four_ide_drives_take_every_slot() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, len: usize| {
            let p = dir.path().join(name);
            std::fs::write(&p, vec![0u8; len]).unwrap();
            p.to_str().unwrap().to_string()
        };
        let (a, b, iso, d) = (
            file("a.img", 1 << 20),
            file("b.img", 1 << 20),
            file("cd.iso", 64 << 11),
            file("d.img", 1 << 20),
        );
        let drives = [
            format!("file={a},if=ide"),
            format!("file={b},if=ide"),
            format!("file={iso},if=ide,media=cdrom"),
            format!("file={d},if=ide"),
        ];
        let flags: Vec<&str> = drives
            .iter()
            .flat_map(|d| ["--drive", d.as_str()])
            .collect();
        let config = args(&flags).machine_config(64, true).unwrap();
        let ide = |channel, slave| DriveSlot::Ide { channel, slave };
        assert_eq!(config.hda_slot, ide(0, false));
        assert!(config.hda.is_some());
        assert_eq!(config.cdrom.as_ref().map(|c| c.sector_count()), Some(64));
        let extra: Vec<_> = config.extra_drives.iter().map(|(s, _)| *s).collect();
        assert_eq!(extra, [ide(0, true), ide(1, true)]);
        assert!(
            config
                .extra_drives
                .iter()
                .all(|(_, d)| matches!(d, IdeDrive::Disk(_)))
        );
        // The machine takes that layout (no second drive in the CD slot).
        aero_machine::Machine::new(config).unwrap();
        // Four disks: the fourth lands where the CD would be; a fifth has no slot.
        let four: Vec<String> = [&a, &b, &iso, &d]
            .iter()
            .map(|f| format!("file={f},if=ide"))
            .collect();
        let mut flags: Vec<&str> = four.iter().flat_map(|d| ["--drive", d.as_str()]).collect();
        let config = args(&flags).machine_config(64, true).unwrap();
        assert!(config.cdrom.is_none());
        let extra: Vec<_> = config.extra_drives.iter().map(|(s, _)| *s).collect();
        assert_eq!(extra, [ide(0, true), ide(1, false), ide(1, true)]);
        drop(config); // the images are locked while open
        flags.extend(["--drive", "media=cdrom,if=ide"]);
        let Err(e) = args(&flags).machine_config(64, true) else {
            panic!("accepted {flags:?}")
        };
        assert!(e.to_string().contains("no free Ide slot"), "{e}");
        // With --cdrom the slot stays the CD's: a fourth IDE drive no longer fits.
        let mut flags: Vec<&str> = four.iter().flat_map(|d| ["--drive", d.as_str()]).collect();
        flags.extend(["--cdrom", iso.as_str()]);
        let Err(e) = args(&flags).machine_config(64, true) else {
            panic!("accepted {flags:?}")
        };
        assert!(e.to_string().contains("no free Ide slot"), "{e}");
    }

    #[test]
    fn readme_config_example_is_valid() {
        let readme = include_str!("../../../README.md");
        let example = readme
            .split("```toml\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("README has a ```toml example");
        let file = ConfigFile::parse(example, Path::new("README.md")).unwrap();
        assert_eq!(file.memory, Some(2048));
        assert_eq!(file.drive.map(|d| d.len()), Some(1));
    }

    #[test]
    fn unknown_or_mistyped_keys_are_one_plain_error() {
        for (text, needle) in [
            ("memroy = 512\n", "memroy"),
            ("\nmemory = \"lots\"\n", "line 2: invalid type"),
            ("[machine]\nmemory = 1\n", "unknown field `machine`"),
        ] {
            let e = ConfigFile::parse(text, Path::new("vm.toml"))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("vm.toml, line "), "{e}");
            assert!(e.contains(needle), "{e}");
            assert!(!e.contains('\n'), "one line: {e:?}");
        }
    }

    #[test]
    fn load_config_reads_the_file_and_reports_a_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vm.toml");
        std::fs::write(&path, "memory = 768\nfda = \"boot.img\"\n").unwrap();
        let mut a = args(&["--config", path.to_str().unwrap()]);
        a.load_config().unwrap();
        assert_eq!(a.memory, Some(768));
        assert_eq!(a.fda, Some(dir.path().join("boot.img")));
        let mut missing = args(&["--config", "/nonexistent/vm.toml"]);
        let e = missing.load_config().unwrap_err().to_string();
        assert!(e.contains("cannot read /nonexistent/vm.toml"), "{e}");
    }

    /// A file holding a minimal bzImage header (boot protocol 2.15, 31 setup sectors).
    fn tiny_bzimage(dir: &Path) -> PathBuf {
        let mut k = vec![0u8; 31 * 512 + 4096];
        k[0x1F1] = 30;
        k[0x1FE..0x200].copy_from_slice(&[0x55, 0xAA]);
        k[0x202..0x206].copy_from_slice(b"HdrS");
        k[0x206..0x208].copy_from_slice(&0x020Fu16.to_le_bytes());
        k[0x211] = 1; // LOADED_HIGH
        k[0x22C..0x230].copy_from_slice(&0x7FFF_FFFFu32.to_le_bytes());
        k[0x238..0x23C].copy_from_slice(&2047u32.to_le_bytes());
        let path = dir.join("bzImage");
        std::fs::write(&path, k).unwrap();
        path
    }

    #[test]
    fn kernel_options_boot_no_demo_and_refuse_bad_combinations() {
        let dir = tempfile::tempdir().unwrap();
        let kernel = tiny_bzimage(dir.path());
        let k = kernel.to_str().unwrap();
        let initrd = dir.path().join("initrd.img");
        std::fs::write(&initrd, [1u8; 1000]).unwrap();
        let i = initrd.to_str().unwrap();
        let config = args(&["--kernel", k, "--initrd", i, "--append", "console=ttyS0"])
            .machine_config(64, true)
            .unwrap();
        let linux = config.linux.as_ref().expect("a kernel to boot");
        assert_eq!(linux.initrd().len(), 1000);
        assert_eq!(linux.cmdline_bytes(), b"console=ttyS0\0");
        assert!(config.hda.is_none(), "no demo disk with --kernel");
        aero_machine::Machine::new(config).unwrap();
        let err = |flags: &[&str]| match args(flags).machine_config(64, true) {
            Ok(_) => panic!("accepted {flags:?}"),
            Err(e) => e.to_string(),
        };
        assert!(err(&["--initrd", i]).contains("need --kernel"));
        assert!(err(&["--append", "quiet"]).contains("need --kernel"));
        let config = args(&["--kernel", k, "--bios", i])
            .machine_config(64, true)
            .unwrap();
        let Err(e) = aero_machine::Machine::new(config) else {
            panic!("--kernel booted through an external BIOS")
        };
        assert!(e.to_string().contains("needs Aero's own BIOS"), "{e}");
        // Not a kernel, or a missing one: one plain message naming the file.
        let e = err(&["--kernel", i]);
        assert!(e.contains("initrd.img: not a Linux kernel"), "{e}");
        let short = dir.path().join("short");
        std::fs::write(&short, [0u8; 100]).unwrap();
        let e = err(&["--kernel", short.to_str().unwrap()]);
        assert!(e.contains("too short"), "{e}");
        let e = err(&["--kernel", "/nonexistent/bzImage"]);
        assert!(e.contains("cannot read kernel /nonexistent/bzImage"), "{e}");
        let long = "x".repeat(3000);
        let e = err(&["--kernel", k, "--append", &long]);
        assert!(e.contains("longer than the kernel's limit of 2047"), "{e}");
        // An initrd that leaves no room in 8 MiB of RAM: refused before the guest starts.
        let big = dir.path().join("big.img");
        std::fs::write(&big, vec![0u8; 8 << 20]).unwrap();
        let config = args(&["-m", "8", "--kernel", k, "--initrd", big.to_str().unwrap()])
            .machine_config(64, true)
            .unwrap();
        let Err(e) = aero_machine::Machine::new(config) else {
            panic!("an 8 MiB initrd fit in 8 MiB of RAM")
        };
        assert!(e.to_string().contains("does not fit"), "{e}");
    }

    #[test]
    fn kernel_keys_in_the_config_file() {
        let base = Path::new("/vm");
        let file = "kernel = \"bzImage\"\ninitrd = \"initrd.img\"\nappend = \"quiet\"\n";
        let a = MachineArgs::from_config_text(file, Path::new("c.toml"), base).unwrap();
        assert_eq!(a.kernel, Some(PathBuf::from("/vm/bzImage")));
        assert_eq!(a.initrd, Some(PathBuf::from("/vm/initrd.img")));
        assert_eq!(a.append.as_deref(), Some("quiet"));
        assert_eq!(a.display_name(), "bzImage");
        // A kernel on the command line takes none of the file's initrd or command line.
        let mut a = args(&["--kernel", "other"]);
        a.merge(ConfigFile::parse(file, Path::new("c.toml")).unwrap(), base);
        assert_eq!(a.kernel, Some(PathBuf::from("other")));
        assert_eq!((a.initrd, a.append), (None, None));
        let mut a = args(&["--append", "debug"]);
        a.merge(ConfigFile::parse(file, Path::new("c.toml")).unwrap(), base);
        assert_eq!(a.append.as_deref(), Some("debug"));
        assert_eq!(a.initrd, Some(PathBuf::from("/vm/initrd.img")));
    }
}
