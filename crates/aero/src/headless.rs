//! `aero headless`: boot a guest without a window, watch serial/screen, save a screenshot.
//!
//! The options are a contract with external test suites; keep them stable.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use aero_machine::{BootDevice, DriveSlot, Machine, MachineConfig, RunEvent};
use aero_storage::{BlockDevice, MemoryDisk};

use crate::drives::{self, DriveSpec};
use clap::Args;

#[derive(Args, Debug)]
pub struct HeadlessArgs {
    /// First hard disk (same as --hda).
    disk: Option<PathBuf>,
    /// Guest RAM in MiB.
    #[arg(short = 'm', long = "memory", value_name = "MIB", default_value_t = 512)]
    memory: u64,
    /// First hard disk.
    #[arg(long, value_name = "FILE")]
    hda: Option<PathBuf>,
    /// CD-ROM image (ISO).
    #[arg(long, value_name = "FILE")]
    cdrom: Option<PathBuf>,
    /// Floppy image.
    #[arg(long, value_name = "FILE")]
    fda: Option<PathBuf>,
    /// Boot order: a = floppy, c = hard disk, d = CD-ROM (e.g. "dc").
    #[arg(long, value_name = "ORDER")]
    boot: Option<String>,
    /// Never write to any disk image (writes stay in memory).
    #[arg(long)]
    snapshot: bool,
    /// External system BIOS ROM (e.g. SeaBIOS).
    #[arg(long, value_name = "FILE")]
    bios: Option<PathBuf>,
    /// COM1 output (- = stdout).
    #[arg(long, value_name = "FILE|-")]
    serial: Option<String>,
    /// Port 0xE9 output (- = stdout).
    #[arg(long, value_name = "FILE|-")]
    debugcon: Option<String>,
    /// Every byte written to port 0x80, one hex code per line.
    #[arg(long = "post-log", value_name = "FILE")]
    post_log: Option<PathBuf>,
    /// Stop with exit 0 once TEXT appeared on COM1.
    #[arg(long = "until-serial", value_name = "TEXT")]
    until_serial: Option<String>,
    /// Stop with exit 0 once TEXT is on the text-mode screen.
    #[arg(long = "until-screen", value_name = "TEXT")]
    until_screen: Option<String>,
    /// Give up after this much guest time (exit 1).
    #[arg(long, value_name = "SECONDS")]
    timeout: Option<f64>,
    /// Write the screen when the run ends.
    #[arg(long, value_name = "FILE.png")]
    screenshot: Option<PathBuf>,
    /// Force the image format of the hard disk and floppy (raw, qcow2, vhd); detected from
    /// the header otherwise.
    #[arg(long, value_name = "FORMAT")]
    format: Option<String>,
    /// A drive, QEMU style: file=PATH,if=ide|ahci,index=N,media=disk|cdrom,format=F,readonly=on
    /// (repeatable). The first disk becomes the boot disk when there is no --hda.
    #[arg(long = "drive", value_name = "SPEC")]
    drives: Vec<String>,
    /// Instruction-count time (the default in headless mode).
    #[arg(long, conflicts_with = "realtime")]
    deterministic: bool,
    /// Follow the host clock instead of counting instructions.
    #[arg(long)]
    realtime: bool,
}

/// Exit statuses of the contract.
const EXIT_OK: u8 = 0;
const EXIT_TIMEOUT: u8 = 1;
const EXIT_BAD_ARGS: u8 = 2;
const EXIT_SHUTDOWN: u8 = 3;

/// Guest time between checks of the screen and the timeout.
const SLICE_NS: u64 = 10_000_000;

pub fn main(args: HeadlessArgs) -> ExitCode {
    let setup = match Setup::new(&args) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("aero: {e:#}");
            return ExitCode::from(EXIT_BAD_ARGS);
        }
    };
    match run(args, setup) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("aero: {e:#}");
            ExitCode::from(EXIT_BAD_ARGS)
        }
    }
}

