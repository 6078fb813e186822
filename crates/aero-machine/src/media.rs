//! Host media change: eject and insert discs in the machine's CD/DVD drives, addressed by
//! drive slot. The drives themselves (tray, lock, what the guest is told) are the shared
//! ATAPI model in `aero_storage::ide::atapi`.

use aero_storage::ide::{CdStatus, IdeChannel, MediaError};
use aero_storage::{BlockDevice, SharedDisk};

use super::{DriveSlot, Machine, MachineError};
use crate::devices::ahci_pci::AhciConfig;
use crate::devices::pci::PciFunction;
use crate::guest_ram::GuestRam;

/// The slot whose disc our BIOS boots from (El Torito) and serves through INT 13h.
pub(crate) const BIOS_CD_SLOT: DriveSlot = DriveSlot::Ide {
    channel: 1,
    slave: false,
};

/// Sector size of CD/DVD media.
const CD_SECTOR: u32 = 2048;

impl Machine {
    /// Every CD/DVD drive with its tray and disc state, IDE slots first.
    pub fn cd_drives(&self) -> Vec<(DriveSlot, CdStatus)> {
        let ide = (0..2u8).flat_map(|channel| {
            [false, true].into_iter().filter_map(move |slave| {
                let status = self.platform.ide.channels[channel as usize].cd_status(slave)?;
                Some((DriveSlot::Ide { channel, slave }, status))
            })
        });
        let ahci = (0..self.platform.ahci.port_count()).filter_map(|port| {
            let status = self.platform.ahci.cd_status(port)?;
            Some((DriveSlot::Ahci(port as u8), status))
        });
        ide.chain(ahci).collect()
    }

    /// Puts `disc` (2048-byte sectors) into the drive in `slot`, replacing any disc there;
    /// the guest sees a media change.
    pub fn insert_cd(
        &mut self,
        slot: DriveSlot,
        disc: Box<dyn BlockDevice>,
    ) -> Result<(), MachineError> {
        if disc.sector_size() != CD_SECTOR {
            return Err(MachineError::Config(format!(
                "a CD/DVD image has {CD_SECTOR}-byte sectors, not {}",
                disc.sector_size()
            )));
        }
        let disc = SharedDisk::new(disc);
        let result = match slot {
            DriveSlot::Ide { channel, slave } => self
                .ide_channel(channel)
                .and_then(|ch| ch.insert_media(slave, Box::new(disc.clone()))),
            DriveSlot::Ahci(port) => self
                .platform
                .ahci
                .insert_media(port as usize, Box::new(disc.clone())),
        };
        if let DriveSlot::Ahci(_) = slot {
            self.post_ahci_notifications();
        }
        result.map_err(|e| MachineError::Media(slot, e))?;
        if slot == BIOS_CD_SLOT {
            self.disks.cdrom = Some(Box::new(disc));
        }
        tracing::info!(?slot, "CD inserted");
        Ok(())
    }

    /// Opens the tray of the drive in `slot` and takes the disc out. A tray the guest has
    /// locked stays shut and the guest is asked to eject ([`MediaError::Locked`]) unless
    /// `force`.
    pub fn eject_cd(&mut self, slot: DriveSlot, force: bool) -> Result<(), MachineError> {
        let result = match slot {
            DriveSlot::Ide { channel, slave } => self
                .ide_channel(channel)
                .and_then(|ch| ch.eject_media(slave, force)),
            DriveSlot::Ahci(port) => self.platform.ahci.eject_media(port as usize, force),
        };
        if let DriveSlot::Ahci(_) = slot {
            self.post_ahci_notifications();
        }
        result.map_err(|e| MachineError::Media(slot, e))?;
        if slot == BIOS_CD_SLOT {
            self.disks.cdrom = None;
        }
        tracing::info!(?slot, force, "CD ejected");
        Ok(())
    }

    /// An AHCI CD drive with asynchronous notification on announces a host media change
    /// with a FIS into guest memory and an interrupt. Done here, at once: an idle guest
    /// touches no AHCI register that would otherwise get the HBA processed.
    fn post_ahci_notifications(&mut self) {
        if !self.platform.ahci.command_pending()
            || !self.platform.pci.pci.functions.ahci.config().dma_enabled()
        {
            return;
        }
        let mut ram = GuestRam::new(&mut self.memory, &self.platform.map);
        self.platform.ahci.process(&mut ram);
        for (addr, len) in ram.written {
            self.cpu.invalidate_code(addr, len);
        }
        let now = self.platform.clock.now();
        self.platform.advance(now);
    }

    /// IDE channel `channel` of a drive slot; a channel that does not exist has no drive.
    fn ide_channel(&mut self, channel: u8) -> Result<&mut IdeChannel, MediaError> {
        self.platform
            .ide
            .channels
            .get_mut(channel as usize)
            .ok_or(MediaError::NoCdDrive)
    }
}
