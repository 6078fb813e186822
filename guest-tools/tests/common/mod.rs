//! Compiles host C/C++ test programs from `drivers/aerogpu` with the host compiler
//! (`AERO_CC` / `AERO_CXX` override `cc` / `c++`) into the target directory.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn drivers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("drivers/aerogpu")
}

pub fn out_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("guest-tools-host");
    std::fs::create_dir_all(&d).expect("create test output dir");
    d
}

/// Builds `sources` (relative to drivers/aerogpu) into an executable named `name`, with
/// warnings as errors; `m32` builds the 32-bit variant (skipped, returning None, when the
/// compiler cannot target i386).
pub fn build(name: &str, sources: &[&str], cxx: bool, m32: bool) -> Option<PathBuf> {
    let compiler = if cxx {
        std::env::var("AERO_CXX").unwrap_or_else(|_| "c++".into())
    } else {
        std::env::var("AERO_CC").unwrap_or_else(|_| "cc".into())
    };
    let exe = out_dir().join(if m32 {
        format!("{name}-m32")
    } else {
        name.to_string()
    });
    let mut cmd = Command::new(&compiler);
    cmd.args(["-O1", "-g", "-Wall", "-Wextra", "-Werror"]);
    cmd.arg(if cxx { "-std=c++17" } else { "-std=c11" });
    if m32 {
        cmd.arg("-m32");
    }
    cmd.arg("-fsanitize=address,undefined")
        .arg("-fno-sanitize-recover=all");
    if m32 {
        // ASan on i386 needs multilib runtime pieces that are often missing.
        cmd.args(["-fno-sanitize=address"]);
    }
    for s in sources {
        if cxx && s.ends_with(".c") {
            // C sources of a C++ program: compile them as C first.
            cmd.arg(compile_c_object(name, s, m32));
        } else {
            cmd.arg(drivers_dir().join(s));
        }
    }
    cmd.arg("-o").arg(&exe);
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {compiler}: {e}"));
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if m32
            && (err.contains("cannot find")
                || err.contains("No such file")
                || err.contains("bits/"))
        {
            eprintln!(
                "skipping -m32 build of {name}: no i386 multilib ({})",
                err.lines().next().unwrap_or("")
            );
            return None;
        }
        panic!("{compiler} failed for {name}:\n{err}");
    }
    Some(exe)
}

/// Builds and runs a unit-test program (see `build`) whose last line is
/// "N checks, M failures"; panics unless it exits 0 with no failures. Returns its stdout,
/// or None when the `m32` variant cannot be built.
pub fn run_unit_tests(name: &str, sources: &[&str], cxx: bool, m32: bool) -> Option<String> {
    let exe = build(name, sources, cxx, m32)?;
    let out = run(&exe, &[]);
    assert!(out.contains(" 0 failures"), "{out}");
    Some(out)
}