/// Everything opened before the guest starts, so bad arguments fail early with exit 2.
struct Setup {
    machine: Machine,
    serial: Option<Box<dyn Write>>,
    debugcon: Option<Box<dyn Write>>,
    post_log: Option<Box<dyn Write>>,
}

fn open_sink(spec: &str) -> anyhow::Result<Box<dyn Write>> {
    if spec == "-" {
        Ok(Box::new(std::io::stdout()))
    } else {
        let f = File::create(spec).map_err(|e| anyhow::anyhow!("cannot create {spec}: {e}"))?;
        Ok(Box::new(std::io::BufWriter::new(f)))
    }
}

/// The built-in demo guest as a read-only in-memory hard disk (booted when no disk is given).
pub fn demo_disk() -> anyhow::Result<Box<dyn BlockDevice>> {
    Ok(Box::new(MemoryDisk::new(aero_firmware::demo::demo_disk_image(), 512, true)?))
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

impl Setup {
    fn new(args: &HeadlessArgs) -> anyhow::Result<Setup> {
        if args.disk.is_some() && args.hda.is_some() {
            anyhow::bail!("give the hard disk either as DISK or with --hda, not both");
        }
        anyhow::ensure!((1..=65536).contains(&args.memory), "--memory must be between 1 and 65536 MiB");
        if let Some(t) = args.timeout {
            anyhow::ensure!(t.is_finite() && t > 0.0, "--timeout must be a positive number of seconds");
        }
        let format = args.format.as_deref().map(drives::parse_format).transpose()?;
        let mut specs = args.drives.iter().map(|d| DriveSpec::parse(d)).collect::<anyhow::Result<Vec<_>>>()?;
        let hda_path = args.disk.as_ref().or(args.hda.as_ref());
        let mut hda = hda_path.map(|p| drives::open_disk(p, args.snapshot, false, false, format)).transpose()?;
        // Windows 7's layout: the hard disk on AHCI port 0 (inbox msahci), the CD on IDE.
        let mut hda_slot = DriveSlot::Ahci(0);
        if hda.is_none()
            && let Some(i) = specs.iter().position(|d| !d.cdrom)
        {
            // The first --drive disk is the boot disk, in the slot it asks for.
            let first = specs.remove(i);
            let placed = drives::open_drives(std::slice::from_ref(&first), args.snapshot, &[])?;
            if let Some((slot, aero_storage::ide::IdeDrive::Disk(d))) = placed.into_iter().next() {
                hda_slot = slot;
                hda = Some(d);
            }
        }
        let mut taken = vec![DriveSlot::Ide { channel: 1, slave: false }];
        if hda.is_some() {
            taken.push(hda_slot);
        }
        let extra_drives = drives::open_drives(&specs, args.snapshot, &taken)?;
        if hda.is_none() && args.cdrom.is_none() && args.fda.is_none() && extra_drives.is_empty() {
            tracing::info!("no disk given: booting the built-in demo guest");
            hda = Some(demo_disk()?);
        }
        // CD-ROMs are read-only media; nothing is ever written to the ISO.
        let cdrom = args.cdrom.as_ref().map(|p| drives::open_disk(p, false, true, true, None)).transpose()?;
        let fda = args.fda.as_ref().map(|p| drives::open_disk(p, args.snapshot, false, false, format)).transpose()?;
        let boot_order = match &args.boot {
            Some(o) => parse_boot_order(o)?,
            None => vec![BootDevice::HardDisk, BootDevice::Cdrom, BootDevice::Floppy],
        };
        let bios = args
            .bios
            .as_ref()
            .map(|p| std::fs::read(p).map_err(|e| anyhow::anyhow!("cannot read BIOS {}: {e}", p.display())))
            .transpose()?;
        let config = MachineConfig {
            memory_bytes: args.memory << 20,
            hda,
            cdrom,
            fda,
            boot_order,
            external_bios: bios,
            deterministic: !args.realtime,
            hda_slot,
            extra_drives,
        };
        let machine = Machine::new(config)?;
        Ok(Setup {
            machine,
            serial: args.serial.as_deref().map(open_sink).transpose()?,
            debugcon: args.debugcon.as_deref().map(open_sink).transpose()?,
            post_log: args.post_log.as_deref().map(|p| open_sink(&p.to_string_lossy())).transpose()?,
        })
    }
}

/// Finds `needle` in a stream that arrives in pieces.
struct StreamMatcher {
    needle: Vec<u8>,
    tail: Vec<u8>,
}

impl StreamMatcher {
    fn new(needle: &str) -> Self {
        StreamMatcher { needle: needle.as_bytes().to_vec(), tail: Vec::new() }
    }
    fn feed(&mut self, data: &[u8]) -> bool {
        if self.needle.is_empty() {
            return true;
        }
        self.tail.extend_from_slice(data);
        let found = self.tail.windows(self.needle.len()).any(|w| w == self.needle.as_slice());
        // Keep just enough to match across the next boundary.
        let keep = self.needle.len() - 1;
        if self.tail.len() > keep {
            self.tail.drain(..self.tail.len() - keep);
        }
        found
    }
}

fn run(args: HeadlessArgs, mut s: Setup) -> anyhow::Result<u8> {
    let timeout_ns = args.timeout.map(|t| (t * 1e9) as u64);
    let mut serial_match = args.until_serial.as_deref().map(StreamMatcher::new);
    let code = loop {
        let event = s.machine.run_for(SLICE_NS);
        let serial = s.machine.take_serial_output();
        if let Some(w) = s.serial.as_mut() {
            w.write_all(&serial)?;
            w.flush()?;
        }
        let dbg = s.machine.take_debugcon_output();
        if let Some(w) = s.debugcon.as_mut() {
            w.write_all(&dbg)?;
            w.flush()?;
        }
        for code in s.machine.take_post_codes() {
            if let Some(w) = s.post_log.as_mut() {
                writeln!(w, "{code:02x}")?;
            }
        }
        if serial_match.as_mut().is_some_and(|m| m.feed(&serial)) {
            break EXIT_OK;
        }
        if let Some(text) = &args.until_screen
            && s.machine.text_screen().is_some_and(|screen| screen.contains(text.as_str()))
        {
            break EXIT_OK;
        }
        match event {
            RunEvent::Running => {}
            RunEvent::PoweredOff => break EXIT_OK,
            RunEvent::Shutdown(msg) => {
                eprintln!("aero: {msg}");
                break EXIT_SHUTDOWN;
            }
        }
        if timeout_ns.is_some_and(|t| s.machine.now_ns() >= t) {
            eprintln!(
                "aero: timeout after {:.1} s of guest time; CPU at {}",
                s.machine.now_ns() as f64 / 1e9,
                s.machine.cpu_location()
            );
            break EXIT_TIMEOUT;
        }
    };
    for w in [s.serial.as_mut(), s.debugcon.as_mut(), s.post_log.as_mut()].into_iter().flatten() {
        w.flush()?;
    }
    if let Some(path) = &args.screenshot {
        let frame = s.machine.screen();
        aero::screenshot::write_png(path, frame.width, frame.height, &frame.pixels)?;
    }
    s.machine.shutdown()?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_matcher_finds_text_across_chunks() {
        let mut m = StreamMatcher::new("BOOT-OK");
        assert!(!m.feed(b"xxBOO"));
        assert!(!m.feed(b"T-"));
        assert!(m.feed(b"OKyy"));
        let mut m = StreamMatcher::new("abc");
        assert!(!m.feed(b"ab"));
        assert!(!m.feed(b"xc"));
    }

    #[test]
    fn boot_order_letters() {
        assert_eq!(parse_boot_order("dc").unwrap(), vec![BootDevice::Cdrom, BootDevice::HardDisk]);
        assert!(parse_boot_order("cz").is_err());
    }
}
