//! The machine options `aero headless` and `aero run` share (memory, disks, boot order,
//! BIOS), and turning them into a [`MachineConfig`].

use std::collections::HashMap;
use std::path::PathBuf;

use aero_machine::{BootDevice, DriveSlot, MachineConfig};
use aero_storage::ide::IdeDrive;
use aero_storage::{BlockDevice, MemoryDisk};
use clap::Args;

use crate::drives::{self, DriveSpec};

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
}

/// The built-in demo guest as a read-only in-memory hard disk (booted when no disk is given).
pub fn demo_disk() -> anyhow::Result<Box<dyn BlockDevice>> {
    Ok(Box::new(MemoryDisk::new(
        aero_firmware::demo::demo_disk_image(),
        512,
        true,
    )?))
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
        let mut taken = vec![DriveSlot::Ide {
            channel: 1,
            slave: false,
        }];
        if hda.is_some() {
            taken.push(hda_slot);
        }
        let extra_drives = drives::open_drives(&specs, self.snapshot, &taken)?;
        if hda.is_none() && self.cdrom.is_none() && self.fda.is_none() && extra_drives.is_empty() {
            tracing::info!("no disk given: booting the built-in demo guest");
            hda = Some(demo_disk()?);
        }
        // CD-ROMs are read-only media; nothing is ever written to the ISO.
        let cdrom = self
            .cdrom
            .as_ref()
            .map(|p| drives::open_disk(p, false, true, true, None))
            .transpose()?;
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
        })
    }

    /// The CD images given on the command line, by slot (for the monitor's `info block`).
    /// Only `--cdrom` and `--drive` CDs with an explicit index have a known slot here.
    pub fn cd_files(&self) -> HashMap<DriveSlot, PathBuf> {
        let mut files = HashMap::new();
        if let Some(path) = &self.cdrom {
            let slot = DriveSlot::Ide {
                channel: 1,
                slave: false,
            };
            files.insert(slot, path.clone());
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
}
