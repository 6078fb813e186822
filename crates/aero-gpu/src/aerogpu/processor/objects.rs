//! The global handle namespace: resources (with shared-surface aliases and tokens),
//! shaders and input layouts.
//!
//! Every handle holds one reference to its resource. IMPORT adds an alias handle (one
//! more reference); DESTROY of any handle drops one; the last one frees the resource and
//! forgets its share tokens. A token maps to exactly one live resource.

use std::collections::BTreeMap;

use aero_protocol::Handle;
use aero_protocol::cmd::ShaderStage;

use super::command::{ResourceDesc, ResourceId};
use crate::aerogpu::error::PacketError;

/// Where a guest-backed resource lives: stable across submissions (the GPA is resolved
/// per submission through the allocation table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuestBacking {
    pub alloc_id: u32,
    pub offset_bytes: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    pub desc: ResourceDesc,
    /// Bytes of guest backing the resource covers (see `aerogpu_cmd.h` for the layout).
    pub size_bytes: u64,
    pub backing: Option<GuestBacking>,
    refs: u32,
    tokens: Vec<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Object {
    Resource(ResourceId),
    Shader(ShaderStage),
    InputLayout,
}

#[derive(Clone, Debug, Default)]
pub struct ObjectTable {
    handles: BTreeMap<Handle, Object>,
    resources: BTreeMap<ResourceId, Resource>,
    shared: BTreeMap<u64, ResourceId>,
    next_resource_id: ResourceId,
}

/// Result of a CREATE_* on a resource handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Created {
    pub resource: ResourceId,
    pub rebind: bool,
}

impl ObjectTable {
    pub fn handle_count(&self) -> usize {
        self.handles.len()
    }

    pub fn resource_count(&self) -> usize {
        self.resources.len()
    }

    pub fn shared_token_count(&self) -> usize {
        self.shared.len()
    }

    /// References held on the resource behind `handle` (handles + aliases).
    pub fn refcount(&self, handle: Handle) -> Option<u32> {
        let (_, r) = self.resource(handle).ok()?;
        Some(r.refs)
    }

    pub fn resource(&self, handle: Handle) -> Result<(ResourceId, &Resource), PacketError> {
        match self.handles.get(&handle) {
            Some(Object::Resource(id)) => self
                .resources
                .get(id)
                .map(|r| (*id, r))
                .ok_or(PacketError::UnknownHandle(handle)),
            Some(_) => Err(PacketError::WrongKind {
                handle,
                expected: "resource",
            }),
            None if handle == 0 => Err(PacketError::ZeroHandle),
            None => Err(PacketError::UnknownHandle(handle)),
        }
    }

    /// `None` for handle 0 (unbind), otherwise the resource id if `handle` is a resource.
    pub fn optional_resource(
        &self,
        handle: Handle,
    ) -> Result<Option<(ResourceId, &Resource)>, PacketError> {
        if handle == 0 {
            return Ok(None);
        }
        self.resource(handle).map(Some)
    }

    /// Checks that `handle` is free or (for the rebind rule) names a resource; returns
    /// the existing resource if any.
    pub fn existing_for_create(
        &self,
        handle: Handle,
    ) -> Result<Option<(ResourceId, &Resource)>, PacketError> {
        if handle == 0 {
            return Err(PacketError::ZeroHandle);
        }
        match self.handles.get(&handle) {
            None => Ok(None),
            Some(Object::Resource(_)) => self.resource(handle).map(Some),
            Some(_) => Err(PacketError::HandleInUse(handle)),
        }
    }

    /// CREATE_BUFFER / CREATE_TEXTURE2D (seed 002 rule 5): a new resource, or a rebind
    /// of the backing when every immutable property matches.
    pub fn create_resource(
        &mut self,
        handle: Handle,
        desc: ResourceDesc,
        size_bytes: u64,
        backing: Option<GuestBacking>,
        max_handles: usize,
    ) -> Result<Created, PacketError> {
        if let Some((id, existing)) = self.existing_for_create(handle)? {
            if existing.desc != desc {
                return Err(PacketError::RebindMismatch(handle));
            }
            if let Some(r) = self.resources.get_mut(&id) {
                r.backing = backing;
            }
            return Ok(Created {
                resource: id,
                rebind: true,
            });
        }
        self.check_capacity(max_handles)?;
        self.next_resource_id += 1;
        let id = self.next_resource_id;
        self.resources.insert(
            id,
            Resource {
                desc,
                size_bytes,
                backing,
                refs: 1,
                tokens: Vec::new(),
            },
        );
        self.handles.insert(handle, Object::Resource(id));
        Ok(Created {
            resource: id,
            rebind: false,
        })
    }

