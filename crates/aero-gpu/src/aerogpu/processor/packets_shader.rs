//! Shader and input-layout packets (D3D9 SM2/SM3 token streams, D3D9 vertex
//! declarations) and shader constants.

use aero_protocol::cmd::{self, ShaderStage};
use aero_protocol::wire::read_u32;

use super::{
    Command, CommandProcessor, ConstantKind, decode, payload, shader_stage, shader_tokens,
};
use crate::aerogpu::error::PacketError;

/// D3DSIO_END.
const D3D9_END_TOKEN: u32 = 0x0000_FFFF;
/// Bytes of one D3DVERTEXELEMENT9.
const VERTEX_ELEMENT_BYTES: usize = 8;
/// D3DDECLTYPE_UNUSED, the type of D3DDECL_END.
const D3DDECLTYPE_UNUSED: u8 = 17;

/// Checks the framing of a D3D9 shader: whole tokens, a version token matching the stage
/// (vs: 0xFFFE, ps: 0xFFFF in the high word; major 1..=3) and a final END token.
fn check_d3d9_tokens(stage: ShaderStage, tokens: &[u8]) -> Result<(), PacketError> {
    let invalid = |value: u64| PacketError::InvalidValue {
        what: "D3D9 shader bytecode",
        value,
    };
    if tokens.len() < 8 || !tokens.len().is_multiple_of(4) {
        return Err(invalid(tokens.len() as u64));
    }
    let version = read_u32(tokens, 0);
    let expected_kind = match stage {
        ShaderStage::Vertex => 0xFFFE,
        ShaderStage::Pixel => 0xFFFF,
    };
    let major = (version >> 8) & 0xFF;
    if version >> 16 != expected_kind || !(1..=3).contains(&major) {
        return Err(invalid(version.into()));
    }
    let last = read_u32(tokens, tokens.len() - 4);
    if last != D3D9_END_TOKEN {
        return Err(invalid(last.into()));
    }
    Ok(())
}

/// D3DVERTEXELEMENT9 records, the last being D3DDECL_END {0xFF, 0, UNUSED, 0, 0, 0}.
fn check_vertex_declaration(blob: &[u8]) -> Result<(), PacketError> {
    let count = blob.len() / VERTEX_ELEMENT_BYTES;
    if blob.is_empty() || !blob.len().is_multiple_of(VERTEX_ELEMENT_BYTES) {
        return Err(PacketError::InvalidValue {
            what: "vertex declaration size",
            value: blob.len() as u64,
        });
    }
    if count > cmd::MAX_INPUT_LAYOUT_ELEMENTS as usize {
        return Err(PacketError::Limit {
            what: "vertex declaration elements",
        });
    }
    let end = blob.get(blob.len() - VERTEX_ELEMENT_BYTES..).unwrap_or(&[]);
    let is_end = end.first() == Some(&0xFF)
        && end.get(1) == Some(&0)
        && end.get(4) == Some(&D3DDECLTYPE_UNUSED);
    if !is_end {
        return Err(PacketError::InvalidValue {
            what: "vertex declaration terminator",
            value: count as u64,
        });
    }
    Ok(())
}