/// Runs `exe args` and panics with its output unless it exits 0; returns stdout.
pub fn run(exe: &Path, args: &[&str]) -> String {
    let out = Command::new(exe)
        .args(args)
        .output()
        .expect("run test program");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{} {:?} failed ({}):\n{}\n{}",
        exe.display(),
        args,
        out.status,
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn compile_c_object(name: &str, source: &str, m32: bool) -> PathBuf {
    let cc = std::env::var("AERO_CC").unwrap_or_else(|_| "cc".into());
    let stem = source.replace(['/', '.'], "_");
    let obj = out_dir().join(format!("{name}-{stem}{}.o", if m32 { "-m32" } else { "" }));
    let mut cmd = Command::new(&cc);
    cmd.args(["-O1", "-g", "-Wall", "-Wextra", "-Werror", "-std=c11", "-c"]);
    cmd.arg("-fsanitize=address,undefined");
    if m32 {
        cmd.args(["-m32", "-fno-sanitize=address"]);
    }
    cmd.arg(drivers_dir().join(source)).arg("-o").arg(&obj);
    let out = cmd.output().unwrap_or_else(|e| panic!("running {cc}: {e}"));
    assert!(
        out.status.success(),
        "{cc} failed for {source}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    obj
}

/// Replays a driver trace file on the Rust device and checks it ran clean: no failed
/// check, no latched error, no failed submission, and `fence` completed.
pub fn replay_clean(trace: &Path, fence: u64) -> aero_guest_tools::replay::ReplayOutcome {
    replay_clean_with(trace, fence, aero_gpu::aerogpu::NullExecutor::default())
}

/// `replay_clean` with the device running its commands on `executor`.
pub fn replay_clean_with<E: aero_gpu::aerogpu::Executor>(
    trace: &Path,
    fence: u64,
    executor: E,
) -> aero_guest_tools::replay::ReplayOutcome<E> {
    let out =
        aero_guest_tools::replay::replay_with(&std::fs::read(trace).unwrap(), executor).unwrap();
    out.check().unwrap();
    assert_eq!(
        out.error.count, 0,
        "device latched an error: {:?}",
        out.error
    );
    assert_eq!(out.stats.failed_submissions, 0);
    assert_eq!(out.completed_fence, fence);
    out
}

/// Runs `guest-tools/build.sh` (mingw-w64) into a directory of its own, named by `name`
/// and this process; returns it.
pub fn build_drivers(name: &str) -> PathBuf {
    // Per process: nextest runs every test in its own process, and two processes building
    // into one directory at once would mix their outputs.
    let pid = std::process::id();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("guest-tools-pe-{pid}-{name}"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("build.sh");
    // Both builds sign with the same (build-time generated) key, so they can be compared.
    let key_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("guest-tools-pe-{pid}-key"));
    let _ = std::fs::remove_dir_all(&out);
    let res = Command::new("sh")
        .arg(&script)
        .arg(&out)
        .env("AERO_SIGN_DIR", &key_dir)
        .output()
        .expect("run build.sh");
    assert!(
        res.status.success(),
        "build.sh failed (mingw-w64 packages: gcc-mingw-w64-i686 gcc-mingw-w64-x86-64 \
         g++-mingw-w64-i686 g++-mingw-w64-x86-64):\n{}\n{}",
        String::from_utf8_lossy(&res.stdout),
        String::from_utf8_lossy(&res.stderr)
    );
    out
}

/// Builds `tests_host/umd_wine_scene.cpp` for Windows with the mingw-w64 toolchain of
/// `triple` (x86_64-w64-mingw32 or i686-w64-mingw32): its C parts (trace recorder, KMD
/// portable code) with gcc, then a static link so no mingw runtime DLLs are needed.
/// Returns the program, in a directory of its own per triple and process (nextest runs
/// tests in parallel processes).
pub fn build_umd_scene(triple: &str) -> PathBuf {
    let pid = std::process::id();
    let out = out_dir().join(format!("umd-scene-{triple}-{pid}"));
    std::fs::create_dir_all(&out).unwrap();
    let drivers = drivers_dir();
    let flags = ["-O1", "-Wall", "-Wextra", "-Werror"];
    let mut objects = Vec::new();
    for c in [
        "tests_host/agpu_trace.c",
        "kmd/portable/agpu_kmd_portable.c",
    ] {
        let obj = out.join(c.replace(['/', '.'], "_") + ".o");
        let res = Command::new(format!("{triple}-gcc"))
            .args(flags)
            .args(["-std=c11", "-c"])
            .arg(drivers.join(c))
            .arg("-o")
            .arg(&obj)
            .output()
            .unwrap_or_else(|e| panic!("{triple}-gcc (package gcc-mingw-w64): {e}"));
        assert!(
            res.status.success(),
            "{c}: {}",
            String::from_utf8_lossy(&res.stderr)
        );
        objects.push(obj);
    }
    let exe = out.join("umd_wine_scene.exe");
    let res = Command::new(format!("{triple}-g++"))
        .args(flags)
        .arg("-std=c++17")
        .arg(drivers.join("tests_host/umd_wine_scene.cpp"))
        .args(&objects)
        .args(["-static", "-o"])
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("{triple}-g++ (package g++-mingw-w64): {e}"));
    assert!(
        res.status.success(),
        "umd_wine_scene.cpp: {}",
        String::from_utf8_lossy(&res.stderr)
    );
    exe
}

/// The scene's "shared alloc_ids A B C" line: consecutive values of one cross-process
/// counter (the middle one taken by the child process), all in the UMD's range.
pub fn check_shared_alloc_ids(stdout: &str) {
    let ids: Vec<u32> = stdout
        .lines()
        .find_map(|l| l.strip_prefix("shared alloc_ids "))
        .expect("no shared alloc_ids line")
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(ids.len(), 3, "{stdout}");
    assert!(ids[0] > 0 && ids[2] < 0x8000_0000, "{ids:?}");
    assert_eq!(ids, vec![ids[0], ids[0] + 1, ids[0] + 2]);
}

/// The scene's "submissions N renders R presents P" line: render submissions
/// (pfnRenderCb) plus its two presents. Returns (N, R).
pub fn scene_submissions(stdout: &str) -> (u64, u64) {
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("submissions "))
        .expect("no summary line");
    let fields: Vec<&str> = summary.split_whitespace().collect();
    let submissions: u64 = fields[1].parse().unwrap();
    let renders: u64 = fields[3].parse().unwrap();
    assert_eq!(fields[5], "2", "presents: {summary}");
    assert_eq!(submissions, renders + 2, "{summary}");
    (submissions, renders)
}
