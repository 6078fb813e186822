//! Command processor rules (seeds 002/003), positive and negative.

use aero_protocol::Wire;
use aero_protocol::cmd::{self, Opcode, ShaderStage};
use aero_protocol::pci::{ErrorCode, Format};
use aero_protocol::ring::{ALLOC_FLAG_READONLY, AllocEntry};
use aero_protocol::writer::{CmdStreamWriter, encode_alloc_table};

use super::stream::entry;
use crate::aerogpu::processor::{Command, ResolvedBacking, ResourceId};
use crate::aerogpu::{
    AllocTable, CommandProcessor, Executor, GuestMemory, Limits, PacketError, SubmitError,
    VecMemory,
};

const TEX: u32 = Format::B8G8R8A8Unorm as u32;
const USAGE_VB: u32 = cmd::RESOURCE_USAGE_VERTEX_BUFFER;

#[derive(Default)]
struct Recorder {
    commands: usize,
    created: Vec<(ResourceId, Option<ResolvedBacking>, bool)>,
    destroyed: Vec<(ResourceId, bool)>,
    dirty: Vec<Option<ResolvedBacking>>,
    writebacks: Vec<Option<ResolvedBacking>>,
    imported: Vec<ResourceId>,
    uploads: Vec<Vec<u8>>,
    clear_rects: Vec<(u32, Vec<cmd::ClearRect>)>,
    unknown_seen: bool,
    fail_on_flush: bool,
}

impl Executor for Recorder {
    fn execute(&mut self, c: &Command<'_>, _mem: &mut dyn GuestMemory) -> Result<(), String> {
        self.commands += 1;
        match *c {
            Command::CreateResource {
                resource,
                backing,
                rebind,
                ..
            } => self.created.push((resource, backing, rebind)),
            Command::DestroyResource { resource, freed } => self.destroyed.push((resource, freed)),
            Command::ResourceDirtyRange { backing, .. } => self.dirty.push(backing),
            Command::CopyBuffer { writeback, .. } | Command::CopyTexture2d { writeback, .. } => {
                self.writebacks.push(writeback)
            }
            Command::ImportSharedSurface { resource, .. } => self.imported.push(resource),
            Command::UploadResource { data, .. } => self.uploads.push(data.to_vec()),
            Command::ClearRects { clear, rects } => self.clear_rects.push((
                clear.flags,
                crate::aerogpu::clear_rect_records(rects).collect(),
            )),
            Command::Flush if self.fail_on_flush => return Err("device lost".into()),
            _ => {}
        }
        Ok(())
    }
}

struct Harness {
    p: CommandProcessor,
    mem: VecMemory,
    table: AllocTable,
    exec: Recorder,
}

impl Harness {
    fn new() -> Self {
        Self::with_limits(Limits::default())
    }

    fn with_limits(limits: Limits) -> Self {
        Harness {
            p: CommandProcessor::new(limits),
            mem: VecMemory::new(1 << 20),
            table: AllocTable::new(),
            exec: Recorder::default(),
        }
    }

    fn set_table(&mut self, entries: &[AllocEntry]) {
        self.table
            .parse(&encode_alloc_table(entries), &self.mem)
            .unwrap();
    }

    fn run(&mut self, w: CmdStreamWriter) -> Result<crate::aerogpu::StreamSummary, SubmitError> {
        let stream = w.finish();
        self.run_bytes(&stream)
    }

    fn run_bytes(&mut self, stream: &[u8]) -> Result<crate::aerogpu::StreamSummary, SubmitError> {
        self.p
            .process(stream, &self.table, &mut self.mem, &mut self.exec)
    }

    /// Runs and returns the packet error kind.
    fn packet_err(&mut self, w: CmdStreamWriter) -> PacketError {
        match self.run(w) {
            Err(SubmitError::Packet { kind, .. }) => kind,
            other => panic!("expected a packet error, got {other:?}"),
        }
    }
}

fn one<F: FnOnce(&mut CmdStreamWriter)>(f: F) -> CmdStreamWriter {
    let mut w = CmdStreamWriter::new();
    f(&mut w);
    w
}

// ---- backing_alloc_id (seed 002) --------------------------------------------------------

#[test]
fn backing_resolves_by_alloc_id_with_offset() {
    let mut h = Harness::new();
    h.set_table(&[entry(7, 0x8000, 0x1000, 0), entry(3, 0x2000, 0x100, 0)]);
    h.run(one(|w| {
        w.create_buffer(1, USAGE_VB, 0x100, 7, 0x40);
    }))
    .unwrap();
    let (_, backing, rebind) = h.exec.created[0];
    assert!(!rebind);
    assert_eq!(
        backing,
        Some(ResolvedBacking {
            alloc_id: 7,
            gpa: 0x8040,
            size_bytes: 0x100,
            readonly: false
        })
    );

    // A later submission with a reordered table at different GPAs: resolution follows
    // the id, never the position.
    h.set_table(&[entry(3, 0x2000, 0x100, 0), entry(7, 0x9000, 0x1000, 0)]);
    let dirty = cmd::ResourceDirtyRange {
        resource_handle: 1,
        offset_bytes: 0x10,
        size_bytes: 0x20,
        ..Default::default()
    };
    h.run(one(|w| {
        w.push(Opcode::ResourceDirtyRange, &dirty, &[]);
    }))
    .unwrap();
    assert_eq!(h.exec.dirty[0].unwrap().gpa, 0x9040);
}

#[test]
fn missing_alloc_id_is_a_validation_error() {
    let mut h = Harness::new();
    h.set_table(&[entry(1, 0x1000, 0x1000, 0)]);
    let e = h.packet_err(one(|w| {
        w.create_buffer(1, USAGE_VB, 0x10, 2, 0);
    }));
    assert_eq!(e, PacketError::MissingAllocId(2));
    assert_eq!(e.code(), ErrorCode::AllocTable);
    assert_eq!(
        h.p.objects().handle_count(),
        0,
        "a failed CREATE leaves nothing behind"
    );

    // Dirty range on a guest-backed resource whose alloc is missing from this submission.
    h.run(one(|w| {
        w.create_buffer(1, USAGE_VB, 0x10, 1, 0);
    }))
    .unwrap();
    h.set_table(&[]);
    let dirty = cmd::ResourceDirtyRange {
        resource_handle: 1,
        offset_bytes: 0,
        size_bytes: 4,
        ..Default::default()
    };
    assert_eq!(
        h.packet_err(one(|w| {
            w.push(Opcode::ResourceDirtyRange, &dirty, &[]);
        })),
        PacketError::MissingAllocId(1)
    );
}

