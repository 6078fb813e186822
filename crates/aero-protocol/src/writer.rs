//! A command-stream builder, the way a guest driver writes streams (used by tests, the
//! benchmark and the demo guest tooling).

use crate::ABI_VERSION_U32;
use crate::cmd::{self, CmdHdr, CmdStreamHeader, Opcode};
use crate::ring::{ALLOC_TABLE_MAGIC, AllocEntry, AllocTableHeader};
use crate::wire::Wire;

/// Builds `aerogpu_cmd_stream_header` + packets; `finish` patches the header size.
#[derive(Clone, Debug)]
pub struct CmdStreamWriter {
    buf: Vec<u8>,
    packets: u32,
}

impl Default for CmdStreamWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl CmdStreamWriter {
    pub fn new() -> Self {
        let header = CmdStreamHeader {
            magic: cmd::CMD_STREAM_MAGIC,
            abi_version: ABI_VERSION_U32,
            size_bytes: CmdStreamHeader::SIZE as u32,
            flags: 0,
        };
        Self {
            buf: header.to_bytes().to_vec(),
            packets: 0,
        }
    }

    /// Appends `packet` (its `hdr` is overwritten with `opcode` and the padded size) and
    /// `payload`, then NUL padding to a multiple of 4.
    pub fn push<T: Wire>(&mut self, opcode: Opcode, packet: &T, payload: &[u8]) -> &mut Self {
        self.push_raw(opcode as u32, packet, payload)
    }

    /// Like [`push`](Self::push) with any opcode value (unknown opcodes in tests).
    pub fn push_raw<T: Wire>(&mut self, opcode: u32, packet: &T, payload: &[u8]) -> &mut Self {
        let start = self.buf.len();
        let unpadded = T::WIRE_SIZE + payload.len();
        let size = unpadded.div_ceil(4) * 4;
        self.buf.resize(start + size, 0);
        let dst = &mut self.buf[start..];
        packet.write_le(dst);
        dst[T::WIRE_SIZE..unpadded].copy_from_slice(payload);
        let hdr = CmdHdr {
            opcode,
            size_bytes: size as u32,
        };
        hdr.write_le(dst);
        self.packets += 1;
        self
    }

    /// A bare packet: just the header plus `payload`.
    pub fn push_bare(&mut self, opcode: u32, payload: &[u8]) -> &mut Self {
        self.push_raw(opcode, &CmdHdr::default(), payload)
    }

    pub fn packet_count(&self) -> u32 {
        self.packets
    }

    /// The finished stream.
    pub fn finish(mut self) -> Vec<u8> {
        let size = self.buf.len() as u32;
        self.buf[8..12].copy_from_slice(&size.to_le_bytes());
        self.buf
    }

    pub fn create_buffer(
        &mut self,
        handle: u32,
        usage: u32,
        size: u64,
        alloc_id: u32,
        offset: u32,
    ) -> &mut Self {
        let p = cmd::CreateBuffer {
            buffer_handle: handle,
            usage_flags: usage,
            size_bytes: size,
            backing_alloc_id: alloc_id,
            backing_offset_bytes: offset,
            ..Default::default()
        };
        self.push(Opcode::CreateBuffer, &p, &[])
    }

    /// A single-mip, single-layer tightly packed texture.
    pub fn create_texture2d(
        &mut self,
        handle: u32,
        format: u32,
        width: u32,
        height: u32,
        alloc_id: u32,
    ) -> &mut Self {
        let p = cmd::CreateTexture2d {
            texture_handle: handle,
            usage_flags: cmd::RESOURCE_USAGE_TEXTURE | cmd::RESOURCE_USAGE_RENDER_TARGET,
            format,
            width,
            height,
            mip_levels: 1,
            array_layers: 1,
            backing_alloc_id: alloc_id,
            ..Default::default()
        };
        self.push(Opcode::CreateTexture2d, &p, &[])
    }