    fn check_capacity(&self, max_handles: usize) -> Result<(), PacketError> {
        if self.handles.len() >= max_handles {
            return Err(PacketError::Limit {
                what: "live handles",
            });
        }
        Ok(())
    }

    fn check_free(&self, handle: Handle) -> Result<(), PacketError> {
        if handle == 0 {
            return Err(PacketError::ZeroHandle);
        }
        if self.handles.contains_key(&handle) {
            return Err(PacketError::HandleInUse(handle));
        }
        Ok(())
    }

    /// Drops `handle`'s reference; returns the resource and whether it was freed.
    pub fn destroy_resource(&mut self, handle: Handle) -> Result<(ResourceId, bool), PacketError> {
        let (id, _) = self.resource(handle)?;
        self.handles.remove(&handle);
        let Some(r) = self.resources.get_mut(&id) else {
            return Ok((id, false));
        };
        r.refs = r.refs.saturating_sub(1);
        if r.refs > 0 {
            return Ok((id, false));
        }
        if let Some(r) = self.resources.remove(&id) {
            for token in r.tokens {
                self.shared.remove(&token);
            }
        }
        Ok((id, true))
    }

    pub fn export_shared(&mut self, handle: Handle, token: u64) -> Result<ResourceId, PacketError> {
        if token == 0 {
            return Err(PacketError::ZeroShareToken);
        }
        let (id, _) = self.resource(handle)?;
        match self.shared.get(&token) {
            Some(&existing) if existing == id => return Ok(id),
            Some(_) => return Err(PacketError::ShareTokenCollision(token)),
            None => {}
        }
        self.shared.insert(token, id);
        if let Some(r) = self.resources.get_mut(&id) {
            r.tokens.push(token);
        }
        Ok(id)
    }

    pub fn import_shared(
        &mut self,
        out_handle: Handle,
        token: u64,
        max_handles: usize,
    ) -> Result<ResourceId, PacketError> {
        if token == 0 {
            return Err(PacketError::ZeroShareToken);
        }
        let id = *self
            .shared
            .get(&token)
            .ok_or(PacketError::UnknownShareToken(token))?;
        self.check_free(out_handle)?;
        self.check_capacity(max_handles)?;
        let r = self
            .resources
            .get_mut(&id)
            .ok_or(PacketError::UnknownShareToken(token))?;
        r.refs = r.refs.saturating_add(1);
        self.handles.insert(out_handle, Object::Resource(id));
        Ok(id)
    }

    /// Forgets the token (unknown tokens are fine: the KMD sends this best-effort).
    pub fn release_shared(&mut self, token: u64) -> bool {
        let Some(id) = self.shared.remove(&token) else {
            return false;
        };
        if let Some(r) = self.resources.get_mut(&id) {
            r.tokens.retain(|&t| t != token);
        }
        true
    }

    pub fn shared_resource(&self, token: u64) -> Option<ResourceId> {
        self.shared.get(&token).copied()
    }

    pub fn create_shader(
        &mut self,
        handle: Handle,
        stage: ShaderStage,
        max_handles: usize,
    ) -> Result<(), PacketError> {
        self.check_free(handle)?;
        self.check_capacity(max_handles)?;
        self.handles.insert(handle, Object::Shader(stage));
        Ok(())
    }

    pub fn shader_stage(&self, handle: Handle) -> Result<ShaderStage, PacketError> {
        match self.handles.get(&handle) {
            Some(Object::Shader(stage)) => Ok(*stage),
            Some(_) => Err(PacketError::WrongKind {
                handle,
                expected: "shader",
            }),
            None => Err(PacketError::UnknownHandle(handle)),
        }
    }

    pub fn destroy_shader(&mut self, handle: Handle) -> Result<(), PacketError> {
        self.shader_stage(handle)?;
        self.handles.remove(&handle);
        Ok(())
    }

    pub fn create_input_layout(
        &mut self,
        handle: Handle,
        max_handles: usize,
    ) -> Result<(), PacketError> {
        self.check_free(handle)?;
        self.check_capacity(max_handles)?;
        self.handles.insert(handle, Object::InputLayout);
        Ok(())
    }

    pub fn check_input_layout(&self, handle: Handle) -> Result<(), PacketError> {
        match self.handles.get(&handle) {
            Some(Object::InputLayout) => Ok(()),
            Some(_) => Err(PacketError::WrongKind {
                handle,
                expected: "input layout",
            }),
            None => Err(PacketError::UnknownHandle(handle)),
        }
    }

    pub fn destroy_input_layout(&mut self, handle: Handle) -> Result<(), PacketError> {
        self.check_input_layout(handle)?;
        self.handles.remove(&handle);
        Ok(())
    }

    pub fn clear(&mut self) {
        self.handles.clear();
        self.resources.clear();
        self.shared.clear();
    }
}