#[test]
fn backing_offset_plus_size_must_fit_the_allocation() {
    let mut h = Harness::new();
    h.set_table(&[entry(1, 0x1000, 0x100, 0)]);
    h.run(one(|w| {
        w.create_buffer(1, USAGE_VB, 0x80, 1, 0x80);
    }))
    .unwrap();
    let e = h.packet_err(one(|w| {
        w.create_buffer(2, USAGE_VB, 0x80, 1, 0x81);
    }));
    assert!(matches!(
        e,
        PacketError::BackingOutOfBounds {
            alloc_id: 1,
            offset: 0x81,
            size: 0x80,
            alloc_size: 0x100
        }
    ));
    assert_eq!(e.code(), ErrorCode::Oob);
    // Texture: 16x16 BGRA = 1024 bytes does not fit in 0x100.
    let e = h.packet_err(one(|w| {
        w.create_texture2d(3, TEX, 16, 16, 1);
    }));
    assert!(matches!(
        e,
        PacketError::BackingOutOfBounds { size: 1024, .. }
    ));
}

#[test]
fn create_on_existing_handle_rebinds_only_if_immutables_match() {
    let mut h = Harness::new();
    h.set_table(&[entry(1, 0x1000, 0x1000, 0), entry(2, 0x4000, 0x1000, 0)]);
    h.run(one(|w| {
        w.create_buffer(5, USAGE_VB, 0x100, 1, 0);
        w.create_buffer(5, USAGE_VB, 0x100, 2, 0x10);
    }))
    .unwrap();
    let first = h.exec.created[0].0;
    assert_eq!(h.exec.created[1].0, first, "rebind keeps the resource");
    assert!(h.exec.created[1].2);
    assert_eq!(h.exec.created[1].1.unwrap().gpa, 0x4010);

    assert_eq!(
        h.packet_err(one(|w| {
            w.create_buffer(5, USAGE_VB, 0x200, 2, 0);
        })),
        PacketError::RebindMismatch(5)
    );
    assert_eq!(
        h.packet_err(one(|w| {
            w.create_buffer(5, cmd::RESOURCE_USAGE_INDEX_BUFFER, 0x100, 2, 0);
        })),
        PacketError::RebindMismatch(5)
    );
    // A buffer handle cannot become a texture.
    assert_eq!(
        h.packet_err(one(|w| {
            w.create_texture2d(5, TEX, 4, 4, 0);
        })),
        PacketError::RebindMismatch(5)
    );

    // Textures: same properties rebind, a different format or row pitch does not.
    h.run(one(|w| {
        w.create_texture2d(6, TEX, 8, 8, 1);
        w.create_texture2d(6, TEX, 8, 8, 2);
    }))
    .unwrap();
    assert!(h.exec.created.last().unwrap().2);
    assert_eq!(
        h.packet_err(one(|w| {
            w.create_texture2d(6, Format::R8G8B8A8Unorm as u32, 8, 8, 2);
        })),
        PacketError::RebindMismatch(6)
    );
    let mut pitched = cmd::CreateTexture2d {
        texture_handle: 6,
        usage_flags: cmd::RESOURCE_USAGE_TEXTURE | cmd::RESOURCE_USAGE_RENDER_TARGET,
        format: TEX,
        width: 8,
        height: 8,
        mip_levels: 1,
        array_layers: 1,
        row_pitch_bytes: 64,
        backing_alloc_id: 2,
        ..Default::default()
    };
    assert_eq!(
        h.packet_err(one(|w| {
            w.push(Opcode::CreateTexture2d, &pitched, &[]);
        })),
        PacketError::RebindMismatch(6)
    );
    // A shader handle is not a resource.
    pitched.texture_handle = 0;
    assert_eq!(
        h.packet_err(one(|w| {
            w.push(Opcode::CreateTexture2d, &pitched, &[]);
        })),
        PacketError::ZeroHandle
    );
}

#[test]
fn readonly_allocations_never_receive_writeback() {
    let mut h = Harness::new();
    h.set_table(&[
        entry(1, 0x1000, 0x1000, 0),
        entry(2, 0x4000, 0x1000, ALLOC_FLAG_READONLY),
    ]);
    h.run(one(|w| {
        w.create_buffer(1, USAGE_VB, 0x100, 1, 0);
        w.create_buffer(2, USAGE_VB, 0x100, 2, 0);
        w.create_buffer(3, USAGE_VB, 0x100, 0, 0);
    }))
    .unwrap();
    let copy = |dst, flags| cmd::CopyBuffer {
        dst_buffer: dst,
        src_buffer: 1,
        size_bytes: 0x40,
        flags,
        ..Default::default()
    };
    let wb = cmd::COPY_FLAG_WRITEBACK_DST;
    let e = h.packet_err(one(|w| {
        w.push(Opcode::CopyBuffer, &copy(2, wb), &[]);
    }));
    assert_eq!(e, PacketError::ReadonlyWriteback(2));
    assert_eq!(e.code(), ErrorCode::Readonly);
    // Without writeback a READONLY destination is fine; writeback into a writable one too.
    h.run(one(|w| {
        w.push(Opcode::CopyBuffer, &copy(2, 0), &[]);
        w.push(Opcode::CopyBuffer, &copy(1, wb), &[]);
    }))
    .unwrap();
    assert_eq!(h.exec.writebacks[0], None);
    assert_eq!(h.exec.writebacks[1].unwrap().gpa, 0x1000);
    // Host-allocated destinations have nothing to write back into.
    assert_eq!(
        h.packet_err(one(|w| {
            w.push(Opcode::CopyBuffer, &copy(3, wb), &[]);
        })),
        PacketError::NotGuestBacked(3)
    );
    // The same allocation, READONLY in a later submission, is rejected there.
    h.set_table(&[entry(1, 0x1000, 0x1000, ALLOC_FLAG_READONLY)]);
    assert_eq!(
        h.packet_err(one(|w| {
            w.push(Opcode::CopyBuffer, &copy(1, wb), &[]);
        })),
        PacketError::ReadonlyWriteback(1)
    );
    // Copy ranges are bounds-checked.
    let oob = cmd::CopyBuffer {
        dst_buffer: 3,
        src_buffer: 1,
        src_offset_bytes: 0xF0,
        size_bytes: 0x20,
        ..Default::default()
    };
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::CopyBuffer, &oob, &[]);
        })),
        PacketError::RangeOutOfBounds { .. }
    ));
}

