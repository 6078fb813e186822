//! The UMD's portable translation core: C++ unit tests, and a scripted D3D9Ex scene
//! (two "processes" sharing a surface) whose command streams go through the KMD's
//! staging/ring code into the Rust AeroGPU device with zero validation errors.

mod common;

#[test]
fn umd_core_unit_tests_pass() {
    common::run_unit_tests(
        "test_umd_core",
        &[
            "umd/tests/test_umd_core.cpp",
            "umd/src/aerogpu_umd_core.cpp",
            "umd/src/aerogpu_umd_core_draw.cpp",
            "umd/src/aerogpu_umd_core_copy.cpp",
        ],
        true,
        false,
    )
    .unwrap();
}

#[test]
fn d3d9ex_scene_runs_on_the_device_model() {
    let exe = common::build(
        "umd_scene",
        &[
            "tests_host/umd_scene.cpp",
            "umd/src/aerogpu_umd_core.cpp",
            "umd/src/aerogpu_umd_core_draw.cpp",
            "umd/src/aerogpu_umd_core_copy.cpp",
            "tests_host/agpu_trace.c",
            "kmd/portable/agpu_kmd_portable.c",
        ],
        true,
        false,
    )
    .unwrap();
    let path = common::out_dir().join("umd_scene.trace");
    let stdout = common::run(&exe, &[path.to_str().unwrap()]);
    assert!(stdout.contains("submissions 10"), "{stdout}");
    let out = common::replay_clean(&path, 10);
    // 5 frames of 2 draws; the StretchRect frame: 2 stretching blits and a fill (internal
    // draws; the same-size blit is a copy), 2 user-memory draws, 2 ordinary draws.
    assert_eq!(out.device.executor().draws, 10 + 3 + 2 + 2);
    // Resource handles the scene created: RT 0x1000 (shared), DS 0x1001, VB 0x1002,
    // IB 0x1003, texture 0x1004 (destroyed at the end), the blit target. DWM's alias was
    // imported and destroyed again: the RT is back to one reference and its token is
    // still exported. The internal shaders, layout and upload ring were released.
    let objects = out.device.processor().objects();
    assert_eq!(objects.resource_count(), 5);
    assert!(
        objects
            .resource(parse_handle(&stdout, "thumb handle "))
            .is_ok()
    );
    assert_eq!(objects.handle_count(), 5 + 2 + 1); // resources, the app's shaders and layout
    assert_eq!(objects.refcount(0x1000), Some(1));
    assert_eq!(objects.shared_token_count(), 1);
    assert!(objects.shared_resource(0x1122_3344_5566_7788).is_some());
    assert!(objects.resource(0x1004).is_err());
    assert!(objects.resource(0x1002).is_ok());
}

fn parse_handle(stdout: &str, prefix: &str) -> u32 {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no '{prefix}' line in {stdout}"));
    line[prefix.len()..].trim().parse().unwrap()
}
