//! The D3D9 program suite (`tests/d3d9/programs`, C built with mingw-w64 against the
//! standard d3d9.h) run twice under Wine by `tests/d3d9/compare.sh`: on Wine's own d3d9
//! (wined3d on OpenGL, Mesa llvmpipe, under Xvfb) and on our test runtime
//! (`tests/d3d9/runtime`) over the shipped UMD, submitting live to the AeroGPU device
//! model in `aero-d3d9-host`. Every image the programs write must match within tolerance.
//!
//! The device runs on the wgpu executor (Mesa lavapipe here), draws included: clears,
//! copies, locks, textured quads (point/linear), blending, render-to-texture, a D3D9Ex
//! DWM-style frame, shader models 1.x, 2.0/2.x and 3.0 (loops, relative addressing,
//! texldl/texldd, vPos/vFace), mipmapped and anisotropic sampling, DXT1/3/5, and depth
//! with two-sided stencil (rectangle depth clears included) match.
//! Programs that cannot match yet are listed in [`EXPECTED_TO_FAIL`] with what exactly
//! differs; they must run to completion on both.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Programs whose images match Wine's d3d9: a regression fails the test.
const PASSING: &[&str] = &[
    "clear",
    "copies",
    "lockable",
    "textured_quad",
    "blending",
    "render_to_texture",
    "dwm_frame",
    "shaders_3_0",
    "shaders_1_x",
    "shaders_2_x",
    "mipmaps",
    "dxt",
    "lod_bias",
    "shaders_3_0_flow",
    "shaders_1_x_texaddr",
    "vs_arith",
    "formats",
    "formats_alpha",
    "srgb",
    "fixed_function_lit",
    "fixed_function_stages",
    "fixed_function_fog",
    "depth_stencil",
    "bump_env",
    "cube_map",
    "volume_texture",
    "texm3x3_cube",
    "bump_ff",
];

/// Programs that run to completion on our runtime but whose pixels cannot match yet, with
/// what exactly differs. They are run and must run to completion on both; when one starts
/// matching the test says so loudly (move it to [`PASSING`]) without failing.
const EXPECTED_TO_FAIL: &[(&str, &str)] = &[];

/// Programs of the assignment not written yet. Predication is not among them: Wine 8 runs
/// `(p0)` instructions unconditionally, so it is checked against D3D9's rule by the
/// translator's unit tests (crates/aero-gpu d3d9 `setp_predication_and_breakp`).
const NOT_WRITTEN: &[&str] = &[];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn build_program(name: &str, out: &Path) -> PathBuf {
    let src = repo().join("tests/d3d9/programs").join(format!("{name}.c"));
    let exe = out.join(format!("{name}.exe"));
    let res = Command::new("x86_64-w64-mingw32-gcc")
        .args(["-O1", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg("-ld3d9")
        .output()
        .expect("x86_64-w64-mingw32-gcc (package gcc-mingw-w64-x86-64)");
    assert!(
        res.status.success(),
        "{name}.c: {}",
        String::from_utf8_lossy(&res.stderr)
    );
    exe
}

/// compare.sh's exit status and output.
fn compare(exe: &Path, outdir: &Path, cache: &Path) -> (bool, String) {
    let res = Command::new("bash")
        .arg(repo().join("tests/d3d9/compare.sh"))
        .arg(exe)
        .arg(outdir)
        .env("AERO_D3D9_HOST_BIN", env!("CARGO_BIN_EXE_aero-d3d9-host"))
        // The GPU executor (lavapipe here), the one the machine uses for D3D9.
        .env("AERO_D3D9_EXECUTOR", "wgpu")
        .env("AERO_D3D9_OUT", cache)
        .output()
        .expect("run compare.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&res.stdout),
        String::from_utf8_lossy(&res.stderr)
    );
    (res.status.success(), text)
}

#[test]
fn d3d9_programs_match_wines_d3d9() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("d3d9-suite");
    let _ = std::fs::remove_dir_all(tmp.join("runs"));
    std::fs::create_dir_all(tmp.join("bin")).unwrap();
    // Build cache (UMD, runtime, Wine prefix) kept between runs; run.sh rebuilds what is stale.
    let cache = tmp.join("cache");
    if !NOT_WRITTEN.is_empty() {
        eprintln!("d3d9 suite: not written yet: {}", NOT_WRITTEN.join(", "));
    }
    let mut failures = Vec::new();
    for name in PASSING {
        let exe = build_program(name, &tmp.join("bin"));
        let (ok, text) = compare(&exe, &tmp.join("runs").join(name), &cache);
        eprintln!("== {name}\n{text}");
        // Every image line says ok, and there is at least one.
        let images = text.lines().filter(|l| l.ends_with(" ok")).count();
        if !ok || images == 0 {
            failures.push(format!("{name}:\n{text}"));
        }
    }
    for (name, why) in EXPECTED_TO_FAIL {
        eprintln!("d3d9 suite: {name} is expected to fail: {why}");
        let exe = build_program(name, &tmp.join("bin"));
        let (ok, text) = compare(&exe, &tmp.join("runs").join(name), &cache);
        eprintln!("== {name} (expected to fail)\n{text}");
        if ok {
            eprintln!("d3d9 suite: NOTE: {name} now matches Wine's d3d9: move it to PASSING");
        } else if text.contains(" exit ") {
            // It must run to completion on both; only its pixels may differ.
            failures.push(format!("{name} did not run to completion:\n{text}"));
        }
    }
    assert!(
        failures.is_empty(),
        "programs differ from Wine's d3d9:\n{}",
        failures.join("\n")
    );

    // compare.sh itself: a program whose image depends on the runtime must fail.
    let exe = build_program("differs", &tmp.join("bin"));
    let (ok, text) = compare(&exe, &tmp.join("runs/differs"), &cache);
    assert!(!ok, "compare.sh accepted different images:\n{text}");
    assert!(
        text.contains("differs.ppm: max 200 differing 1 of 1 (tolerance 1) FAIL"),
        "{text}"
    );
}
