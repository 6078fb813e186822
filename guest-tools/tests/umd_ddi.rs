//! The UMD through its D3D9 DDI tables (OpenAdapter -> CreateDevice -> D3DDDI_DEVICEFUNCS)
//! with a fake Windows 7 runtime: complete table, exactly the documented NOTAVAILABLE stubs,
//! cached legacy state (round-trips, state blocks; only int/bool shader constants emitted),
//! state blocks with viewport, scissor and float constants applied to the device,
//! static flow control on int/bool constants, Clear/DepthFill in rectangles, and a scene whose
//! WDDM submissions (pfnRenderCb/pfnPresentCb + allocation lists) go through the KMD's
//! staging/ring code into the Rust AeroGPU device with zero validation errors.

mod common;

use std::collections::HashMap;

use aero_gpu::aerogpu::processor::{ConstantKind, ConstantUse};
use aero_gpu::aerogpu::{Command, Executor, GuestMemory, clear_rect_records};
use aero_protocol::cmd::ShaderStage;

/// x, y, width, height of a CLEAR_RECTS rectangle.
type Rect = (u32, u32, u32, u32);

/// What a draw of a shader reading i#/b# registers saw: (register, value) of each one it
/// reads.
#[derive(Debug, PartialEq, Eq)]
struct FlowDraw {
    int_registers: Vec<(u32, [i32; 4])>,
    bool_registers: Vec<(u32, u32)>,
}

/// Keeps the device's vertex-stage int/bool register files and the shaders' register use,
/// and records each draw of a shader with static flow control, the CLEAR_RECTS packets and
/// the counts the NullExecutor keeps.
#[derive(Default)]
struct Recorder {
    draws: u64,
    clears: u64,
    shaders: HashMap<u32, ConstantUse>,
    vs: u32,
    int_regs: [[i32; 4]; 16],
    bool_regs: [u32; 16],
    flow_draws: Vec<FlowDraw>,
    clear_rects: Vec<(u32, Vec<Rect>)>,
    viewport: [f32; 6],
    scissor: [i32; 4],
    vs_c5: [f32; 4],
    /// Viewport, scissor and vertex c5 at each draw whose viewport is 64 wide (only the
    /// state-block part of the scene sets such a viewport).
    small_viewport_draws: Vec<([f32; 6], [i32; 4], [f32; 4])>,
    /// Raw D3D9 render states as the device last received them, and as they were at the
    /// first draw (later devices of the scene send their own defaults).
    render_states: HashMap<u32, u32>,
    first_draw_states: Option<HashMap<u32, u32>>,
}

impl Executor for Recorder {
    fn execute(&mut self, c: &Command<'_>, _mem: &mut dyn GuestMemory) -> Result<(), String> {
        match c {
            Command::CreateShader {
                handle, constants, ..
            } => {
                self.shaders.insert(*handle, *constants);
            }
            Command::BindShaders { vs, .. } => self.vs = *vs,
            Command::SetShaderConstants {
                kind,
                stage: ShaderStage::Vertex,
                start_register,
                data,
                ..
            } => {
                let start = *start_register as usize;
                match kind {
                    ConstantKind::Int => {
                        for (i, reg) in data.chunks_exact(16).enumerate() {
                            for (j, v) in reg.chunks_exact(4).enumerate() {
                                self.int_regs[start + i][j] =
                                    i32::from_le_bytes(v.try_into().unwrap());
                            }
                        }
                    }
                    ConstantKind::Bool => {
                        for (i, v) in data.chunks_exact(4).enumerate() {
                            self.bool_regs[start + i] = u32::from_le_bytes(v.try_into().unwrap());
                        }
                    }
                    ConstantKind::Float => {
                        for (i, reg) in data.chunks_exact(16).enumerate() {
                            if start + i == 5 {
                                for (j, v) in reg.chunks_exact(4).enumerate() {
                                    self.vs_c5[j] = f32::from_le_bytes(v.try_into().unwrap());
                                }
                            }
                        }
                    }
                }
            }
            Command::SetViewport(v) => {
                self.viewport = [
                    v.x_f32,
                    v.y_f32,
                    v.width_f32,
                    v.height_f32,
                    v.min_depth_f32,
                    v.max_depth_f32,
                ]
                .map(f32::from_bits);
            }
            Command::SetScissor(s) => self.scissor = [s.x, s.y, s.width, s.height],
            Command::SetRenderState { state, value } => {
                self.render_states.insert(*state, *value);
            }
            Command::Draw(_) | Command::DrawIndexed(_) => {
                self.draws += 1;
                if self.first_draw_states.is_none() {
                    self.first_draw_states = Some(self.render_states.clone());
                }
                if self.viewport[2] == 64.0 {
                    self.small_viewport_draws
                        .push((self.viewport, self.scissor, self.vs_c5));
                }
                let used = self.shaders.get(&self.vs).copied().unwrap_or_default();
                if used != ConstantUse::default() {
                    let regs = |mask: u16| (0..16u32).filter(move |r| mask & (1 << r) != 0);
                    self.flow_draws.push(FlowDraw {
                        int_registers: regs(used.int_registers)
                            .map(|r| (r, self.int_regs[r as usize]))
                            .collect(),
                        bool_registers: regs(used.bool_registers)
                            .map(|r| (r, self.bool_regs[r as usize]))
                            .collect(),
                    });
                }
            }
            Command::Clear(_) => self.clears += 1,
            Command::ClearRects { clear, rects } => self.clear_rects.push((
                clear.flags,
                clear_rect_records(rects)
                    .map(|r| (r.x, r.y, r.width, r.height))
                    .collect(),
            )),
            _ => {}
        }
        Ok(())
    }
}