#[test]
fn copy_texture_checks_subresources_and_writeback() {
    let mut h = Harness::new();
    h.set_table(&[
        entry(1, 0x1000, 0x10000, 0),
        entry(2, 0x20000, 0x10000, ALLOC_FLAG_READONLY),
    ]);
    h.run(one(|w| {
        w.create_texture2d(1, TEX, 16, 16, 1);
        w.create_texture2d(2, TEX, 16, 16, 2);
        w.create_buffer(3, USAGE_VB, 64, 0, 0);
    }))
    .unwrap();
    let region = |dst, flags| cmd::CopyTexture2d {
        dst_texture: dst,
        src_texture: 1,
        width: 16,
        height: 16,
        flags,
        ..Default::default()
    };
    h.run(one(|w| {
        w.push(
            Opcode::CopyTexture2d,
            &region(1, cmd::COPY_FLAG_WRITEBACK_DST),
            &[],
        );
    }))
    .unwrap();
    assert_eq!(h.exec.writebacks[0].unwrap().size_bytes, 1024);
    assert_eq!(
        h.packet_err(one(|w| {
            w.push(
                Opcode::CopyTexture2d,
                &region(2, cmd::COPY_FLAG_WRITEBACK_DST),
                &[],
            );
        })),
        PacketError::ReadonlyWriteback(2)
    );
    let mut big = region(2, 0);
    big.dst_x = 1;
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::CopyTexture2d, &big, &[]);
        })),
        PacketError::RangeOutOfBounds { .. }
    ));
    let mut mip = region(2, 0);
    mip.src_mip_level = 1;
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::CopyTexture2d, &mip, &[]);
        })),
        PacketError::InvalidValue { .. }
    ));
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::CopyTexture2d, &region(3, 0), &[]);
        })),
        PacketError::WrongKind { handle: 3, .. }
    ));
}

// ---- shared surfaces (seed 003) -------------------------------------------------------

#[test]
fn shared_surface_export_import_refcount_and_free() {
    let mut h = Harness::new();
    let token = 0x1234_5678_9ABC_DEF0;
    h.run(one(|w| {
        w.create_texture2d(10, TEX, 64, 64, 0);
        w.export_shared(10, token);
        w.export_shared(10, token); // same pair again: no-op
        w.import_shared(20, token);
        w.import_shared(21, token);
    }))
    .unwrap();
    let id = h.exec.created[0].0;
    assert_eq!(
        h.exec.imported,
        [id, id],
        "aliases resolve to the exported resource"
    );
    assert_eq!(h.p.objects().refcount(10), Some(3));
    assert_eq!(h.p.objects().shared_resource(token), Some(id));

    h.run(one(|w| {
        w.destroy_resource(10);
        w.destroy_resource(20);
    }))
    .unwrap();
    assert_eq!(h.exec.destroyed, [(id, false), (id, false)]);
    assert_eq!(h.p.objects().refcount(21), Some(1));
    assert_eq!(
        h.p.objects().shared_resource(token),
        Some(id),
        "token lives while a handle does"
    );
    // A new import still works through the remaining reference.
    h.run(one(|w| {
        w.import_shared(22, token);
    }))
    .unwrap();
    h.run(one(|w| {
        w.destroy_resource(21);
        w.destroy_resource(22);
    }))
    .unwrap();
    assert_eq!(
        h.exec.destroyed.last(),
        Some(&(id, true)),
        "the last reference frees"
    );
    assert_eq!(h.p.objects().resource_count(), 0);
    assert_eq!(
        h.p.objects().shared_token_count(),
        0,
        "freeing drops the token"
    );
    assert_eq!(
        h.packet_err(one(|w| {
            w.import_shared(23, token);
        })),
        PacketError::UnknownShareToken(token)
    );
    assert_eq!(
        h.packet_err(one(|w| {
            w.destroy_resource(22);
        })),
        PacketError::UnknownHandle(22)
    );
}

#[test]
fn shared_surface_collisions_and_bad_tokens_are_rejected() {
    let mut h = Harness::new();
    h.run(one(|w| {
        w.create_texture2d(1, TEX, 8, 8, 0);
        w.create_texture2d(2, TEX, 8, 8, 0);
        w.export_shared(1, 77);
    }))
    .unwrap();
    assert_eq!(
        h.packet_err(one(|w| {
            w.export_shared(2, 77);
        })),
        PacketError::ShareTokenCollision(77)
    );
    assert_eq!(
        h.packet_err(one(|w| {
            w.export_shared(2, 0);
        })),
        PacketError::ZeroShareToken
    );
    assert_eq!(
        h.packet_err(one(|w| {
            w.import_shared(3, 0);
        })),
        PacketError::ZeroShareToken
    );
    assert_eq!(
        h.packet_err(one(|w| {
            w.import_shared(2, 77);
        })),
        PacketError::HandleInUse(2)
    );
    assert_eq!(
        h.packet_err(one(|w| {
            w.import_shared(0, 77);
        })),
        PacketError::ZeroHandle
    );
    assert_eq!(
        h.packet_err(one(|w| {
            w.export_shared(9, 5);
        })),
        PacketError::UnknownHandle(9)
    );

    // RELEASE drops the mapping only; the token can then name another resource.
    h.run(one(|w| {
        w.release_shared(77);
        w.release_shared(0xDEAD); // unknown: ignored
    }))
    .unwrap();
    assert_eq!(h.p.objects().refcount(1), Some(1));
    assert_eq!(
        h.packet_err(one(|w| {
            w.import_shared(3, 77);
        })),
        PacketError::UnknownShareToken(77)
    );
    h.run(one(|w| {
        w.export_shared(2, 77);
    }))
    .unwrap();
    let id2 = h.exec.created[1].0;
    assert_eq!(h.p.objects().shared_resource(77), Some(id2));
}

