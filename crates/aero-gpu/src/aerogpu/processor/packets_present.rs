//! Presentation and shared-surface packets (seed 003).

use aero_protocol::cmd;

use super::{Command, CommandProcessor, decode};
use crate::aerogpu::error::PacketError;

/// Only scanout 0 exists.
fn check_scanout(scanout_id: u32) -> Result<(), PacketError> {
    if scanout_id != 0 {
        return Err(PacketError::InvalidValue {
            what: "scanout_id",
            value: scanout_id.into(),
        });
    }
    Ok(())
}

impl CommandProcessor {
    pub(super) fn present<'a>(&mut self, p: &'a [u8]) -> Result<Command<'a>, PacketError> {
        let c: cmd::Present = decode(p)?;
        check_scanout(c.scanout_id)?;
        Ok(Command::Present {
            scanout_id: c.scanout_id,
            flags: c.flags,
            d3d9_present_flags: None,
        })
    }

    pub(super) fn present_ex<'a>(&mut self, p: &'a [u8]) -> Result<Command<'a>, PacketError> {
        let c: cmd::PresentEx = decode(p)?;
        check_scanout(c.scanout_id)?;
        Ok(Command::Present {
            scanout_id: c.scanout_id,
            flags: c.flags,
            d3d9_present_flags: Some(c.d3d9_present_flags),
        })
    }

    pub(super) fn export_shared_surface<'a>(
        &mut self,
        p: &'a [u8],
    ) -> Result<Command<'a>, PacketError> {
        let c: cmd::ExportSharedSurface = decode(p)?;
        let resource = self
            .objects
            .export_shared(c.resource_handle, c.share_token)?;
        Ok(Command::ExportSharedSurface {
            resource,
            share_token: c.share_token,
        })
    }

    pub(super) fn import_shared_surface<'a>(
        &mut self,
        p: &'a [u8],
    ) -> Result<Command<'a>, PacketError> {
        let c: cmd::ImportSharedSurface = decode(p)?;
        let resource = self.objects.import_shared(
            c.out_resource_handle,
            c.share_token,
            self.limits.max_handles,
        )?;
        Ok(Command::ImportSharedSurface {
            handle: c.out_resource_handle,
            resource,
            share_token: c.share_token,
        })
    }

    pub(super) fn release_shared_surface<'a>(
        &mut self,
        p: &'a [u8],
    ) -> Result<Command<'a>, PacketError> {
        let c: cmd::ReleaseSharedSurface = decode(p)?;
        if !self.objects.release_shared(c.share_token) {
            tracing::debug!(
                token = c.share_token,
                "aerogpu: RELEASE of an unknown share token"
            );
        }
        Ok(Command::ReleaseSharedSurface {
            share_token: c.share_token,
        })
    }
}