impl CommandProcessor {
    pub(super) fn create_shader<'a>(&mut self, p: &'a [u8]) -> Result<Command<'a>, PacketError> {
        let c: cmd::CreateShader = decode(p)?;
        let stage = shader_stage(c.stage)?;
        if c.bytecode_size_bytes > cmd::MAX_SHADER_BYTES {
            return Err(PacketError::Limit {
                what: "shader bytecode",
            });
        }
        let tokens = payload(p, cmd::CreateShader::SIZE, c.bytecode_size_bytes.into())?;
        check_d3d9_tokens(stage, tokens)?;
        let constants = shader_tokens::constant_use(tokens)?;
        self.objects
            .create_shader(c.shader_handle, stage, self.limits.max_handles)?;
        Ok(Command::CreateShader {
            handle: c.shader_handle,
            stage,
            tokens,
            constants,
        })
    }

    pub(super) fn destroy_shader<'a>(&mut self, p: &'a [u8]) -> Result<Command<'a>, PacketError> {
        let c: cmd::DestroyShader = decode(p)?;
        self.objects.destroy_shader(c.shader_handle)?;
        self.forget(c.shader_handle);
        Ok(Command::DestroyShader {
            handle: c.shader_handle,
        })
    }

    pub(super) fn bind_shaders<'a>(&mut self, p: &'a [u8]) -> Result<Command<'a>, PacketError> {
        let c: cmd::BindShaders = decode(p)?;
        for (handle, expected) in [(c.vs, ShaderStage::Vertex), (c.ps, ShaderStage::Pixel)] {
            if handle != 0 && self.objects.shader_stage(handle)? != expected {
                return Err(PacketError::WrongKind {
                    handle,
                    expected: if expected == ShaderStage::Vertex {
                        "vertex shader"
                    } else {
                        "pixel shader"
                    },
                });
            }
        }
        self.bindings.vs = c.vs;
        self.bindings.ps = c.ps;
        Ok(Command::BindShaders { vs: c.vs, ps: c.ps })
    }

    pub(super) fn set_shader_constants<'a>(
        &mut self,
        p: &'a [u8],
        kind: ConstantKind,
    ) -> Result<Command<'a>, PacketError> {
        let c: cmd::SetShaderConstants = decode(p)?;
        let stage = shader_stage(c.stage)?;
        let (max, bytes_per_register) = match kind {
            ConstantKind::Float => (cmd::MAX_SHADER_CONSTANTS_F, 16u64),
            ConstantKind::Int => (cmd::MAX_SHADER_CONSTANTS_I, 16),
            ConstantKind::Bool => (cmd::MAX_SHADER_CONSTANTS_B, 4),
        };
        let end = u64::from(c.start_register) + u64::from(c.count);
        if end > u64::from(max) {
            return Err(PacketError::InvalidValue {
                what: "shader constant range",
                value: end,
            });
        }
        let data = payload(
            p,
            cmd::SetShaderConstants::SIZE,
            u64::from(c.count) * bytes_per_register,
        )?;
        Ok(Command::SetShaderConstants {
            kind,
            stage,
            start_register: c.start_register,
            count: c.count,
            data,
        })
    }

    pub(super) fn create_input_layout<'a>(
        &mut self,
        p: &'a [u8],
    ) -> Result<Command<'a>, PacketError> {
        let c: cmd::CreateInputLayout = decode(p)?;
        let elements = payload(p, cmd::CreateInputLayout::SIZE, c.blob_size_bytes.into())?;
        check_vertex_declaration(elements)?;
        self.objects
            .create_input_layout(c.input_layout_handle, self.limits.max_handles)?;
        Ok(Command::CreateInputLayout {
            handle: c.input_layout_handle,
            elements,
        })
    }

    pub(super) fn destroy_input_layout<'a>(
        &mut self,
        p: &'a [u8],
    ) -> Result<Command<'a>, PacketError> {
        let c: cmd::DestroyInputLayout = decode(p)?;
        self.objects.destroy_input_layout(c.input_layout_handle)?;
        self.forget(c.input_layout_handle);
        Ok(Command::DestroyInputLayout {
            handle: c.input_layout_handle,
        })
    }

    pub(super) fn set_input_layout<'a>(&mut self, p: &'a [u8]) -> Result<Command<'a>, PacketError> {
        let c: cmd::SetInputLayout = decode(p)?;
        if c.input_layout_handle != 0 {
            self.objects.check_input_layout(c.input_layout_handle)?;
        }
        self.bindings.input_layout = c.input_layout_handle;
        Ok(Command::SetInputLayout {
            handle: c.input_layout_handle,
        })
    }
}
