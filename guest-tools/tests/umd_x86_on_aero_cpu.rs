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
//! The scene's second process (CreateProcessA of itself with "child", output through a
//! pipe) runs too, on a machine of its own while the parent waits, with the named section
//! holding the shared alloc_id counter handed over at its start and back at its end (see
//! `win32_user.rs`): the three alloc_ids must be consecutive across the two processes.
//!
//! Not covered: processes or threads running at the same time, and anything of real
//! Windows beyond the documented function contracts.

mod common;
#[path = "common/win32_user.rs"]
mod win32_user;
#[path = "common/x86_host.rs"]
mod x86_host;

use std::path::Path;
use std::process::Command;

use win32_user::{Process, Signature, TableHook};
use x86_host::{Emu, Layout};

const COMPILER: &str = "i686-w64-mingw32-gcc";

/// Every function-pointer member the interposer follows: (structure, member), with the
/// device table taken whole from the header's X-list.
const CALLBACKS: [&str; 22] = [
    "pfnAllocateCb",
    "pfnDeallocateCb",
    "pfnSetPriorityCb",
    "pfnQueryResidencyCb",
    "pfnSetDisplayModeCb",
    "pfnPresentCb",
    "pfnRenderCb",
    "pfnLockCb",
    "pfnUnlockCb",
    "pfnEscapeCb",
    "pfnCreateOverlayCb",
    "pfnUpdateOverlayCb",
    "pfnFlipOverlayCb",
    "pfnDestroyOverlayCb",
    "pfnCreateContextCb",
    "pfnDestroyContextCb",
    "pfnCreateSynchronizationObjectCb",
    "pfnDestroySynchronizationObjectCb",
    "pfnWaitForSynchronizationObjectCb",
    "pfnSignalSynchronizationObjectCb",
    "pfnSetAsyncCallbacksCb",
    "pfnSetDisplayPrivateDriverFormatCb",
];
const ADAPTER_FUNCS: [&str; 3] = ["pfnGetCaps", "pfnCreateDevice", "pfnCloseAdapter"];
const ADAPTER_CALLBACKS: [&str; 1] = ["pfnQueryAdapterInfoCb"];

/// A function-pointer member: its offset in its table and the stack bytes of its
/// arguments.
struct Member {
    ty: String,
    name: String,
    offset: u32,
    arg_bytes: u32,
}

/// The DDI tables as mingw-w64 compiles `d3dumddi.h` for i686: a probe declares a
/// function of each member's type, and the compiler's stdcall decoration of its name
/// (`name@bytes`) is the argument size from the prototype. A member that is not stdcall
/// has no decoration and fails the probe.
fn probe_tables(dir: &Path) -> Vec<Member> {
    let header = common::drivers_dir().join("include/d3dumddi.h");
    let mut members: Vec<(&str, &str)> = Vec::new();
    members.extend(CALLBACKS.iter().map(|m| ("D3DDDI_DEVICECALLBACKS", *m)));
    members.extend(ADAPTER_FUNCS.iter().map(|m| ("D3DDDI_ADAPTERFUNCS", *m)));
    members.extend(
        ADAPTER_CALLBACKS
            .iter()
            .map(|m| ("D3DDDI_ADAPTERCALLBACKS", *m)),
    );
    let mut c = format!(
        "#include \"{}\"\n#include <stddef.h>\n\
         #define DECL(T, m) extern __typeof__(*((T *)0)->m) agpu_bytes_##T##__##m;\n\
         #define REF(T, m) (const void *)&agpu_bytes_##T##__##m, (const void *)offsetof(T, m),\n\
         #define DEV_DECL(name, upper, params) DECL(D3DDDI_DEVICEFUNCS, pfn##name)\n\
         #define DEV_REF(name, upper, params) REF(D3DDDI_DEVICEFUNCS, pfn##name)\n\
         AEROGPU_D3DDDI_DEVICEFUNCS_LIST(DEV_DECL)\n",
        header.display()
    );
    for (t, m) in &members {
        c += &format!("DECL({t}, {m})\n");
    }
    c += "const void *const agpu_ddi_probe[] = {\nAEROGPU_D3DDDI_DEVICEFUNCS_LIST(DEV_REF)\n";
    for (t, m) in &members {
        c += &format!("REF({t}, {m})\n");
    }
    c += "};\n";
    std::fs::create_dir_all(dir).unwrap();
    let (src, asm) = (dir.join("ddi_probe.c"), dir.join("ddi_probe.s"));
    std::fs::write(&src, c).unwrap();
    let out = Command::new(COMPILER)
        .args(["-std=gnu11", "-S", "-O0", "-o"])
        .arg(&asm)
        .arg(&src)
        .output()
        .expect(COMPILER);
    assert!(
        out.status.success(),
        "DDI probe: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&asm).unwrap();
    let words: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("_agpu_ddi_probe:"))
        .skip(1)
        .map_while(|l| l.trim().strip_prefix(".long"))
        .map(str::trim)
        .collect();
    let result: Vec<Member> = words
        .chunks(2)
        .map(|pair| {
            let symbol = pair[0].strip_prefix("_agpu_bytes_").expect(pair[0]);
            let (member, bytes) = symbol
                .split_once('@')
                .unwrap_or_else(|| panic!("{symbol} is not stdcall"));
            let (ty, name) = member.split_once("__").unwrap();
            Member {
                ty: ty.into(),
                name: name.into(),
                offset: pair[1].parse().unwrap(),
                arg_bytes: bytes.parse().unwrap(),
            }
        })
        .collect();
    assert_eq!(result.len(), 121 + members.len(), "probe output:\n{text}");
    result
}