    pub fn destroy_resource(&mut self, handle: u32) -> &mut Self {
        let p = cmd::DestroyResource {
            resource_handle: handle,
            ..Default::default()
        };
        self.push(Opcode::DestroyResource, &p, &[])
    }

    pub fn upload(&mut self, handle: u32, offset: u64, data: &[u8]) -> &mut Self {
        let p = cmd::UploadResource {
            resource_handle: handle,
            offset_bytes: offset,
            size_bytes: data.len() as u64,
            ..Default::default()
        };
        self.push(Opcode::UploadResource, &p, data)
    }

    pub fn clear(&mut self, rgba: [f32; 4]) -> &mut Self {
        let p = cmd::Clear {
            flags: cmd::CLEAR_COLOR,
            color_rgba_f32: rgba.map(f32::to_bits),
            ..Default::default()
        };
        self.push(Opcode::Clear, &p, &[])
    }

    pub fn draw(&mut self, vertex_count: u32) -> &mut Self {
        let p = cmd::Draw {
            vertex_count,
            instance_count: 1,
            ..Default::default()
        };
        self.push(Opcode::Draw, &p, &[])
    }

    pub fn present(&mut self, flags: u32) -> &mut Self {
        let p = cmd::Present {
            scanout_id: 0,
            flags,
            ..Default::default()
        };
        self.push(Opcode::Present, &p, &[])
    }

    pub fn export_shared(&mut self, handle: u32, token: u64) -> &mut Self {
        let p = cmd::ExportSharedSurface {
            resource_handle: handle,
            share_token: token,
            ..Default::default()
        };
        self.push(Opcode::ExportSharedSurface, &p, &[])
    }

    pub fn import_shared(&mut self, out_handle: u32, token: u64) -> &mut Self {
        let p = cmd::ImportSharedSurface {
            out_resource_handle: out_handle,
            share_token: token,
            ..Default::default()
        };
        self.push(Opcode::ImportSharedSurface, &p, &[])
    }

    pub fn release_shared(&mut self, token: u64) -> &mut Self {
        let p = cmd::ReleaseSharedSurface {
            share_token: token,
            ..Default::default()
        };
        self.push(Opcode::ReleaseSharedSurface, &p, &[])
    }
}

/// Encodes an allocation table: header + `entries` (stride = entry size).
pub fn encode_alloc_table(entries: &[AllocEntry]) -> Vec<u8> {
    let size = AllocTableHeader::SIZE + entries.len() * AllocEntry::SIZE;
    let header = AllocTableHeader {
        magic: ALLOC_TABLE_MAGIC,
        abi_version: ABI_VERSION_U32,
        size_bytes: size as u32,
        entry_count: entries.len() as u32,
        entry_stride_bytes: AllocEntry::SIZE as u32,
        reserved0: 0,
    };
    let mut out = header.to_bytes().to_vec();
    for e in entries {
        out.extend_from_slice(&e.to_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_are_padded_and_sized() {
        let mut w = CmdStreamWriter::new();
        w.push_bare(Opcode::DebugMarker as u32, b"hello");
        w.present(cmd::PRESENT_FLAG_VSYNC);
        let s = w.finish();
        // header 16 + marker 8+5 padded to 16 + present 16
        assert_eq!(s.len(), 48);
        assert_eq!(crate::wire::read_u32(&s, 8), 48);
        assert_eq!(crate::wire::read_u32(&s, 16), Opcode::DebugMarker as u32);
        assert_eq!(crate::wire::read_u32(&s, 20), 16);
        assert_eq!(&s[24..29], b"hello");
        assert_eq!(&s[29..32], &[0, 0, 0]);
        assert_eq!(crate::wire::read_u32(&s, 32), Opcode::Present as u32);
        assert_eq!(crate::wire::read_u32(&s, 44), cmd::PRESENT_FLAG_VSYNC);
    }
}