/// A scene program `tests_host/NAME.cpp` linked with the whole UMD and the KMD's portable
/// submission code.
fn build_scene(name: &str) -> std::path::PathBuf {
    let scene = format!("tests_host/{name}.cpp");
    let sources = [
        scene.as_str(),
        "umd/src/aerogpu_umd_ddi.cpp",
        "umd/src/aerogpu_umd_caps.cpp",
        "umd/src/aerogpu_umd_core.cpp",
        "umd/src/aerogpu_umd_core_draw.cpp",
        "umd/src/aerogpu_umd_core_copy.cpp",
        "umd/src/aerogpu_umd_legacy.cpp",
        "umd/src/aerogpu_umd_ff.cpp",
        "tests_host/agpu_trace.c",
        "kmd/portable/agpu_kmd_portable.c",
    ];
    common::build(name, &sources, true, false).expect("host C++ compiler")
}

#[test]
fn d3d9_ddi_scene_through_the_device_table_runs_on_the_device_model() {
    let exe = build_scene("umd_ddi_scene");
    // The runtime hands out whole buffers at pfnCreateContextCb, none, or a one-entry
    // allocation list (fake_runtime.h): the scene and its replay are the same in each.
    for (mode, requests, empty_submissions) in
        [("full", 0, 0), ("none", 2, 0), ("small-list", 1, 1)]
    {
        let path = common::out_dir().join(format!("umd_ddi_scene-{mode}.trace"));
        let stdout = common::run(&exe, &[path.to_str().unwrap(), mode]);
        // 20 render submissions (4 Lock flushes: the VB/IB and two area locks, 6 presents, the legacy state's int/bool
        // constants, the 2 batches of 80 KiB of render states between two draws, the query
        // (with the flow-control/Blt/ColorFill/user-memory draws before it), the shared
        // surface's create+export, DWM's import+fill and the destroys of its two aliases (one
        // opened from the v2 blob), the IB destroy, DestroyDevice releasing the internal blit
        // objects and upload ring) + 6 DxgkDdiPresent ones.
        // Buffer requests of the modes without whole buffers (the UMD asking pfnRenderCb with
        // the Resize* flags): with none, each of the 2 contexts' first batch; with a one-entry
        // allocation list, the app's context once (DWM's batches reference one allocation at
        // most). A request on a context with a command buffer submits an empty stream.
        let fence = 26 + empty_submissions;
        assert!(
            stdout.contains(&format!(
                "submissions {fence} renders 20 presents 6 fence {fence}"
            )),
            "{mode}: {stdout}"
        );
        assert!(
            stdout.contains(&format!("buffer requests {requests} contexts 2")),
            "{mode}: {stdout}"
        );
        let out = common::replay_clean_with(&path, fence, Recorder::default());
        let rec = out.device.executor();
        // At the first draw the device held D3D9's default of the states the scene never sets
        // (the UMD sends them all ahead of its first packet) and LIGHTING = FALSE from a state
        // block, a value equal to the old all-zero cache that the block's apply skipped.
        let first = rec.first_draw_states.as_ref().expect("a draw");
        let rs = |s: u32| first.get(&s).copied();
        assert_eq!(rs(137), Some(0), "LIGHTING");
        assert_eq!(rs(25), Some(8), "ALPHAFUNC = ALWAYS");
        assert_eq!(rs(60), Some(0xFFFF_FFFF), "TEXTUREFACTOR = opaque white");
        assert_eq!(rs(166), Some(64.0f32.to_bits()), "POINTSIZE_MAX = 64.0");
        // 3 frames of 2 draws, 3 draws of the flow-control shader, 3 after state blocks, the 2
        // around the 80 KiB of render states, 2 stretching Blts and a partial ColorFill
        // (internal draws), 2 user-memory draws, 2 ordinary draws, 2 DrawIndexedPrimitive2 and
        // the fills of two Clears with rectangles (2, then 1 left by the scissor rect).
        assert_eq!(rec.draws, 6 + 3 + 3 + 2 + 3 + 2 + 2 + 2 + 3);
        // The state-block draws saw the block's viewport (8,8 64x64, z 0.25..0.75), scissor
        // (4,4 96x96) and c5, although each block was applied after resetting all of them:
        // the recorded block (c5 as recorded), the same after CAPTURE, then a D3DSBT_ALL block.
        let vp = [8.0, 8.0, 64.0, 64.0, 0.25, 0.75];
        let sc = [4, 4, 96, 96];
        assert_eq!(
            rec.small_viewport_draws,
            vec![
                (vp, sc, [5.0, 6.0, 7.0, 8.0]),
                (vp, sc, [10.0, 11.0, 12.0, 13.0]),
                (vp, sc, [10.0, 11.0, 12.0, 13.0]),
            ]
        );
        // The flow-control shader's draws saw its i0/b0 as the app set them (3, TRUE), as set
        // again after recording a block, and as the block set them (1, FALSE).
        assert_eq!(
            rec.flow_draws,
            vec![
                FlowDraw {
                    int_registers: vec![(0, [3, 0, 1, 0])],
                    bool_registers: vec![(0, 1)],
                },
                FlowDraw {
                    int_registers: vec![(0, [3, 0, 1, 0])],
                    bool_registers: vec![(0, 1)],
                },
                FlowDraw {
                    int_registers: vec![(0, [1, 0, 1, 0])],
                    bool_registers: vec![(0, 0)],
                },
            ]
        );
        // Depth/stencil clears in rectangles: Clear's rectangle cut by the scissor rect (the
        // color part of it is one of the fills above), and a partial DepthFill (D24S8: depth
        // and stencil). The whole-buffer depth clear and DepthFill are plain CLEARs.
        let ds = aero_protocol::cmd::CLEAR_DEPTH | aero_protocol::cmd::CLEAR_STENCIL;
        assert_eq!(
            rec.clear_rects,
            vec![(ds, vec![(10, 10, 30, 30)]), (ds, vec![(0, 0, 16, 16)])]
        );
        // CLEARs: the 3 frames, the whole-viewport depth Clear, the whole DepthFill and DWM's
        // ColorFill of the whole shared surface.
        assert_eq!(rec.clears, 3 + 1 + 1 + 1);
        // RT 0x1000, VB 0x1001, IB 0x1002 (destroyed at the end).
        let objects = out.device.processor().objects();
        assert!(objects.resource(0x1000).is_ok());
        assert!(objects.resource(0x1001).is_ok());
        assert!(objects.resource(0x1002).is_err());
        // Two shared surfaces (one with a KMD-assigned alloc_id, one from the cross-process
        // counter). The second was imported and released again by another process (alias
        // 0x2000, from DWM's chunk of handles, gone; one reference left, token still mapped).
        let (handle, token) = parse_shared(&stdout);
        assert!(objects.resource(handle).is_ok());
        assert_eq!(objects.refcount(handle), Some(1));
        assert_eq!(objects.shared_token_count(), 2);
        // RT, VB, the two shared surfaces, the Blt target, the TexBlt textures (system-memory
        // source and two default-pool ones), the BufBlt buffers (one system-memory), the depth
        // buffer and the primary; the app's 2 shaders and declaration (the UMD's internal ones
        // were destroyed with the device).
        assert_eq!(objects.resource_count(), 5 + 3 + 2 + 2);
        assert_eq!(objects.handle_count(), 12 + 2 + 1);
        assert!(objects.shared_resource(token).is_some());
        assert!(objects.resource(0x2000).is_err());
    }
}