/// How the D3D9 runtime reaches the DLL: the exported OpenAdapter (one pointer, as
/// documented), the adapter table it fills, the device table pfnCreateDevice fills, and
/// the runtime's callback tables handed to both.
fn umd_signatures(dir: &Path) -> Vec<Signature> {
    let members = probe_tables(dir);
    let layout = Layout::probe(
        COMPILER,
        &["-std=gnu11"],
        &common::drivers_dir().join("include/d3dumddi.h"),
        &[
            "D3DDDIARG_OPENADAPTER.pAdapterCallbacks",
            "D3DDDIARG_OPENADAPTER.pAdapterFuncs",
            "D3DDDIARG_CREATEDEVICE.pCallbacks",
            "D3DDDIARG_CREATEDEVICE.pDeviceFuncs",
        ],
        &dir.join("layout"),
    );
    let table =
        |ty: &str, arg, field: &str, before, nested: &dyn Fn(&str) -> Vec<TableHook>| TableHook {
            arg,
            field: layout.get(field),
            before,
            entries: members
                .iter()
                .filter(|m| m.ty == ty)
                .map(|m| {
                    let name = m.name.trim_start_matches("pfn").to_string();
                    let tables = nested(&name);
                    (
                        m.offset,
                        Signature {
                            name,
                            arg_bytes: m.arg_bytes,
                            tables,
                        },
                    )
                })
                .collect(),
        };
    let none = |_: &str| Vec::new();
    let create_device = |name: &str| match name {
        "CreateDevice" => vec![
            table(
                "D3DDDI_DEVICECALLBACKS",
                1,
                "D3DDDIARG_CREATEDEVICE.pCallbacks",
                true,
                &none,
            ),
            table(
                "D3DDDI_DEVICEFUNCS",
                1,
                "D3DDDIARG_CREATEDEVICE.pDeviceFuncs",
                false,
                &none,
            ),
        ],
        _ => Vec::new(),
    };
    let open_tables = vec![
        table(
            "D3DDDI_ADAPTERCALLBACKS",
            0,
            "D3DDDIARG_OPENADAPTER.pAdapterCallbacks",
            true,
            &none,
        ),
        table(
            "D3DDDI_ADAPTERFUNCS",
            0,
            "D3DDDIARG_OPENADAPTER.pAdapterFuncs",
            false,
            &create_device,
        ),
    ];
    [
        "OpenAdapter",
        "OpenAdapter2",
        "OpenAdapterFromHdc",
        "OpenAdapterFromLuid",
    ]
    .iter()
    .map(|name| Signature {
        name: name.to_string(),
        arg_bytes: 4,
        tables: open_tables.clone(),
    })
    .collect()
}

