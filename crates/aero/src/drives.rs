//! Disk options shared by `aero headless` and `aero run`: `--format` and QEMU-style
//! `--drive file=…,if=ide|ahci,index=N,media=disk|cdrom,format=…,readonly=on`.

use std::path::{Path, PathBuf};

use aero_machine::DriveSlot;
use aero_storage::ide::IdeDrive;
use aero_storage::{BlockDevice, ImageFormat, OpenOptions, open_image};

/// One `--drive` option, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriveSpec {
    pub file: Option<PathBuf>,
    pub interface: Interface,
    pub index: Option<u8>,
    pub cdrom: bool,
    pub format: Option<ImageFormat>,
    pub read_only: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interface {
    Ide,
    Ahci,
}

pub fn parse_format(text: &str) -> anyhow::Result<ImageFormat> {
    match text {
        "raw" => Ok(ImageFormat::Raw),
        "qcow2" => Ok(ImageFormat::Qcow2),
        "vhd" | "vpc" => Ok(ImageFormat::Vhd),
        other => anyhow::bail!("unknown image format {other:?} (use raw, qcow2 or vhd)"),
    }
}

fn on_off(key: &str, value: &str) -> anyhow::Result<bool> {
    match value {
        "on" | "true" | "yes" => Ok(true),
        "off" | "false" | "no" => Ok(false),
        _ => anyhow::bail!("--drive {key}={value}: use on or off"),
    }
}

impl DriveSpec {
    pub fn parse(text: &str) -> anyhow::Result<DriveSpec> {
        let mut spec = DriveSpec {
            file: None,
            interface: Interface::Ide,
            index: None,
            cdrom: false,
            format: None,
            read_only: false,
        };
        for part in text.split(',').filter(|p| !p.is_empty()) {
            let (key, value) = part.split_once('=').ok_or_else(|| {
                anyhow::anyhow!("--drive {text:?}: expected key=value, got {part:?}")
            })?;
            match key {
                "file" => spec.file = Some(PathBuf::from(value)),
                "if" => {
                    spec.interface = match value {
                        "ide" => Interface::Ide,
                        "ahci" | "sata" => Interface::Ahci,
                        _ => anyhow::bail!("--drive if={value}: use ide or ahci"),
                    }
                }
                "index" => {
                    spec.index = Some(
                        value
                            .parse()
                            .map_err(|_| anyhow::anyhow!("--drive index={value}: not a number"))?,
                    )
                }
                "media" => {
                    spec.cdrom = match value {
                        "disk" => false,
                        "cdrom" => true,
                        _ => anyhow::bail!("--drive media={value}: use disk or cdrom"),
                    }
                }
                "format" => spec.format = Some(parse_format(value)?),
                "readonly" => spec.read_only = on_off(key, value)?,
                _ => anyhow::bail!(
                    "--drive: unknown key {key:?} (file, if, index, media, format, readonly)"
                ),
            }
        }
        anyhow::ensure!(
            spec.file.is_some() || spec.cdrom,
            "--drive {text:?}: a disk needs file="
        );
        Ok(spec)
    }

    /// The slot this drive asks for, if it names one.
    pub fn slot(&self) -> anyhow::Result<Option<DriveSlot>> {
        let Some(i) = self.index else { return Ok(None) };
        Ok(Some(match self.interface {
            Interface::Ide => {
                anyhow::ensure!(i < 4, "--drive if=ide,index={i}: IDE has indexes 0-3");
                DriveSlot::Ide {
                    channel: i / 2,
                    slave: i % 2 == 1,
                }
            }
            Interface::Ahci => {
                anyhow::ensure!(i < 6, "--drive if=ahci,index={i}: AHCI has ports 0-5");
                DriveSlot::Ahci(i)
            }
        }))
    }
}