// ---- handles, namespaces, limits ----------------------------------------------------------

fn vs_tokens() -> Vec<u8> {
    // vs_2_0, dcl_position v0, END
    [
        0xFFFE_0200u32,
        0x0200_001F,
        0x8000_0000,
        0x900F_0000,
        0x0000_FFFF,
    ]
    .iter()
    .flat_map(|t| t.to_le_bytes())
    .collect()
}

fn ps_tokens() -> Vec<u8> {
    [0xFFFF_0300u32, 0x0000_FFFF]
        .iter()
        .flat_map(|t| t.to_le_bytes())
        .collect()
}

fn create_shader(w: &mut CmdStreamWriter, handle: u32, stage: ShaderStage, tokens: &[u8]) {
    let c = cmd::CreateShader {
        shader_handle: handle,
        stage: stage as u32,
        bytecode_size_bytes: tokens.len() as u32,
        ..Default::default()
    };
    w.push(Opcode::CreateShader, &c, tokens);
}

#[test]
fn one_global_handle_namespace() {
    let mut h = Harness::new();
    h.run(one(|w| {
        w.create_buffer(1, USAGE_VB, 16, 0, 0);
        create_shader(w, 2, ShaderStage::Vertex, &vs_tokens());
    }))
    .unwrap();
    assert_eq!(
        h.packet_err(one(|w| {
            create_shader(w, 1, ShaderStage::Vertex, &vs_tokens());
        })),
        PacketError::HandleInUse(1)
    );
    assert_eq!(
        h.packet_err(one(|w| {
            w.create_buffer(2, USAGE_VB, 16, 0, 0);
        })),
        PacketError::HandleInUse(2)
    );
    let layout = cmd::CreateInputLayout {
        input_layout_handle: 2,
        blob_size_bytes: 8,
        ..Default::default()
    };
    let end = [0xFF, 0, 0, 0, 17, 0, 0, 0];
    assert_eq!(
        h.packet_err(one(|w| {
            w.push(Opcode::CreateInputLayout, &layout, &end);
        })),
        PacketError::HandleInUse(2)
    );
    assert!(matches!(
        h.packet_err(one(|w| {
            w.destroy_resource(2);
        })),
        PacketError::WrongKind { handle: 2, .. }
    ));
}

#[test]
fn size_and_count_caps() {
    let mut h = Harness::with_limits(Limits {
        max_handles: 3,
        max_buffer_bytes: 1 << 20,
        max_texture_bytes: 1 << 20,
    });
    assert_eq!(
        h.packet_err(one(|w| {
            w.create_buffer(1, USAGE_VB, (1 << 20) + 1, 0, 0);
        })),
        PacketError::Limit {
            what: "buffer size"
        }
    );
    assert_eq!(
        h.packet_err(one(|w| {
            w.create_texture2d(1, TEX, 1024, 1024, 0);
        })),
        PacketError::Limit {
            what: "texture size"
        }
    );
    assert!(matches!(
        h.packet_err(one(|w| {
            w.create_texture2d(1, TEX, 16385, 1, 0);
        })),
        PacketError::InvalidValue { .. }
    ));
    assert!(matches!(
        h.packet_err(one(|w| {
            w.create_texture2d(1, 999, 4, 4, 0);
        })),
        PacketError::InvalidValue { .. }
    ));
    assert!(matches!(
        h.packet_err(one(|w| {
            w.create_buffer(1, USAGE_VB, 0, 0, 0);
        })),
        PacketError::InvalidValue { .. }
    ));
    let e = h.packet_err(one(|w| {
        for i in 1..=4 {
            w.create_buffer(i, USAGE_VB, 16, 0, 0);
        }
    }));
    assert_eq!(
        e,
        PacketError::Limit {
            what: "live handles"
        }
    );
    assert_eq!(e.code(), ErrorCode::ResourceLimit);
    assert_eq!(h.p.objects().handle_count(), 3);
    // Destroying makes room again.
    h.run(one(|w| {
        w.destroy_resource(1);
        w.create_buffer(9, USAGE_VB, 16, 0, 0);
    }))
    .unwrap();
}

#[test]
fn texture_layouts_and_their_sizes() {
    use crate::aerogpu::processor::TextureDesc;
    let size = |format, width, height, mip_levels, array_layers, row_pitch_bytes, flags| {
        crate::aerogpu::processor::texture_size(&TextureDesc {
            format,
            width,
            height,
            mip_levels,
            array_layers,
            row_pitch_bytes,
            usage_flags: 0,
            flags,
            depth: 1,
        })
    };
    assert_eq!(size(Format::B8G8R8A8Unorm, 16, 16, 1, 1, 0, 0), Ok(1024));
    assert_eq!(size(Format::B8G8R8A8Unorm, 16, 16, 1, 1, 128, 0), Ok(2048));
    assert!(
        size(Format::B8G8R8A8Unorm, 16, 16, 1, 1, 32, 0).is_err(),
        "pitch below a row"
    );
    // 4x4 mip chain: 64 + 16 + 4 bytes, times 6 cube faces.
    assert_eq!(
        size(Format::B8G8R8A8Unorm, 4, 4, 3, 6, 0, cmd::TEXTURE_FLAG_CUBE),
        Ok(6 * 84)
    );
    assert!(
        size(Format::B8G8R8A8Unorm, 4, 4, 4, 1, 0, 0).is_err(),
        "more mips than the chain has"
    );
    assert!(
        size(Format::B8G8R8A8Unorm, 4, 8, 1, 6, 0, cmd::TEXTURE_FLAG_CUBE).is_err(),
        "cube faces are square"
    );
    // BC1: 4x4 blocks of 8 bytes; 5x5 needs 2x2 blocks.
    assert_eq!(size(Format::Bc1Unorm, 5, 5, 1, 1, 0, 0), Ok(32));
    assert_eq!(size(Format::Bc3Unorm, 8, 8, 2, 1, 0, 0), Ok(64 + 16));
}

