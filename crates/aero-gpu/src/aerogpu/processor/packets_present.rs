//! Presentation and shared-surface packets (seed 003).

use aero_protocol::cmd;

use super::{Command, CommandProcessor, PacketCtx, ResolvedBacking, ResourceId, decode};
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
    /// The presented surface: render target 0 of the submitting context, with its backing
    /// when this submission lists it (a present never fails for want of it: the guest may
    /// present a surface it has not touched since, see the PRESENT rule in aerogpu_cmd.h).
    fn present_target(&self, ctx: &PacketCtx<'_>) -> (Option<ResourceId>, Option<ResolvedBacking>) {
        let Ok(Some((id, r))) = self
            .objects
            .optional_resource(self.bindings.render_targets[0])
        else {
            return (None, None);
        };
        let backing = r
            .backing
            .and_then(|b| super::packets_resource::resolve(ctx.table, b, r.size_bytes).ok());
        (Some(id), backing)
    }

    pub(super) fn present<'a>(
        &mut self,
        p: &'a [u8],
        ctx: &PacketCtx<'_>,
    ) -> Result<Command<'a>, PacketError> {
        let c: cmd::Present = decode(p)?;
        check_scanout(c.scanout_id)?;
        let (target, target_backing) = self.present_target(ctx);
        Ok(Command::Present {
            scanout_id: c.scanout_id,
            flags: c.flags,
            d3d9_present_flags: None,
            target,
            target_backing,
        })
    }

    pub(super) fn present_ex<'a>(
        &mut self,
        p: &'a [u8],
        ctx: &PacketCtx<'_>,
    ) -> Result<Command<'a>, PacketError> {
        let c: cmd::PresentEx = decode(p)?;
        check_scanout(c.scanout_id)?;
        let (target, target_backing) = self.present_target(ctx);
        Ok(Command::Present {
            scanout_id: c.scanout_id,
            flags: c.flags,
            d3d9_present_flags: Some(c.d3d9_present_flags),
            target,
            target_backing,
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
