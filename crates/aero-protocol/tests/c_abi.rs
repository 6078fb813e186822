//! Cross-checks the Rust mirror against the C headers, which are the ABI's source of
//! truth: the test parses the headers for every struct, field, `#define` and enum value,
//! compiles a C program that prints their sizes/offsets/values with the host `cc`
//! (`AERO_CC` overrides), and compares both ways — a name or value present on one side
//! only fails the test. The same program is built with `-m32` when the compiler can, so
//! the x86 layout is checked too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const HEADERS: &[&str] = &[
    "aerogpu_abi_common.h",
    "aerogpu_pci.h",
    "aerogpu_ring.h",
    "aerogpu_cmd.h",
    "aerogpu_wddm_alloc.h",
    "aerogpu_escape.h",
    "aerogpu_dbgctl_escape.h",
];

/// Function-like or non-value macros that are not ABI constants.
fn is_helper_macro(name: &str) -> bool {
    name.ends_with("_H")
        || name.starts_with("AEROGPU_STATIC_ASSERT")
        || name.starts_with("AEROGPU_SA_")
        || name.starts_with("AEROGPU_ASSERT_")
}

fn protocol_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../guest-tools/drivers/aerogpu/protocol")
}

/// What the headers declare: struct name -> field names in order, and constant names.
#[derive(Default)]
struct HeaderSymbols {
    structs: BTreeMap<String, Vec<String>>,
    constants: Vec<String>,
}

fn strip_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut rest = src;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        match rest[start..].find("*/") {
            Some(end) => rest = &rest[start + end + 2..],
            None => rest = "",
        }
    }
    out.push_str(rest);
    out
}

fn parse_headers() -> HeaderSymbols {
    let mut syms = HeaderSymbols::default();
    for header in HEADERS {
        let path = protocol_dir().join(header);
        let src =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let src = strip_comments(&src);
        let mut current_struct: Option<(String, Vec<String>)> = None;
        let mut in_enum = false;
        for line in src.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("#define ") {
                let name = rest
                    .split(|c: char| c.is_whitespace() || c == '(')
                    .next()
                    .unwrap();
                if !is_helper_macro(name) && !rest[name.len()..].starts_with('(') {
                    syms.constants.push(name.to_string());
                }
                continue;
            }
            if let Some(name) = line
                .strip_prefix("struct ")
                .and_then(|rest| rest.strip_suffix(" {"))
            {
                current_struct = Some((name.to_string(), Vec::new()));
                continue;
            }
            if line.starts_with("enum ") && line.ends_with('{') {
                in_enum = true;
                continue;
            }
            if line.starts_with('}') {
                if let Some((name, fields)) = current_struct.take() {
                    syms.structs.insert(name, fields);
                }
                in_enum = false;
                continue;
            }
            if in_enum {
                let name = line
                    .split(|c: char| c.is_whitespace() || c == '=' || c == ',')
                    .next()
                    .unwrap_or("");
                if !name.is_empty() {
                    syms.constants.push(name.to_string());
                }
                continue;
            }
            if let Some((_, fields)) = current_struct.as_mut() {
                // "type name;" or "type name[N];"
                let decl = line.trim_end_matches(';');
                let last = decl.split_whitespace().last().unwrap_or("");
                let name = last.split('[').next().unwrap_or("");
                if !name.is_empty() {
                    fields.push(name.to_string());
                }
            }
        }
    }
    syms
}

fn c_program(syms: &HeaderSymbols) -> String {
    let mut c = String::new();
    for h in HEADERS {
        c.push_str(&format!("#include \"{h}\"\n"));
    }
    c.push_str("#include <stdio.h>\nint main(void) {\n");
    for (name, fields) in &syms.structs {
        c.push_str(&format!(
            "    printf(\"size {name} %lu\\n\", (unsigned long)sizeof(struct {name}));\n"
        ));
        for f in fields {
            c.push_str(&format!(
                "    printf(\"field {name}.{f} %lu %lu\\n\", (unsigned long)offsetof(struct {name}, {f}), \
                 (unsigned long)sizeof(((struct {name} *)0)->{f}));\n"
            ));
        }
    }
    for k in &syms.constants {
        c.push_str(&format!(
            "    printf(\"const {k} %llu\\n\", (unsigned long long)({k}));\n"
        ));
    }
    c.push_str("    return 0;\n}\n");
    c
}

/// Compiles and runs the program; `None` if the compiler cannot target `extra_flags`.
fn run_c(src: &str, tag: &str, extra_flags: &[&str], required: bool) -> Option<String> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("aero_protocol_c_abi");
    std::fs::create_dir_all(&dir).unwrap();
    let c_path = dir.join(format!("abi_{tag}.c"));
    let exe = dir.join(format!("abi_{tag}"));
    std::fs::write(&c_path, src).unwrap();
    let cc = std::env::var("AERO_CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .args(extra_flags)
        .arg("-I")
        .arg(protocol_dir())
        .arg(&c_path)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cc}: {e}"));
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        if required {
            panic!("{cc} {extra_flags:?} failed:\n{stderr}");
        }
        eprintln!("note: {cc} {extra_flags:?} unavailable, skipping that layout:\n{stderr}");
        return None;
    }
    let run = Command::new(&exe)
        .output()
        .expect("run compiled ABI program");
    assert!(run.status.success());
    Some(String::from_utf8(run.stdout).unwrap())
}

