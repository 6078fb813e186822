//! The UMD's fixed-function pipeline as generated shaders (aerogpu_umd_ff.cpp): C++ unit
//! tests that run the generated tokens on a bytecode interpreter against D3D9's lighting,
//! texture-stage and fog equations, and the device's translator taking every generated
//! vertex/pixel shader pair of varied states to WGSL that naga validates, with the pixel
//! shader's inputs among the vertex shader's outputs.

mod common;

use aero_gpu::aerogpu::d3d9::{VariantKey, translate_bytes};

const SOURCES: &[&str] = &[
    "umd/tests/test_umd_ff.cpp",
    "umd/src/aerogpu_umd_ff.cpp",
    "umd/src/aerogpu_umd_legacy.cpp",
    "umd/src/aerogpu_umd_core.cpp",
    "umd/src/aerogpu_umd_core_draw.cpp",
    "umd/src/aerogpu_umd_core_copy.cpp",
];

fn validate(wgsl: &str) {
    let module = naga::front::wgsl::parse_str(wgsl).unwrap_or_else(|e| panic!("{e}\n{wgsl}"));
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::default(),
    )
    .validate(&module)
    .unwrap_or_else(|e| panic!("{e:?}\n{wgsl}"));
}

/// One build (the sanitized C++ build is the slow part) for both checks.
#[test]
fn unit_tests_pass_and_generated_shaders_translate_to_valid_wgsl() {
    let exe = common::build("test_umd_ff", SOURCES, true, false).unwrap();
    let units = common::run(&exe, &[]);
    assert!(units.contains(" 0 failures"), "{units}");
    let dir = common::out_dir().join(format!("ff-dump-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = common::run(&exe, &["dump", dir.to_str().unwrap()]);
    let count: usize = out
        .trim()
        .strip_prefix("dumped ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(count >= 12, "{out}");
    for n in 0..count {
        let vs = std::fs::read(dir.join(format!("{n}.vs"))).unwrap();
        let ps = std::fs::read(dir.join(format!("{n}.ps"))).unwrap();
        let ps_out = translate_bytes(&ps, &VariantKey::default())
            .unwrap_or_else(|e| panic!("pair {n}: pixel shader: {e}"));
        validate(&ps_out.wgsl);
        let vs_plain = translate_bytes(&vs, &VariantKey::default())
            .unwrap_or_else(|e| panic!("pair {n}: vertex shader: {e}"));
        validate(&vs_plain.wgsl);
        // What the pixel shader reads, the vertex shader writes.
        assert_eq!(
            ps_out.varyings & !vs_plain.varyings,
            0,
            "pair {n}: ps reads {:#x}, vs writes {:#x}",
            ps_out.varyings,
            vs_plain.varyings
        );
        let key = VariantKey {
            vs_outputs: Some(ps_out.varyings),
            ..VariantKey::default()
        };
        let vs_linked = translate_bytes(&vs, &key).unwrap();
        validate(&vs_linked.wgsl);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
