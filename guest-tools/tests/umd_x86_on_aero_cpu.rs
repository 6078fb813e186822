//! The shipped 32-bit UMD (`aerogpu_d3d9.dll`, as `build.sh` makes it) runs on Aero's own
//! x86 CPU: the Wine scene (`tests_host/umd_wine_scene.cpp`, built for i686 with
//! mingw-w64 and linked statically) and the DLL are loaded into the emulated machine and
//! run as one Win32 process whose kernel32/msvcrt imports the test answers in Rust
//! (`common/win32_user.rs`). Both images are relocated into the harness's image window,
//! their TLS callbacks, CRT start-up, the DLL's DllMain (attach at LoadLibrary, detach at
//! exit) and the scene's main run on the CPU; the scene opens the adapter, creates a
//! device, draws and presents two frames and writes the trace that the Rust device model
//! replays here.
//!
//! Between the scene and the DLL the test interposes: GetProcAddress hands out host
//! thunks for the DLL's exports, and after OpenAdapter and CreateDevice every entry of
//! the adapter and device tables is replaced by a thunk too. Each call through them is
//! made by the host with Emu::call, so every DDI the scene reaches is checked to be
//! stdcall with the argument count of its d3dumddi.h prototype (ESP on return) and to
//! keep EBX/ESI/EDI/EBP.
//!
//! Not covered: the second process of the Wine scene (the scene runs with `single`: one
//! process takes two consecutive shared alloc_ids from the named section), threads, and
//! anything of real Windows beyond the documented function contracts.

mod common;
#[path = "common/win32_user.rs"]
mod win32_user;
#[path = "common/x86_host.rs"]
mod x86_host;

use aero_gpu::aerogpu::{AeroGpu, AeroGpuConfig};
use win32_user::Process;
use x86_host::Emu;

#[test]
fn shipped_x86_umd_draws_on_aero_cpu_and_its_submissions_replay_on_the_device() {
    let drivers = common::build_drivers("umd-x86-cpu");
    let dll = drivers.join("x86/aerogpu/aerogpu_d3d9.dll");
    let exe = common::build_umd_scene("i686-w64-mingw32");
    let trace = exe.with_file_name("umd_x86_scene.trace");
    let _ = std::fs::remove_file(&trace);

    let mut emu = Emu::new(AeroGpu::new(AeroGpuConfig::default()), 32);
    emu.max_instructions_per_call = 4_000_000_000;
    let args = [exe.as_path(), trace.as_path(), dll.as_path()]
        .iter()
        .map(|p| p.display().to_string())
        .chain(["single".to_string()])
        .collect();
    let mut process = Process::new(&mut emu, args).unwrap();
    let result = process.run(&mut emu);
    let stdout = process.stdout.clone();
    eprintln!("guest stdout:\n{stdout}\n{} guest instructions", emu.instructions);
    let code = result.unwrap_or_else(|e| panic!("the scene failed on Aero's CPU: {e}"));
    assert_eq!(code, 0, "scene exit code");

    let ids: Vec<u32> = stdout
        .lines()
        .find_map(|l| l.strip_prefix("shared alloc_ids "))
        .expect("no shared alloc_ids line")
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{stdout}");
    assert!(ids[0] > 0 && ids[1] == ids[0] + 1 && ids[1] < 0x8000_0000, "{ids:?}");
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("submissions "))
        .expect("no summary line");
    let fields: Vec<&str> = summary.split_whitespace().collect();
    let submissions: u64 = fields[1].parse().unwrap();
    let renders: u64 = fields[3].parse().unwrap();
    assert_eq!(fields[5], "2", "presents: {summary}");
    assert_eq!(submissions, renders + 2, "{summary}");
    let replay = common::replay_clean(&trace, submissions);
    let device = replay.device.executor();
    assert_eq!(device.draws, 2, "one draw per frame");
    assert_eq!(device.presents, 2);
}