/// Six devices of one process (two with the cross-process handle counter, two in the
/// process-local fallback range, one running through a chunk of handles into the next and
/// one beside it), their submissions interleaved in one trace, and a seventh device whose
/// creations fail once the counter is exhausted: the trace replays with zero errors and
/// every device's objects are there, each under its own handles.
#[test]
fn devices_of_one_process_never_share_protocol_handles() {
    let exe = build_scene("umd_multi_device_scene");
    let path = common::out_dir().join("umd_multi_device_scene.trace");
    let stdout = common::run(&exe, &[path.to_str().unwrap()]);
    let fence: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("submissions ")?.split(" fence ").nth(1))
        .unwrap_or_else(|| panic!("no summary line in {stdout}"))
        .trim()
        .parse()
        .unwrap();
    let out = common::replay_clean(&path, fence);
    // 13 frames of one draw each, every one on its device's own render target.
    assert_eq!(out.device.executor().draws, 13);
    let objects = out.device.processor().objects();
    let mut handles = Vec::new();
    for line in stdout.lines().filter(|l| l.starts_with("device rt ")) {
        let words: Vec<&str> = line.split_whitespace().collect();
        for h in [words[2], words[4]] {
            let h: u32 = h.parse().unwrap();
            assert!(objects.resource(h).is_ok(), "{h:#x} missing");
            handles.push(h);
        }
    }
    handles.sort_unstable();
    handles.dedup();
    assert_eq!(handles.len(), 12, "{stdout}");
    // Each device's render target and vertex buffer, 2 shaders and a declaration; the 4096
    // declarations of the chunk-crossing device were destroyed again.
    assert_eq!(objects.resource_count(), 12);
    assert_eq!(objects.handle_count(), 6 * 5);
}

fn parse_shared(stdout: &str) -> (u32, u64) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("shared handle "))
        .unwrap_or_else(|| panic!("no shared line in {stdout}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    (words[2].parse().unwrap(), words[4].parse().unwrap())
}
