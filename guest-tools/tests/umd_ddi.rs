//! The UMD through its D3D9 DDI tables (OpenAdapter -> CreateDevice -> D3DDDI_DEVICEFUNCS)
//! with a fake Windows 7 runtime: complete table, exactly the documented NOTAVAILABLE stubs,
//! cached legacy state (round-trips, state blocks, nothing emitted), and a scene whose
//! WDDM submissions (pfnRenderCb/pfnPresentCb + allocation lists) go through the KMD's
//! staging/ring code into the Rust AeroGPU device with zero validation errors.

mod common;

#[test]
fn d3d9_ddi_scene_through_the_device_table_runs_on_the_device_model() {
    let exe = common::build(
        "umd_ddi_scene",
        &[
            "tests_host/umd_ddi_scene.cpp",
            "umd/src/aerogpu_umd_ddi.cpp",
            "umd/src/aerogpu_umd_caps.cpp",
            "umd/src/aerogpu_umd_core.cpp",
            "umd/src/aerogpu_umd_core_draw.cpp",
            "umd/src/aerogpu_umd_core_copy.cpp",
            "umd/src/aerogpu_umd_legacy.cpp",
            "tests_host/agpu_trace.c",
            "kmd/portable/agpu_kmd_portable.c",
        ],
        true,
        false,
    )
    .unwrap();
    let path = common::out_dir().join("umd_ddi_scene.trace");
    let stdout = common::run(&exe, &[path.to_str().unwrap()]);
    // 11 render submissions (2 Lock flushes, 3 presents, the query (with the Blt/ColorFill/
    // user-memory draws before it), the shared surface's create+export, DWM's import+fill
    // and its alias destroy, the IB destroy, DestroyDevice releasing the internal blit
    // objects and upload ring) + 3 DxgkDdiPresent ones.
    assert!(
        stdout.contains("submissions 14 renders 11 presents 3 fence 14"),
        "{stdout}"
    );
    let out = common::replay_clean(&path, 14);
    // 3 frames of 2 draws, 2 stretching Blts and a partial ColorFill (internal draws), 2
    // user-memory draws, 2 ordinary draws, 2 DrawIndexedPrimitive2 and the fills of a
    // Clear with 2 rectangles.
    assert_eq!(out.device.executor().draws, 6 + 3 + 2 + 2 + 2 + 2);
    // RT 0x1000, VB 0x1001, IB 0x1002 (destroyed at the end).
    let objects = out.device.processor().objects();
    assert!(objects.resource(0x1000).is_ok());
    assert!(objects.resource(0x1001).is_ok());
    assert!(objects.resource(0x1002).is_err());
    // Two shared surfaces (one with a KMD-assigned alloc_id, one from the cross-process
    // counter). The second was imported and released again by another process (alias
    // 0x201000 gone, one reference left, token still mapped).
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
    assert!(objects.resource(0x20_1000).is_err());
}

fn parse_shared(stdout: &str) -> (u32, u64) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("shared handle "))
        .unwrap_or_else(|| panic!("no shared line in {stdout}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    (words[2].parse().unwrap(), words[4].parse().unwrap())
}