#[test]
fn volume_layouts_and_their_bounds() {
    use crate::aerogpu::processor::TextureDesc;
    let volume = |width, height, depth, mip_levels, array_layers, flags| {
        crate::aerogpu::processor::texture_size(&TextureDesc {
            format: Format::B8G8R8A8Unorm,
            width,
            height,
            mip_levels,
            array_layers,
            row_pitch_bytes: 0,
            usage_flags: 0,
            flags: flags | cmd::TEXTURE_FLAG_VOLUME,
            depth,
        })
    };
    // 4x4x2: 64 * 2 + 16 * 1 + 4 * 1 (mip 2 is 1x1x1).
    assert_eq!(volume(4, 4, 2, 3, 1, 0), Ok(148));
    // The depth counts for the mip chain: 1x1x8 has 4 mips.
    assert_eq!(volume(1, 1, 8, 4, 1, 0), Ok(4 * (8 + 4 + 2 + 1)));
    assert!(
        volume(1, 1, 8, 5, 1, 0).is_err(),
        "more mips than the chain has"
    );
    assert!(volume(4, 4, 0, 1, 1, 0).is_err(), "no slices");
    assert!(
        volume(4, 4, cmd::MAX_VOLUME_DEPTH + 1, 1, 1, 0).is_err(),
        "deeper than the limit"
    );
    assert!(volume(4, 4, 2, 1, 2, 0).is_err(), "volume arrays");
    assert!(
        volume(4, 4, 2, 1, 6, cmd::TEXTURE_FLAG_CUBE).is_err(),
        "cube and volume"
    );
    // A 2D texture with a depth is malformed.
    let flat = TextureDesc {
        format: Format::B8G8R8A8Unorm,
        width: 4,
        height: 4,
        mip_levels: 1,
        array_layers: 1,
        row_pitch_bytes: 0,
        usage_flags: 0,
        flags: 0,
        depth: 2,
    };
    assert!(crate::aerogpu::processor::texture_size(&flat).is_err());
}

#[test]
fn texture_stage_states_are_bounded() {
    let mut h = Harness::new();
    let tss = |stage, state| cmd::SetTextureStageState {
        stage,
        state,
        value: 0.5f32.to_bits(),
        ..Default::default()
    };
    h.run(one(|w| {
        w.push(Opcode::SetTextureStageState, &tss(7, 23), &[]);
    }))
    .unwrap();
    assert_eq!(h.exec.commands, 1);
    assert!(
        h.run(one(|w| {
            w.push(Opcode::SetTextureStageState, &tss(8, 7), &[]);
        }))
        .is_err(),
        "stage 8"
    );
    assert!(
        h.run(one(|w| {
            w.push(Opcode::SetTextureStageState, &tss(0, 33), &[]);
        }))
        .is_err(),
        "state 33"
    );
}

// ---- stream framing ---------------------------------------------------------------------

#[test]
fn unknown_opcodes_are_skipped_by_size() {
    let mut h = Harness::new();
    let summary = h
        .run(one(|w| {
            w.push_bare(0x7777, &[1, 2, 3, 4, 5, 6, 7, 8, 9]);
            w.create_buffer(1, USAGE_VB, 16, 0, 0);
        }))
        .unwrap();
    assert_eq!((summary.packets, summary.unknown_packets), (2, 1));
    assert_eq!(
        h.exec.created.len(),
        1,
        "the packet after the unknown one ran"
    );
    assert!(!h.exec.unknown_seen);
}

#[test]
fn longer_packets_from_newer_minor_versions_are_accepted() {
    let mut h = Harness::new();
    let c = cmd::CreateBuffer {
        buffer_handle: 1,
        size_bytes: 32,
        ..Default::default()
    };
    h.run(one(|w| {
        w.push(Opcode::CreateBuffer, &c, &[0xAA; 12]);
    }))
    .unwrap();
    assert_eq!(h.p.objects().handle_count(), 1);
}

#[test]
fn malformed_framing_is_a_decode_error() {
    let mut h = Harness::new();
    let base = one(|w| {
        w.create_buffer(1, USAGE_VB, 16, 0, 0);
    })
    .finish();
    let patch = |off: usize, v: u32| {
        let mut s = base.clone();
        s[off..off + 4].copy_from_slice(&v.to_le_bytes());
        s
    };
    let packet_kind = |h: &mut Harness, s: &[u8]| match h.run_bytes(s) {
        Err(SubmitError::Packet { kind, offset, .. }) => (kind, offset),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        packet_kind(&mut h, &patch(20, 4)),
        (PacketError::BadSize(4), 16)
    );
    assert_eq!(
        packet_kind(&mut h, &patch(20, 42)),
        (PacketError::BadSize(42), 16)
    );
    assert_eq!(
        packet_kind(&mut h, &patch(20, 44)),
        (PacketError::Truncated, 16),
        "runs past the stream end"
    );
    assert_eq!(
        packet_kind(&mut h, &patch(20, u32::MAX - 3)),
        (PacketError::Truncated, 16)
    );
    assert_eq!(
        packet_kind(&mut h, &patch(20, 16)),
        (PacketError::TooShort, 16),
        "shorter than CREATE_BUFFER"
    );
    // A stream ending in half a header.
    let mut tail = base.clone();
    tail.extend_from_slice(&[0, 0, 0, 0]);
    let n = tail.len() as u32;
    tail[8..12].copy_from_slice(&n.to_le_bytes());
    assert_eq!(
        packet_kind(&mut Harness::new(), &tail),
        (PacketError::Truncated, base.len())
    );
    // Stream header problems.
    assert_eq!(
        h.run_bytes(&patch(0, 0)),
        Err(SubmitError::StreamHeader("bad magic"))
    );
    assert_eq!(
        h.run_bytes(&patch(4, 2 << 16)),
        Err(SubmitError::StreamHeader("ABI major mismatch"))
    );
    assert!(matches!(
        h.run_bytes(&patch(8, 1000)),
        Err(SubmitError::StreamHeader(_))
    ));
    assert!(matches!(
        h.run_bytes(&base[..10]),
        Err(SubmitError::StreamHeader(_))
    ));
    // The size in the stream header may shrink the stream (the rest is ignored).
    let shrunk = patch(8, 16);
    assert_eq!(h.run_bytes(&shrunk).unwrap().packets, 0);
    // Nothing of the broken streams was created.
    assert_eq!(h.p.objects().handle_count(), 0);
}