#[test]
fn shipped_x86_umd_draws_on_aero_cpu_and_its_submissions_replay_on_the_device() {
    run_scene(false);
}

/// With AEROGPU_D3D9_TRACE=1 the device table holds the UMD's recording trampolines,
/// which forward every argument to the real entry: their stdcall frames are checked the
/// same way, and the dump at DestroyDevice must list exactly the calls the host made.
#[test]
fn shipped_x86_umd_call_tracing_forwards_every_ddi_on_aero_cpu() {
    let process = run_scene(true);
    let log = &process.debug_output;
    let header = log
        .lines()
        .find_map(|l| l.strip_prefix("aerogpu-d3d9 trace: last "))
        .expect("no trace dump at DestroyDevice");
    let (shown, total) = header
        .strip_suffix(" calls")
        .and_then(|h| h.split_once(" of "))
        .expect(header);
    let mut traced = std::collections::BTreeMap::<String, u64>::new();
    for line in log
        .lines()
        .filter_map(|l| l.strip_prefix("aerogpu-d3d9 trace: pfn"))
    {
        let (name, hr) = line.split_once(" -> ").expect(line);
        assert_eq!(hr, "0x00000000", "{line}");
        *traced.entry(name.to_string()).or_default() += 1;
    }
    let n: u64 = traced.values().sum();
    assert_eq!(
        (shown, total),
        (n.to_string().as_str(), n.to_string().as_str())
    );
    for (name, count) in &traced {
        assert_eq!(process.interposed_calls.get(name), Some(count), "{name}");
    }
    assert!(traced.contains_key("DrawPrimitive") && traced.contains_key("DestroyDevice"));
}

/// Runs the scene (with the UMD's call tracing on or off), checks it and replays its
/// trace; returns the process for further checks.
fn run_scene(trace_calls: bool) -> Process {
    let drivers = common::build_drivers("umd-x86-cpu");
    let dll = drivers.join("x86/aerogpu/aerogpu_d3d9.dll");
    let exe = common::build_umd_scene("i686-w64-mingw32");
    let trace = exe.with_file_name("umd_x86_scene.trace");
    let _ = std::fs::remove_file(&trace);

    let mut emu = Emu::new(x86_host::host_gpu(), 32);
    emu.max_instructions_per_call = 4_000_000_000;
    let args = [exe.as_path(), trace.as_path(), dll.as_path()]
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let mut process = Process::new(&mut emu, args).unwrap();
    if trace_calls {
        process
            .environment
            .insert("AEROGPU_D3D9_TRACE".into(), "1".into());
    }
    let signatures = umd_signatures(&exe.with_file_name("probe"));
    process
        .interposed_exports
        .insert("aerogpu_d3d9.dll".into(), signatures);
    let result = process.run(&mut emu);
    let stdout = process.stdout.clone();
    eprintln!(
        "guest stdout:\n{stdout}\n{} guest instructions",
        emu.instructions
    );
    let code = result.unwrap_or_else(|e| panic!("the scene failed on Aero's CPU: {e}"));
    assert_eq!(code, 0, "scene exit code");

    common::check_shared_alloc_ids(&stdout);
    // The child opened its own adapter and device through the checked DDIs.
    let [child] = &process.children[..] else {
        panic!("{} child processes", process.children.len());
    };
    assert_eq!((child.args[1].as_str(), child.exit_code), ("child", 0));
    for name in [
        "OpenAdapter",
        "CreateDevice",
        "CreateResource",
        "DestroyDevice",
        "CloseAdapter",
    ] {
        assert_eq!(child.interposed_calls.get(name), Some(&1), "child {name}");
    }
    let (submissions, renders) = common::scene_submissions(&stdout);
    // Every DDI and callback of the scene went through the host's checked calls.
    let calls = &process.interposed_calls;
    eprintln!("interposed calls: {calls:?}");
    let count = |name: &str| calls.get(name).copied().unwrap_or(0);
    for (name, n) in [
        ("OpenAdapter", 1),
        ("GetCaps", 1),
        ("CreateDevice", 1),
        ("CreateResource", 4),
        ("Lock", 1),
        ("Unlock", 1),
        ("CreateVertexShaderFunc", 1),
        ("CreatePixelShader", 1),
        ("CreateVertexShaderDecl", 1),
        ("Clear", 2),
        ("DrawPrimitive", 2),
        ("Present", 2),
        ("Flush", 1),
        ("DestroyDevice", 1),
        ("CloseAdapter", 1),
        ("PresentCb", 2),
        ("CreateContextCb", 1),
    ] {
        assert_eq!(count(name), n, "{name}: {calls:?}");
    }
    assert_eq!(count("RenderCb"), renders, "{calls:?}");
    assert!(
        count("AllocateCb") >= 4 && count("LockCb") >= 1,
        "{calls:?}"
    );
    let replay = common::replay_clean(&trace, submissions);
    let device = replay.device.executor();
    assert_eq!(device.draws, 2, "one draw per frame");
    assert_eq!(device.presents, 2);
    process
}