/// The lines the C program prints, computed from the Rust mirror.
fn rust_expected() -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for l in aero_protocol::all_layouts() {
        m.insert(format!("size {}", l.c_name), l.size.to_string());
        for &(f, off, size) in l.fields {
            m.insert(format!("field {}.{f}", l.c_name), format!("{off} {size}"));
        }
    }
    for (k, v) in aero_protocol::all_constants() {
        m.insert(format!("const {k}"), v.to_string());
    }
    m
}

fn parse_output(out: &str) -> BTreeMap<String, String> {
    out.lines()
        .map(|l| {
            let mut parts = l.splitn(3, ' ');
            let kind = parts.next().unwrap();
            let name = parts.next().unwrap();
            (
                format!("{kind} {name}"),
                parts.next().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn compare(c: &BTreeMap<String, String>, rust: &BTreeMap<String, String>, tag: &str) {
    let mut problems = Vec::new();
    for (k, v) in c {
        match rust.get(k) {
            None => problems.push(format!("{k} = {v} in C, missing in Rust")),
            Some(rv) if rv != v => problems.push(format!("{k}: C {v}, Rust {rv}")),
            _ => {}
        }
    }
    for k in rust.keys().filter(|k| !c.contains_key(*k)) {
        problems.push(format!("{k} in Rust, missing in C"));
    }
    assert!(
        problems.is_empty(),
        "[{tag}] C/Rust ABI mismatch:\n{}",
        problems.join("\n")
    );
}

#[test]
fn c_headers_match_rust_mirror() {
    let syms = parse_headers();
    assert!(
        syms.structs.len() >= 50,
        "header parser found only {} structs",
        syms.structs.len()
    );
    assert!(
        syms.constants.len() >= 200,
        "header parser found only {} constants",
        syms.constants.len()
    );
    let src = c_program(&syms);
    let rust = rust_expected();

    let native = parse_output(&run_c(&src, "native", &[], true).unwrap());
    compare(&native, &rust, "native");

    match run_c(&src, "m32", &["-m32"], false) {
        Some(out) => compare(&parse_output(&out), &rust, "-m32"),
        None => eprintln!("x86 (-m32) layout not checked: install gcc-multilib"),
    }
}

/// A C file asserting, at compile time, every Rust size/offset/constant. Compiling it
/// checks a target's layout without running anything (for cross compilers).
fn static_assert_program() -> String {
    let mut c = String::new();
    for h in HEADERS {
        c.push_str(&format!("#include \"{h}\"\n"));
    }
    for l in aero_protocol::all_layouts() {
        let name = l.c_name;
        c.push_str(&format!(
            "_Static_assert(sizeof(struct {name}) == {}, \"size {name}\");\n",
            l.size
        ));
        for &(f, off, size) in l.fields {
            c.push_str(&format!(
                "_Static_assert(offsetof(struct {name}, {f}) == {off} && sizeof(((struct {name} *)0)->{f}) == {size}, \"{name}.{f}\");\n"
            ));
        }
    }
    for (k, v) in aero_protocol::all_constants() {
        c.push_str(&format!(
            "_Static_assert((unsigned long long)({k}) == {v}ull, \"{k}\");\n"
        ));
    }
    c.push_str("int main(void) { return 0; }\n");
    c
}

/// The Windows targets the drivers are built for (mingw-w64 follows the MSVC layout rules,
/// e.g. 8-byte aligned uint64_t on x86), when their cross compilers are installed.
#[test]
fn layout_holds_on_windows_targets() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("aero_protocol_c_abi");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("static_asserts.c");
    std::fs::write(&path, static_assert_program()).unwrap();
    // The host compiler must accept it too: this keeps the generator itself honest.
    let mut compilers = vec![std::env::var("AERO_CC").unwrap_or_else(|_| "cc".to_string())];
    let mut checked = Vec::new();
    for cross in ["i686-w64-mingw32-gcc", "x86_64-w64-mingw32-gcc"] {
        if Command::new(cross)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            compilers.push(cross.to_string());
        } else {
            eprintln!("note: {cross} not installed, Windows layout not checked for it");
        }
    }
    for cc in compilers {
        let out = Command::new(&cc)
            .args(["-std=c11", "-fsyntax-only", "-Wall", "-Werror", "-I"])
            .arg(protocol_dir())
            .arg(&path)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {cc}: {e}"));
        assert!(
            out.status.success(),
            "{cc}: layout mismatch:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        checked.push(cc);
    }
    eprintln!("static layout checked with: {checked:?}");
}

#[test]
fn headers_also_build_as_cxx_and_c99() {
    let mut src = String::new();
    for h in HEADERS {
        src.push_str(&format!("#include \"{h}\"\n"));
    }
    src.push_str("int main(void) { return 0; }\n");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("aero_protocol_c_abi");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("headers_only.c");
    std::fs::write(&path, &src).unwrap();
    let cc = std::env::var("AERO_CC").unwrap_or_else(|_| "cc".to_string());
    for flags in [&["-std=c99"][..], &["-x", "c++", "-std=c++11"][..]] {
        let status = Command::new(&cc)
            .args(flags)
            .args(["-Wall", "-Werror", "-fsyntax-only", "-I"])
            .arg(protocol_dir())
            .arg(&path)
            .status()
            .expect("run cc");
        assert!(status.success(), "headers fail to build with {flags:?}");
    }
}