#[test]
fn upload_payload_and_range_checks() {
    let mut h = Harness::new();
    h.run(one(|w| {
        w.create_buffer(1, USAGE_VB, 8, 0, 0);
        w.upload(1, 2, &[9, 8, 7]);
    }))
    .unwrap();
    assert_eq!(h.exec.uploads, [vec![9, 8, 7]]);
    assert!(matches!(
        h.packet_err(one(|w| {
            w.upload(1, 6, &[1, 2, 3]);
        })),
        PacketError::RangeOutOfBounds { .. }
    ));
    let lying = cmd::UploadResource {
        resource_handle: 1,
        size_bytes: 8,
        ..Default::default()
    };
    assert_eq!(
        h.packet_err(one(|w| {
            w.push(Opcode::UploadResource, &lying, &[1, 2, 3, 4]);
        })),
        PacketError::PayloadTruncated
    );
    let huge = cmd::UploadResource {
        resource_handle: 1,
        offset_bytes: u64::MAX,
        size_bytes: 2,
        ..Default::default()
    };
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::UploadResource, &huge, &[0, 0]);
        })),
        PacketError::RangeOutOfBounds { .. }
    ));
}

#[test]
fn shaders_constants_and_input_layouts() {
    let mut h = Harness::new();
    let end = [0xFF, 0, 0, 0, 17, 0, 0, 0];
    let mut decl = vec![0, 0, 0, 0, 2, 0, 0, 0];
    decl.extend_from_slice(&end);
    let layout = cmd::CreateInputLayout {
        input_layout_handle: 3,
        blob_size_bytes: 16,
        ..Default::default()
    };
    h.run(one(|w| {
        create_shader(w, 1, ShaderStage::Vertex, &vs_tokens());
        create_shader(w, 2, ShaderStage::Pixel, &ps_tokens());
        w.push(
            Opcode::BindShaders,
            &cmd::BindShaders {
                vs: 1,
                ps: 2,
                ..Default::default()
            },
            &[],
        );
        w.push(Opcode::CreateInputLayout, &layout, &decl);
        w.push(
            Opcode::SetInputLayout,
            &cmd::SetInputLayout {
                input_layout_handle: 3,
                ..Default::default()
            },
            &[],
        );
        let consts = cmd::SetShaderConstants {
            stage: 0,
            start_register: 254,
            count: 2,
            ..Default::default()
        };
        w.push(Opcode::SetShaderConstantsF, &consts, &[0u8; 32]);
        let bools = cmd::SetShaderConstants {
            stage: 1,
            start_register: 0,
            count: 3,
            ..Default::default()
        };
        w.push(Opcode::SetShaderConstantsB, &bools, &[1u8; 12]);
    }))
    .unwrap();
    assert_eq!(
        (
            h.p.bindings().vs,
            h.p.bindings().ps,
            h.p.bindings().input_layout
        ),
        (1, 2, 3)
    );

    // Stage mismatch, bad version token, missing END.
    assert!(matches!(
        h.packet_err(one(|w| {
            create_shader(w, 9, ShaderStage::Pixel, &vs_tokens());
        })),
        PacketError::InvalidValue { .. }
    ));
    let no_end: Vec<u8> = [0xFFFE_0200u32, 0]
        .iter()
        .flat_map(|t| t.to_le_bytes())
        .collect();
    assert!(matches!(
        h.packet_err(one(|w| {
            create_shader(w, 9, ShaderStage::Vertex, &no_end);
        })),
        PacketError::InvalidValue { .. }
    ));
    assert!(matches!(
        h.packet_err(one(|w| {
            create_shader(w, 9, ShaderStage::Vertex, &vs_tokens()[..6]);
        })),
        PacketError::InvalidValue { .. }
    ));
    // Static flow control on an integer register the protocol does not carry (rep i16).
    let rep_i16: Vec<u8> = [
        0xFFFE_0200u32,
        0x0100_0026,
        0xF0E4_0010,
        0x0000_0027,
        0x0000_FFFF,
    ]
    .iter()
    .flat_map(|t| t.to_le_bytes())
    .collect();
    assert!(matches!(
        h.packet_err(one(|w| {
            create_shader(w, 9, ShaderStage::Vertex, &rep_i16);
        })),
        PacketError::InvalidValue {
            what: "D3D9 int/bool constant register",
            value: 16
        }
    ));
    // Binding a pixel shader as the vertex shader.
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(
                Opcode::BindShaders,
                &cmd::BindShaders {
                    vs: 2,
                    ps: 0,
                    ..Default::default()
                },
                &[],
            );
        })),
        PacketError::WrongKind { handle: 2, .. }
    ));
    // Constants beyond the register file or with a short payload.
    let over = cmd::SetShaderConstants {
        stage: 0,
        start_register: 255,
        count: 2,
        ..Default::default()
    };
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::SetShaderConstantsF, &over, &[0u8; 32]);
        })),
        PacketError::InvalidValue { .. }
    ));
    let short = cmd::SetShaderConstants {
        stage: 0,
        start_register: 0,
        count: 2,
        ..Default::default()
    };
    assert_eq!(
        h.packet_err(one(|w| {
            w.push(Opcode::SetShaderConstantsI, &short, &[0u8; 16]);
        })),
        PacketError::PayloadTruncated
    );
    let stage = cmd::SetShaderConstants {
        stage: 7,
        count: 0,
        ..Default::default()
    };
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::SetShaderConstantsB, &stage, &[]);
        })),
        PacketError::InvalidValue { .. }
    ));
    // Declarations must end with D3DDECL_END.
    let bad_layout = cmd::CreateInputLayout {
        input_layout_handle: 4,
        blob_size_bytes: 8,
        ..Default::default()
    };
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::CreateInputLayout, &bad_layout, &decl[..8]);
        })),
        PacketError::InvalidValue { .. }
    ));

    // Destroying bound objects unbinds them.
    h.run(one(|w| {
        w.push(
            Opcode::DestroyShader,
            &cmd::DestroyShader {
                shader_handle: 1,
                ..Default::default()
            },
            &[],
        );
        w.push(
            Opcode::DestroyInputLayout,
            &cmd::DestroyInputLayout {
                input_layout_handle: 3,
                ..Default::default()
            },
            &[],
        );
    }))
    .unwrap();
    assert_eq!(
        (
            h.p.bindings().vs,
            h.p.bindings().ps,
            h.p.bindings().input_layout
        ),
        (0, 2, 0)
    );
}

