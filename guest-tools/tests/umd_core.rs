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
            "tests_host/agpu_trace.c",
            "kmd/portable/agpu_kmd_portable.c",
        ],
        true,
        false,
    )
    .unwrap();
    let path = common::out_dir().join("umd_scene.trace");
    let stdout = common::run(&exe, &[path.to_str().unwrap()]);
    assert!(stdout.contains("submissions 9"), "{stdout}");
    let out = common::replay_clean(&path, 9);
    // Resource handles the scene created: RT 0x1000 (shared), DS 0x1001, VB 0x1002,
    // IB 0x1003, texture 0x1004 (destroyed at the end). DWM's alias was imported and
    // destroyed again: the RT is back to one reference and its token is still exported.
    let objects = out.device.processor().objects();
    assert_eq!(objects.resource_count(), 4);
    assert_eq!(objects.refcount(0x1000), Some(1));
    assert_eq!(objects.shared_token_count(), 1);
    assert!(objects.shared_resource(0x1122_3344_5566_7788).is_some());
    assert!(objects.resource(0x1004).is_err());
    assert!(objects.resource(0x1002).is_ok());
}