/// Opens a disk image: CD images are 2048-byte sectors and never written.
pub fn open_disk(
    path: &Path,
    snapshot: bool,
    cdrom: bool,
    read_only: bool,
    format: Option<ImageFormat>,
) -> anyhow::Result<Box<dyn BlockDevice>> {
    let opts = OpenOptions {
        snapshot: snapshot && !cdrom,
        sector_size: if cdrom { 2048 } else { 512 },
        read_only: read_only || cdrom,
        format,
    };
    Ok(open_image(path, &opts)?)
}

/// Every slot in the order free slots are handed out.
fn all_slots(interface: Interface) -> Vec<DriveSlot> {
    match interface {
        Interface::Ide => (0..4)
            .map(|i| DriveSlot::Ide {
                channel: i / 2,
                slave: i % 2 == 1,
            })
            .collect(),
        Interface::Ahci => (0..6).map(DriveSlot::Ahci).collect(),
    }
}

/// The `--drive` drives opened and placed: `(slot, drive)`, taken slots skipped.
pub fn open_drives(
    specs: &[DriveSpec],
    snapshot: bool,
    taken: &[DriveSlot],
) -> anyhow::Result<Vec<(DriveSlot, IdeDrive)>> {
    let mut used: Vec<DriveSlot> = taken.to_vec();
    let mut out = Vec::new();
    for spec in specs {
        let slot = match spec.slot()? {
            Some(s) => s,
            None => *all_slots(spec.interface)
                .iter()
                .find(|s| !used.contains(s))
                .ok_or_else(|| {
                    anyhow::anyhow!("no free {:?} slot for another drive", spec.interface)
                })?,
        };
        anyhow::ensure!(!used.contains(&slot), "two drives in slot {slot:?}");
        used.push(slot);
        let device = spec
            .file
            .as_deref()
            .map(|p| open_disk(p, snapshot, spec.cdrom, spec.read_only, spec.format))
            .transpose()?;
        let drive = match device {
            Some(d) if !spec.cdrom => IdeDrive::Disk(d),
            d => IdeDrive::Cdrom(d),
        };
        out.push((slot, drive));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_qemu_style_drives() {
        let d = DriveSpec::parse("file=win7.qcow2,if=ahci,index=0,format=qcow2").unwrap();
        assert_eq!(d.interface, Interface::Ahci);
        assert_eq!(d.index, Some(0));
        assert_eq!(d.format, Some(ImageFormat::Qcow2));
        assert_eq!(d.slot().unwrap(), Some(DriveSlot::Ahci(0)));
        let cd = DriveSpec::parse("media=cdrom,if=ide,index=3").unwrap();
        assert!(cd.cdrom && cd.file.is_none());
        assert_eq!(
            cd.slot().unwrap(),
            Some(DriveSlot::Ide {
                channel: 1,
                slave: true
            })
        );
        for bad in [
            "if=scsi,file=a",
            "file=a,index=x",
            "media=tape,file=a",
            "bogus=1",
            "if=ide",
            "file=a,if=ahci,index=6",
            "file=a,readonly=maybe",
            "file",
        ] {
            assert!(
                DriveSpec::parse(bad).and_then(|d| d.slot()).is_err(),
                "{bad} accepted"
            );
        }
    }

    #[test]
    fn free_slots_are_handed_out_in_order() {
        let specs = [
            DriveSpec::parse("media=cdrom,if=ahci").unwrap(),
            DriveSpec::parse("media=cdrom,if=ahci").unwrap(),
            DriveSpec::parse("media=cdrom").unwrap(),
        ];
        let taken = [
            DriveSlot::Ahci(0),
            DriveSlot::Ide {
                channel: 0,
                slave: false,
            },
        ];
        let drives = open_drives(&specs, false, &taken).unwrap();
        let slots: Vec<_> = drives.iter().map(|(s, _)| *s).collect();
        assert_eq!(
            slots,
            vec![
                DriveSlot::Ahci(1),
                DriveSlot::Ahci(2),
                DriveSlot::Ide {
                    channel: 0,
                    slave: true
                }
            ]
        );
        let clash = [DriveSpec::parse("media=cdrom,if=ahci,index=0").unwrap()];
        assert!(open_drives(&clash, false, &taken).is_err());
    }
}