#[test]
fn bindings_draws_and_destroy_scrubbing() {
    let mut h = Harness::new();
    let mut rt = cmd::SetRenderTargets {
        color_count: 1,
        ..Default::default()
    };
    rt.colors[0] = 10;
    let vb = cmd::VertexBufferBinding {
        buffer: 20,
        stride_bytes: 16,
        ..Default::default()
    };
    h.run(one(|w| {
        w.create_texture2d(10, TEX, 32, 32, 0);
        w.create_buffer(20, USAGE_VB, 256, 0, 0);
        w.push(Opcode::SetRenderTargets, &rt, &[]);
        w.push(
            Opcode::SetTexture,
            &cmd::SetTexture {
                shader_stage: 1,
                slot: 3,
                texture: 10,
                ..Default::default()
            },
            &[],
        );
        w.push(
            Opcode::SetVertexBuffers,
            &cmd::SetVertexBuffers {
                start_slot: 2,
                buffer_count: 1,
                ..Default::default()
            },
            &vb.to_bytes(),
        );
        w.push(
            Opcode::SetPrimitiveTopology,
            &cmd::SetPrimitiveTopology {
                topology: 4,
                ..Default::default()
            },
            &[],
        );
        w.clear([0.0, 0.5, 1.0, 1.0]);
        w.draw(3);
    }))
    .unwrap();
    assert_eq!(h.p.bindings().textures[1][3], 10);
    assert_eq!(h.p.bindings().vertex_buffers[2], 20);

    // Wrong kinds, bad slots, topology and enum values.
    let mut rt_buf = rt;
    rt_buf.colors[0] = 20;
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::SetRenderTargets, &rt_buf, &[]);
        })),
        PacketError::WrongKind { handle: 20, .. }
    ));
    let mut stray = rt;
    stray.colors[5] = 10;
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::SetRenderTargets, &stray, &[]);
        })),
        PacketError::InvalidValue { .. }
    ));
    let slot = cmd::SetTexture {
        shader_stage: 0,
        slot: 16,
        texture: 10,
        ..Default::default()
    };
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::SetTexture, &slot, &[]);
        })),
        PacketError::InvalidValue { .. }
    ));
    let vbs = cmd::SetVertexBuffers {
        start_slot: 15,
        buffer_count: 2,
        ..Default::default()
    };
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::SetVertexBuffers, &vbs, &[0u8; 32]);
        })),
        PacketError::InvalidValue { .. }
    ));
    let topo = cmd::SetPrimitiveTopology {
        topology: 0,
        ..Default::default()
    };
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::SetPrimitiveTopology, &topo, &[]);
        })),
        PacketError::InvalidValue { .. }
    ));
    let blend = cmd::SetBlendState {
        src_factor: 99,
        ..Default::default()
    };
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::SetBlendState, &blend, &[]);
        })),
        PacketError::InvalidValue { .. }
    ));
    let raster = cmd::SetRasterizerState {
        cull_mode: 3,
        ..Default::default()
    };
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::SetRasterizerState, &raster, &[]);
        })),
        PacketError::InvalidValue { .. }
    ));
    let depth = cmd::SetDepthStencilState {
        depth_func: 8,
        ..Default::default()
    };
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::SetDepthStencilState, &depth, &[]);
        })),
        PacketError::InvalidValue { .. }
    ));

    // DRAW_INDEXED needs an index buffer.
    let di = cmd::DrawIndexed {
        index_count: 3,
        instance_count: 1,
        ..Default::default()
    };
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::DrawIndexed, &di, &[]);
        })),
        PacketError::InvalidValue { .. }
    ));
    let ib = cmd::SetIndexBuffer {
        buffer: 20,
        format: 0,
        ..Default::default()
    };
    h.run(one(|w| {
        w.push(Opcode::SetIndexBuffer, &ib, &[]);
        w.push(Opcode::DrawIndexed, &di, &[]);
    }))
    .unwrap();

    // Destroying resources unbinds them everywhere.
    h.run(one(|w| {
        w.destroy_resource(10);
        w.destroy_resource(20);
    }))
    .unwrap();
    let b = h.p.bindings();
    assert_eq!(
        (
            b.render_targets[0],
            b.textures[1][3],
            b.vertex_buffers[2],
            b.index_buffer
        ),
        (0, 0, 0, 0)
    );
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::DrawIndexed, &di, &[]);
        })),
        PacketError::InvalidValue { .. }
    ));
}