/// The harness's own checks can fail: a tiny mingw program loads a tiny DLL and calls an
/// export through the interposer. A stdcall export with the right size passes and the
/// program's printf output arrives intact; a cdecl export declared stdcall is caught by
/// the stack check; an import the personality does not answer ends the run with its name.
#[test]
fn win32_personality_catches_a_wrong_convention_and_names_missing_functions() {
    let dir = common::out_dir().join(format!("win32-selftest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sources = [
        (
            "selftest.c",
            "__declspec(dllexport) int __stdcall add_one(int a) { return a + 1; }\n\
             __declspec(dllexport) int __cdecl not_stdcall(int a) { return a + 1; }\n",
        ),
        (
            "prog.c",
            "#include <windows.h>\n#include <stdio.h>\n\
             int main(int argc, char **argv) {\n\
                 HMODULE m = LoadLibraryA(argv[1]);\n\
                 int(__stdcall *f)(int) = (int(__stdcall *)(int))(void *)GetProcAddress(m, argv[2]);\n\
                 if (!f) return 2;\n\
                 fprintf(stdout, \"[%d|%5s|%-4x|%08X|%lld|%c|%%|%.3u]\\n\", -5, \"ab\", 255, 0xBEEFu, -3LL, 'z', 7u);\n\
                 fprintf(stdout, \"result %d\\n\", f(41));\n\
                 if (argc > 3) GetTickCount();\n\
                 return 0;\n\
             }\n",
        ),
    ];
    for (name, text) in sources {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let dll = dir.join("selftest.dll");
    let exe = dir.join("prog.exe");
    for (out, src, extra) in [
        (&dll, "selftest.c", &["-shared", "-Wl,--kill-at"][..]),
        (&exe, "prog.c", &[][..]),
    ] {
        let res = Command::new(COMPILER)
            .args(["-O1", "-Wall", "-Werror"])
            .args(extra)
            .arg(dir.join(src))
            .arg("-o")
            .arg(out)
            .output()
            .expect(COMPILER);
        assert!(
            res.status.success(),
            "{src}: {}",
            String::from_utf8_lossy(&res.stderr)
        );
    }
    let run = |export: &str, extra: bool| -> (Result<u32, String>, String) {
        let mut emu = Emu::new(x86_host::host_gpu(), 32);
        let mut args: Vec<String> = [&exe, &dll]
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        args.push(export.into());
        if extra {
            args.push("missing".into());
        }
        let mut process = Process::new(&mut emu, args).unwrap();
        let sigs = ["add_one", "not_stdcall"].map(|name| Signature {
            name: name.into(),
            arg_bytes: 4,
            tables: Vec::new(),
        });
        process
            .interposed_exports
            .insert("selftest.dll".into(), sigs.to_vec());
        let result = process.run(&mut emu);
        (result, process.stdout)
    };
    let (result, stdout) = run("add_one", false);
    assert_eq!(result, Ok(0));
    assert_eq!(stdout, "[-5|   ab|ff  |0000BEEF|-3|z|%|007]\nresult 42\n");
    let err = run("not_stdcall", false).0.unwrap_err();
    assert!(
        err.starts_with("not_stdcall: ") && err.contains("wrong argument count"),
        "{err}"
    );
    let err = run("add_one", true).0.unwrap_err();
    assert!(
        err.contains("kernel32.dll!GetTickCount is not implemented"),
        "{err}"
    );
}