#[test]
fn clear_rects_carry_their_rectangles_and_are_bounded() {
    let mut h = Harness::new();
    let rect = |x, y, width, height| cmd::ClearRect {
        x,
        y,
        width,
        height,
    };
    let rects_bytes = |rs: &[cmd::ClearRect]| -> Vec<u8> {
        let mut out = vec![0u8; rs.len() * cmd::ClearRect::SIZE];
        for (r, chunk) in rs.iter().zip(out.chunks_exact_mut(cmd::ClearRect::SIZE)) {
            r.write_le(chunk);
        }
        out
    };
    let two = [rect(1, 2, 3, 4), rect(10, 20, 30, 40)];
    let c = cmd::ClearRects {
        flags: cmd::CLEAR_DEPTH | cmd::CLEAR_STENCIL,
        depth_f32: 0.5f32.to_bits(),
        stencil: 7,
        rect_count: 2,
        ..Default::default()
    };
    h.run(one(|w| {
        w.push(Opcode::ClearRects, &c, &rects_bytes(&two));
        // No rectangles: nothing to clear, still valid.
        let none = cmd::ClearRects {
            flags: cmd::CLEAR_COLOR,
            ..Default::default()
        };
        w.push(Opcode::ClearRects, &none, &[]);
    }))
    .unwrap();
    assert_eq!(
        h.exec.clear_rects,
        vec![
            (cmd::CLEAR_DEPTH | cmd::CLEAR_STENCIL, two.to_vec()),
            (cmd::CLEAR_COLOR, vec![])
        ]
    );

    // Fewer rectangle records than rect_count.
    assert_eq!(
        h.packet_err(one(|w| {
            w.push(Opcode::ClearRects, &c, &rects_bytes(&two[..1]));
        })),
        PacketError::PayloadTruncated
    );
    // Unknown clear bits, too many rectangles, a rectangle past u32.
    let bad_flags = cmd::ClearRects {
        flags: 1 << 3,
        ..Default::default()
    };
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::ClearRects, &bad_flags, &[]);
        })),
        PacketError::InvalidValue { .. }
    ));
    let many = cmd::ClearRects {
        flags: cmd::CLEAR_COLOR,
        rect_count: cmd::MAX_CLEAR_RECTS + 1,
        ..Default::default()
    };
    let lots = vec![rect(0, 0, 1, 1); cmd::MAX_CLEAR_RECTS as usize + 1];
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::ClearRects, &many, &rects_bytes(&lots));
        })),
        PacketError::Limit { .. }
    ));
    let wrap = cmd::ClearRects {
        flags: cmd::CLEAR_COLOR,
        rect_count: 1,
        ..Default::default()
    };
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(
                Opcode::ClearRects,
                &wrap,
                &rects_bytes(&[rect(u32::MAX, 0, 2, 1)]),
            );
        })),
        PacketError::InvalidValue { .. }
    ));
}

#[test]
fn presents_report_vsync_and_only_scanout_zero() {
    let mut h = Harness::new();
    let s = h
        .run(one(|w| {
            w.present(0);
        }))
        .unwrap();
    assert_eq!((s.presents, s.vsync_present), (1, false));
    let ex = cmd::PresentEx {
        scanout_id: 0,
        flags: cmd::PRESENT_FLAG_VSYNC,
        d3d9_present_flags: 1,
        ..Default::default()
    };
    let s = h
        .run(one(|w| {
            w.push(Opcode::PresentEx, &ex, &[]);
        }))
        .unwrap();
    assert!(s.vsync_present);
    let bad = cmd::Present {
        scanout_id: 1,
        ..Default::default()
    };
    assert!(matches!(
        h.packet_err(one(|w| {
            w.push(Opcode::Present, &bad, &[]);
        })),
        PacketError::InvalidValue { .. }
    ));
}

#[test]
fn executor_errors_stop_the_stream_with_backend_code() {
    let mut h = Harness::new();
    h.exec.fail_on_flush = true;
    let e = h.packet_err(one(|w| {
        w.push(Opcode::Flush, &cmd::Flush::default(), &[]);
        w.create_buffer(1, USAGE_VB, 16, 0, 0);
    }));
    assert_eq!(e.code(), ErrorCode::Backend);
    assert_eq!(
        h.p.objects().handle_count(),
        0,
        "packets after the failure did not run"
    );
}

/// Bindings belong to the submitting context: interleaved submissions from two contexts
/// (DWM and an application) never see each other's, while objects stay global.
#[test]
fn bindings_are_per_context_objects_are_global() {
    let mut h = Harness::new();
    let set_ib = |w: &mut CmdStreamWriter, buffer: u32| {
        w.push(
            Opcode::SetIndexBuffer,
            &cmd::SetIndexBuffer {
                buffer,
                format: 0,
                ..Default::default()
            },
            &[],
        );
    };
    let draw_indexed = |w: &mut CmdStreamWriter| {
        w.push(
            Opcode::DrawIndexed,
            &cmd::DrawIndexed {
                index_count: 3,
                instance_count: 1,
                ..Default::default()
            },
            &[],
        );
    };
    h.p.switch_context(1);
    h.run(one(|w| {
        w.create_buffer(30, cmd::RESOURCE_USAGE_INDEX_BUFFER, 64, 0, 0);
        set_ib(w, 30);
    }))
    .unwrap();
    // Context 2 sees the buffer (one namespace) but not context 1's index buffer.
    h.p.switch_context(2);
    assert_eq!(h.p.context(), 2);
    assert_eq!(
        h.p.bindings().index_buffer,
        0,
        "a new context starts with nothing bound"
    );
    assert!(
        h.run(one(draw_indexed)).is_err(),
        "no index buffer in context 2"
    );
    h.run(one(|w| set_ib(w, 30))).unwrap();
    h.run(one(|w| set_ib(w, 0))).unwrap();
    // Back in context 1, its binding is still there.
    h.p.switch_context(1);
    assert_eq!(h.p.bindings().index_buffer, 30);
    h.run(one(draw_indexed)).unwrap();
    // Destroying the buffer from context 2 unbinds it in context 1 too.
    h.p.switch_context(2);
    h.run(one(|w| {
        w.destroy_resource(30);
    }))
    .unwrap();
    h.p.switch_context(1);
    assert_eq!(
        h.p.bindings().index_buffer,
        0,
        "a destroyed buffer is unbound everywhere"
    );
    assert!(h.run(one(draw_indexed)).is_err());
}

/// A guest cannot grow the parked-context table without bound.
#[test]
fn parked_contexts_are_capped() {
    let mut h = Harness::new();
    h.run(one(|w| {
        w.create_buffer(30, cmd::RESOURCE_USAGE_INDEX_BUFFER, 64, 0, 0);
    }))
    .unwrap();
    h.p.switch_context(7);
    h.run(one(|w| {
        w.push(
            Opcode::SetIndexBuffer,
            &cmd::SetIndexBuffer {
                buffer: 30,
                ..Default::default()
            },
            &[],
        );
    }))
    .unwrap();
    for c in 1000..1000 + 2 * crate::aerogpu::processor::MAX_CONTEXTS as u32 {
        h.p.switch_context(c);
    }
    h.p.switch_context(7);
    assert_eq!(
        h.p.bindings().index_buffer,
        0,
        "the least recently used context was forgotten, not kept forever"
    );
}
