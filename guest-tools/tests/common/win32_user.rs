//! A small 32-bit Windows user-mode personality for [`x86_host`](crate::x86_host): one
//! process with one thread, whose kernel32 and msvcrt imports are answered in Rust from
//! their documented contracts. Enough for a mingw-w64 program and the DLLs it loads:
//! a loader (relocation, TLS, DllMain, exports), the CRT start and exit, a heap, string
//! and memory functions, TLS slots, critical sections, named pagefile sections, and
//! stdio to host files and to the test's output.
//!
//! Calls between guest modules can be interposed ([`Signature`]): the guest then calls a
//! thunk and the host makes the call with [`Emu::call`], so the callee's calling
//! convention (stdcall, its argument bytes) and callee-saved registers are checked.
//!
//! Simplifications (all documented below where they matter): paths the guest passes are
//! host paths; there is one address space without paging, so every view of a section is
//! the same memory; a wait that would block the only thread is an error. A child process
//! (CreateProcessA) runs to its end inside the call, on a machine of its own: the parent
//! cannot run meanwhile, so handing the named sections' bytes to the child at its start
//! and back at its end is the same as sharing them, and its output waits in the pipe.
//! Any function not answered here ends the test with its name.

use std::collections::BTreeMap;

use crate::x86_host::{
    Conv, Emu, Image, MAX_THUNKS, Return, STACK_BOTTOM, STACK_TOP, Services, THUNK_BASE,
};

const DLL_PROCESS_DETACH: u32 = 0;
const DLL_PROCESS_ATTACH: u32 = 1;
const ERROR_INVALID_HANDLE: u32 = 6;
const ERROR_BROKEN_PIPE: u32 = 109;
const ERROR_MOD_NOT_FOUND: u32 = 126;
const ERROR_PROC_NOT_FOUND: u32 = 127;
const ERROR_ALREADY_EXISTS: u32 = 183;
const ERROR_ENVVAR_NOT_FOUND: u32 = 203;
const ERROR_DLL_INIT_FAILED: u32 = 1114;
const INVALID_HANDLE_VALUE: u32 = 0xFFFF_FFFF;
const WAIT_OBJECT_0: u32 = 0;
const WAIT_TIMEOUT: u32 = 0x102;
const TLS_SLOTS: u32 = 64;
/// GetStdHandle's (DWORD)-10, -11, -12.
const STD_HANDLES: [u32; 3] = [0xFFFF_FFF6, 0xFFFF_FFF5, 0xFFFF_FFF4];
const STARTF_USESTDHANDLES: u32 = 0x100;
/// msvcrt's 32-bit FILE, and the entries of `_iob` (stdin, stdout, stderr, ...).
const FILE_SIZE: u32 = 32;
const IOB_ENTRIES: u32 = 20;
/// Largest single block the guest may ask the host to copy, write or allocate.
const MAX_BLOCK: u32 = 32 << 20;

/// A stdcall function the guest reaches through the host (see the module comment).
#[derive(Clone, Debug)]
pub struct Signature {
    pub name: String,
    /// Bytes of arguments on the stack, which the callee pops.
    pub arg_bytes: u32,
    /// Function tables reached through its arguments, interposed in turn.
    pub tables: Vec<TableHook>,
}

/// A table of function pointers at `*(argument arg + field)`, interposed before the call
/// (a table the caller hands over) or after a successful one (a table the callee fills).
#[derive(Clone, Debug)]
pub struct TableHook {
    pub arg: u32,
    pub field: u32,
    pub before: bool,
    /// Entries by byte offset in the table; NULL entries are left alone.
    pub entries: Vec<(u32, Signature)>,
}

pub struct Module {
    /// Lower-case file name, as GetModuleHandle matches it, and the path it came from.
    pub name: String,
    pub path: String,
    pub image: Image,
    pub is_dll: bool,
    refs: u32,
}

enum Handle {
    Section {
        addr: u32,
        size: u32,
    },
    Semaphore {
        count: u32,
        max: u32,
    },
    /// Ends of pipe `pipes[index]`.
    PipeRead(usize),
    PipeWrite(usize),
    /// A child that has run to its end, and its thread.
    Process {
        exit_code: u32,
    },
    Thread,
}

/// What a child process did, for the test.
pub struct Child {
    pub args: Vec<String>,
    pub pid: u32,
    pub exit_code: u32,
    pub interposed_calls: BTreeMap<String, u64>,
}

/// A file opened with fopen: written to the host when closed.
struct HostFile {
    path: String,
    data: Vec<u8>,
}

pub struct Process {
    pub modules: Vec<Module>,
    /// Everything the guest wrote to stdout and to OutputDebugStringA.
    pub stdout: String,
    pub debug_output: String,
    /// Milliseconds the guest asked to sleep (time does not pass otherwise).
    pub slept_ms: u64,
    pub environment: BTreeMap<String, String>,
    /// Exports to interpose, by module file name; and how often each interposed
    /// function was called.
    pub interposed_exports: BTreeMap<String, Vec<Signature>>,
    pub interposed_calls: BTreeMap<String, u64>,
    pub children: Vec<Child>,
    forwards: BTreeMap<String, (Signature, u32)>,
    /// Buffered bytes of each pipe.
    pipes: Vec<Vec<u8>>,
    /// Named sections of the parent, as the child starts.
    inherited_sections: BTreeMap<String, Vec<u8>>,
    pid: u32,
    args: Vec<String>,
    stderr_line: String,
    /// Live heap blocks (address to requested size) and freed ones by rounded size.
    heap: BTreeMap<u32, u32>,
    free: BTreeMap<u32, Vec<u32>>,
    files: BTreeMap<u32, HostFile>,
    handles: BTreeMap<u32, Handle>,
    next_handle: u32,
    sections: BTreeMap<String, (u32, u32)>,
    views: BTreeMap<u32, u32>,
    tls: Vec<Option<u32>>,
    static_tls: u32,
    critical_sections: BTreeMap<u32, u32>,
    onexit: Vec<u32>,
    exception_filter: u32,
    last_error: u32,
    teb: u32,
    /// Addresses of the CRT's variables (data imports and __p__ accessors).
    iob: u32,
    errno: u32,
    fmode: u32,
    commode: u32,
    mb_cur_max: u32,
    initenv: u32,
    acmdln: u32,
    /// localeconv's answer, made on first use.
    lconv: u32,
}

/// The service's argument words.
fn args<const N: usize>(emu: &Emu) -> Result<[u32; N], String> {
    let mut a = [0; N];
    for (k, v) in a.iter_mut().enumerate() {
        *v = emu.arg(k as u32)?;
    }
    Ok(a)
}

fn file_name(path: &str) -> String {
    path.rsplit(['/', '\\'])
        .next()
        .unwrap_or(path)
        .to_ascii_lowercase()
}

impl Process {
    /// Sets up the thread (TEB with the stack and TLS array) and the CRT's variables;
    /// `args` is the command line, `args[0]` the program.
    pub fn new(emu: &mut Emu, args: Vec<String>) -> Result<Process, String> {
        Process::with_id(emu, args, 0x1234)
    }

    fn with_id(emu: &mut Emu, args: Vec<String>, pid: u32) -> Result<Process, String> {
        let teb = emu.alloc(0x1000, 0x1000)?;
        let peb = emu.alloc(0x1000, 0x1000)?;
        let tls_array = emu.alloc(4 * TLS_SLOTS, 16)?;
        emu.w32(teb, 0xFFFF_FFFF)?; // no SEH frame
        emu.w32(teb + 0x4, STACK_TOP)?;
        emu.w32(teb + 0x8, STACK_BOTTOM)?;
        emu.w32(teb + 0x18, teb)?; // NT_TIB.Self
        emu.w32(teb + 0x20, pid)?; // ClientId: process, thread
        emu.w32(teb + 0x24, pid + 4)?;
        emu.w32(teb + 0x2C, tls_array)?; // ThreadLocalStoragePointer
        emu.w32(teb + 0x30, peb)?;
        let fs = &mut emu.cpu.state.seg[aero_cpu::Seg::Fs as usize];
        fs.base = u64::from(teb);
        fs.limit = 0xFFF;
        let iob = emu.alloc(FILE_SIZE * IOB_ENTRIES, 16)?;
        for i in 0..IOB_ENTRIES {
            emu.w32(iob + FILE_SIZE * i + 16, i)?; // _file
        }
        let vars = emu.alloc(64, 16)?;
        let (errno, fmode, commode, mb_cur_max, initenv, acmdln) =
            (vars, vars + 4, vars + 8, vars + 12, vars + 16, vars + 20);
        emu.w32(mb_cur_max, 1)?;
        let env = emu.alloc(4, 16)?; // an empty environment block
        emu.w32(initenv, env)?;
        let cmdline = args
            .iter()
            .map(|a| format!("\"{a}\""))
            .collect::<Vec<_>>()
            .join(" ");
        let cmdline = emu.alloc_bytes(format!("{cmdline}\0").as_bytes())?;
        emu.w32(acmdln, cmdline)?;
        Ok(Process {
            modules: Vec::new(),
            stdout: String::new(),
            debug_output: String::new(),
            slept_ms: 0,
            environment: BTreeMap::new(),
            interposed_exports: BTreeMap::new(),
            interposed_calls: BTreeMap::new(),
            children: Vec::new(),
            forwards: BTreeMap::new(),
            pipes: Vec::new(),
            inherited_sections: BTreeMap::new(),
            pid,
            args,
            stderr_line: String::new(),
            heap: BTreeMap::new(),
            free: BTreeMap::new(),
            files: BTreeMap::new(),
            handles: BTreeMap::new(),
            next_handle: 0x100,
            sections: BTreeMap::new(),
            views: BTreeMap::new(),
            tls: Vec::new(),
            static_tls: 0,
            critical_sections: BTreeMap::new(),
            onexit: Vec::new(),
            exception_filter: 0,
            last_error: 0,
            teb,
            iob,
            errno,
            fmode,
            commode,
            mb_cur_max,
            initenv,
            acmdln,
            lconv: 0,
        })
    }

    /// Loads the program `args[0]` and runs it from its entry point to `exit`; returns the
    /// exit code.
    pub fn run(&mut self, emu: &mut Emu) -> Result<u32, String> {
        let path = self.args.first().ok_or("no program")?.clone();
        let file = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
        let exe = self.map(emu, &path, &file, false)?;
        // mainCRTStartup takes no arguments and ends in exit().
        let code = emu.call(self, exe.entry, &[], Conv::Stdcall)? as u32;
        if emu.exited.is_none() {
            return Err(format!(
                "the program's entry point returned ({code}) without exit()"
            ));
        }
        Ok(code)
    }

    /// Maps an image, gives it its static TLS block and runs its TLS callbacks with
    /// DLL_PROCESS_ATTACH (before the entry point, as Windows does).
    fn map(
        &mut self,
        emu: &mut Emu,
        path: &str,
        file: &[u8],
        is_dll: bool,
    ) -> Result<Image, String> {
        let vars = [
            ("_iob", self.iob),
            ("__mb_cur_max", self.mb_cur_max),
            ("__initenv", self.initenv),
        ];
        let image = emu.load_pe_at(file, Some(0), &mut |emu, dll, f| {
            if dll != "kernel32.dll" && dll != "msvcrt.dll" {
                return Err(format!(
                    "{path} imports {dll}!{f}: only kernel32 and msvcrt exist"
                ));
            }
            Ok(match vars.iter().find(|(n, _)| *n == f) {
                Some(&(_, addr)) => addr,
                None => emu.thunk(&format!("{dll}!{f}")),
            })
        })?;
        self.modules.push(Module {
            name: file_name(path),
            path: path.to_string(),
            image: image.clone(),
            is_dll,
            refs: 1,
        });
        if image.tls_directory != 0 {
            let d = image.tls_directory;
            let (start, end, index_at, callbacks, zero_fill) = (
                emu.r32(d)?,
                emu.r32(d.wrapping_add(4))?,
                emu.r32(d.wrapping_add(8))?,
                emu.r32(d.wrapping_add(12))?,
                emu.r32(d.wrapping_add(16))?,
            );
            let size = end
                .checked_sub(start)
                .filter(|&s| s <= MAX_BLOCK && zero_fill <= MAX_BLOCK)
                .ok_or("bad TLS directory")?;
            let block = emu.alloc(size + zero_fill, 16)?;
            let template = emu.read(start, size)?;
            emu.write(block, &template)?;
            if self.static_tls >= TLS_SLOTS {
                return Err("too many static TLS blocks".into());
            }
            let array = emu.r32(self.teb + 0x2C)?;
            emu.w32(array + 4 * self.static_tls, block)?;
            emu.w32(index_at, self.static_tls)?;
            self.static_tls += 1;
            if callbacks != 0 {
                for k in 0..64 {
                    let cb = emu.r32(callbacks.wrapping_add(4 * k))?;
                    if cb == 0 {
                        break;
                    }
                    emu.call(
                        self,
                        cb,
                        &[image.base, DLL_PROCESS_ATTACH, 0],
                        Conv::Stdcall,
                    )?;
                }
            }
        }
        Ok(image)
    }

    fn module_by_name(&self, name: &str) -> Option<&Module> {
        let mut name = file_name(name);
        if !name.contains('.') {
            name += ".dll";
        }
        self.modules.iter().find(|m| m.name == name)
    }

    /// LoadLibrary: the guest's path is a host path.
    fn load_library(&mut self, emu: &mut Emu, path: &str) -> Result<u32, String> {
        if let Some(i) = self.modules.iter().position(|m| m.name == file_name(path)) {
            self.modules[i].refs += 1;
            return Ok(self.modules[i].image.base);
        }
        let Ok(file) = std::fs::read(path) else {
            self.last_error = ERROR_MOD_NOT_FOUND;
            return Ok(0);
        };
        let image = self.map(emu, path, &file, true)?;
        let ok = emu.call(
            self,
            image.entry,
            &[image.base, DLL_PROCESS_ATTACH, 0],
            Conv::Stdcall,
        )?;
        if ok as u32 == 0 {
            self.modules.retain(|m| m.image.base != image.base);
            self.last_error = ERROR_DLL_INIT_FAILED;
            return Ok(0);
        }
        Ok(image.base)
    }

    /// The CRT's exit work: _onexit functions (last registered first), then every DLL's
    /// DllMain(DLL_PROCESS_DETACH) with lpReserved non-NULL (process termination).
    fn exit_process(&mut self, emu: &mut Emu, code: u32) -> Result<(), String> {
        self.run_onexit(emu)?;
        let dlls: Vec<Image> = self
            .modules
            .iter()
            .rev()
            .filter(|m| m.is_dll)
            .map(|m| m.image.clone())
            .collect();
        for image in dlls {
            emu.call(
                self,
                image.entry,
                &[image.base, DLL_PROCESS_DETACH, 1],
                Conv::Stdcall,
            )?;
        }
        self.flush_stderr();
        emu.exited = Some(code);
        Ok(())
    }

    fn run_onexit(&mut self, emu: &mut Emu) -> Result<(), String> {
        while let Some(f) = self.onexit.pop() {
            emu.call(self, f, &[], Conv::Cdecl)?;
        }
        Ok(())
    }

    // ---- interposition --------------------------------------------------------------

    /// The thunk through which the guest calls `target` as `sig`.
    fn forwarder(&mut self, emu: &mut Emu, sig: &Signature, target: u32) -> u32 {
        let name = format!("interposed!{}@{target:#x}", sig.name);
        let thunk = emu.thunk(&name);
        self.forwards.insert(name, (sig.clone(), target));
        thunk
    }

    /// Calls the guest function behind an interposed thunk with the arguments the guest
    /// pushed, checking it pops exactly `arg_bytes`.
    fn interposed(&mut self, emu: &mut Emu, name: &str) -> Result<Return, String> {
        let (sig, target) = self
            .forwards
            .get(name)
            .cloned()
            .ok_or_else(|| format!("{name}: unknown interposed function"))?;
        let args = (0..sig.arg_bytes / 4)
            .map(|k| emu.arg(k))
            .collect::<Result<Vec<u32>, String>>()?;
        self.hook_tables(emu, &sig, &args, true)?;
        let r = emu
            .call(self, target, &args, Conv::Stdcall)
            .map_err(|e| format!("{}: {e}", sig.name))?;
        *self.interposed_calls.entry(sig.name.clone()).or_default() += 1;
        if (r as u32 as i32) >= 0 {
            self.hook_tables(emu, &sig, &args, false)?;
        }
        Ok(Return {
            eax: r as u32,
            edx: (r >> 32) as u32,
            pop: sig.arg_bytes,
        })
    }

    fn hook_tables(
        &mut self,
        emu: &mut Emu,
        sig: &Signature,
        args: &[u32],
        before: bool,
    ) -> Result<(), String> {
        for t in sig.tables.iter().filter(|t| t.before == before) {
            let s = *args
                .get(t.arg as usize)
                .ok_or_else(|| format!("{}: no argument {}", sig.name, t.arg))?;
            let table = if s == 0 {
                0
            } else {
                emu.r32(s.wrapping_add(t.field))?
            };
            if table == 0 {
                continue;
            }
            for (off, entry) in &t.entries {
                let at = table.wrapping_add(*off);
                let f = emu.r32(at)?;
                let is_thunk = (THUNK_BASE..THUNK_BASE + 4 * MAX_THUNKS).contains(&f);
                if f != 0 && !is_thunk {
                    let thunk = self.forwarder(emu, entry, f);
                    emu.w32(at, thunk)?;
                }
            }
        }
        Ok(())
    }

    // ---- heap -----------------------------------------------------------------------

    fn malloc(&mut self, emu: &mut Emu, size: u32) -> Result<u32, String> {
        if size > MAX_BLOCK {
            emu.w32(self.errno, 12)?; // ENOMEM
            return Ok(0);
        }
        let rounded = (size.max(1) + 15) & !15;
        let p = match self.free.get_mut(&rounded).and_then(Vec::pop) {
            Some(p) => p,
            None => match emu.alloc(rounded, 16) {
                Ok(p) => p,
                Err(_) => {
                    emu.w32(self.errno, 12)?;
                    return Ok(0);
                }
            },
        };
        self.heap.insert(p, size);
        Ok(p)
    }

    fn free(&mut self, p: u32) -> Result<(), String> {
        if p == 0 {
            return Ok(());
        }
        let size = self
            .heap
            .remove(&p)
            .ok_or_else(|| format!("free({p:#x}): not a live heap block"))?;
        self.free
            .entry((size.max(1) + 15) & !15)
            .or_default()
            .push(p);
        Ok(())
    }

    // ---- stdio ----------------------------------------------------------------------

    /// Writes to a FILE: stdout, stderr or a file opened with fopen.
    fn fwrite_to(&mut self, stream: u32, bytes: &[u8]) -> Result<(), String> {
        if stream == self.iob + FILE_SIZE {
            self.stdout.push_str(&String::from_utf8_lossy(bytes));
        } else if stream == self.iob + 2 * FILE_SIZE {
            self.stderr_line.push_str(&String::from_utf8_lossy(bytes));
            if self.stderr_line.contains('\n') {
                self.flush_stderr();
            }
        } else {
            self.files
                .get_mut(&stream)
                .ok_or_else(|| format!("write to FILE {stream:#x}, which is not open"))?
                .data
                .extend_from_slice(bytes);
        }
        Ok(())
    }

    fn flush_stderr(&mut self) {
        for line in std::mem::take(&mut self.stderr_line).lines() {
            eprintln!("[guest stderr] {line}");
        }
    }

    fn wait(&mut self, h: u32, ms: u32) -> Result<u32, String> {
        match self.handles.get_mut(&h) {
            Some(Handle::Semaphore { count, .. }) if *count > 0 => {
                *count -= 1;
                Ok(WAIT_OBJECT_0)
            }
            Some(Handle::Semaphore { .. }) if ms == 0 => Ok(WAIT_TIMEOUT),
            Some(Handle::Semaphore { .. }) => Err(format!(
                "WaitForSingleObject({h:#x}, {ms}) would block the only thread forever"
            )),
            Some(Handle::Process { .. }) => Ok(WAIT_OBJECT_0), // children have ended

            _ => Err(format!(
                "WaitForSingleObject on handle {h:#x} not implemented"
            )),
        }
    }

    fn kernel32(&mut self, emu: &mut Emu, f: &str) -> Result<Option<Return>, String> {
        let ret = |eax: u32, n: u32| Ok(Some(Return::stdcall(eax, n)));
        match f {
            "GetLastError" => ret(self.last_error, 0),
            "SetLastError" => {
                self.last_error = emu.arg(0)?;
                ret(0, 1)
            }
            "GetCurrentProcessId" => ret(emu.r32(self.teb + 0x20)?, 0),
            "GetCurrentThreadId" => ret(emu.r32(self.teb + 0x24)?, 0),
            "Sleep" => {
                self.slept_ms += u64::from(emu.arg(0)?);
                ret(0, 1)
            }
            "OutputDebugStringA" => {
                let s = emu.cstr(emu.arg(0)?)?;
                eprint!("[guest debug] {s}");
                self.debug_output.push_str(&s);
                ret(0, 1)
            }
            "GetEnvironmentVariableA" => {
                let [name, buf, size] = args(emu)?;
                let name = emu.cstr(name)?;
                let Some(value) = self.environment.get(&name).cloned() else {
                    self.last_error = ERROR_ENVVAR_NOT_FOUND;
                    return ret(0, 3);
                };
                // The length without NUL when it fits, else the size needed with it.
                let n = value.len() as u32;
                if n < size {
                    emu.write(buf, format!("{value}\0").as_bytes())?;
                    ret(n, 3)
                } else {
                    ret(n + 1, 3)
                }
            }
            "GetStartupInfoA" => {
                let p = emu.arg(0)?;
                emu.write(p, &[0; 68])?;
                emu.w32(p, 68)?;
                ret(0, 1)
            }
            "SetUnhandledExceptionFilter" => {
                let previous = std::mem::replace(&mut self.exception_filter, emu.arg(0)?);
                ret(previous, 1)
            }
            "GetModuleHandleA" | "GetModuleHandleW" => {
                let p = emu.arg(0)?;
                if p == 0 {
                    let exe = self
                        .modules
                        .iter()
                        .find(|m| !m.is_dll)
                        .ok_or("no program")?;
                    return ret(exe.image.base, 1);
                }
                let name = if f.ends_with('W') {
                    emu.wstr(p)?
                } else {
                    emu.cstr(p)?
                };
                match self.module_by_name(&name) {
                    Some(m) => ret(m.image.base, 1),
                    None => {
                        self.last_error = ERROR_MOD_NOT_FOUND;
                        ret(0, 1)
                    }
                }
            }
            "LoadLibraryA" | "LoadLibraryW" => {
                let p = emu.arg(0)?;
                let path = if f.ends_with('W') {
                    emu.wstr(p)?
                } else {
                    emu.cstr(p)?
                };
                let base = self.load_library(emu, &path)?;
                ret(base, 1)
            }
            "FreeLibrary" => {
                let h = emu.arg(0)?;
                let Some(i) = self
                    .modules
                    .iter()
                    .position(|m| m.is_dll && m.image.base == h)
                else {
                    self.last_error = ERROR_MOD_NOT_FOUND;
                    return ret(0, 1);
                };
                self.modules[i].refs -= 1;
                if self.modules[i].refs == 0 {
                    let image = self.modules.remove(i).image;
                    emu.call(
                        self,
                        image.entry,
                        &[image.base, DLL_PROCESS_DETACH, 0],
                        Conv::Stdcall,
                    )?;
                }
                ret(1, 1)
            }
            "GetProcAddress" => {
                let [h, name] = args(emu)?;
                let Some(m) = self.modules.iter().find(|m| m.image.base == h) else {
                    self.last_error = ERROR_MOD_NOT_FOUND;
                    return ret(0, 2);
                };
                let export = if name < 0x1_0000 {
                    String::new()
                } else {
                    emu.cstr(name)?
                };
                let addr = if name < 0x1_0000 {
                    name.checked_sub(m.image.ordinal_base)
                        .and_then(|i| m.image.ordinals.get(i as usize).copied())
                } else {
                    m.image.exports.get(&export).copied()
                };
                let sig = self
                    .interposed_exports
                    .get(&m.name)
                    .and_then(|sigs| sigs.iter().find(|s| s.name == export))
                    .cloned();
                match (addr, sig) {
                    (Some(a), Some(sig)) if a != 0 => {
                        let thunk = self.forwarder(emu, &sig, a);
                        ret(thunk, 2)
                    }
                    (Some(a), None) if a != 0 => ret(a, 2),
                    _ => {
                        self.last_error = ERROR_PROC_NOT_FOUND;
                        ret(0, 2)
                    }
                }
            }
            "TlsAlloc" => {
                let i = match self.tls.iter().position(Option::is_none) {
                    Some(i) => i,
                    None if self.tls.len() < TLS_SLOTS as usize => {
                        self.tls.push(None);
                        self.tls.len() - 1
                    }
                    None => return ret(0xFFFF_FFFF, 0), // TLS_OUT_OF_INDEXES
                };
                self.tls[i] = Some(0);
                ret(i as u32, 0)
            }
            "TlsFree" | "TlsGetValue" | "TlsSetValue" => {
                let i = emu.arg(0)?;
                let slot = self
                    .tls
                    .get_mut(i as usize)
                    .filter(|s| s.is_some())
                    .ok_or_else(|| format!("{f}({i}): index not allocated"))?;
                match f {
                    "TlsFree" => {
                        *slot = None;
                        ret(1, 1)
                    }
                    "TlsGetValue" => {
                        let v = slot.unwrap_or(0);
                        self.last_error = 0; // tells a stored 0 from a failure
                        ret(v, 1)
                    }
                    _ => {
                        *slot = Some(emu.arg(1)?);
                        ret(1, 2)
                    }
                }
            }
            "InitializeCriticalSection" => {
                self.critical_sections.insert(emu.arg(0)?, 0);
                ret(0, 1)
            }
            "EnterCriticalSection" | "LeaveCriticalSection" | "DeleteCriticalSection" => {
                let cs = emu.arg(0)?;
                let depth = self
                    .critical_sections
                    .get_mut(&cs)
                    .ok_or_else(|| format!("{f}({cs:#x}): not initialized"))?;
                match f {
                    "EnterCriticalSection" => *depth += 1,
                    "LeaveCriticalSection" => {
                        *depth = depth
                            .checked_sub(1)
                            .ok_or_else(|| format!("{f}({cs:#x}): not entered"))?
                    }
                    _ => {
                        self.critical_sections.remove(&cs);
                    }
                }
                ret(0, 1)
            }
            "CreateSemaphoreW" => {
                let [_sa, initial, max, name] = args(emu)?;
                if name != 0 || initial > max || max == 0 {
                    return Err(format!(
                        "CreateSemaphoreW({initial}, {max}, name {name:#x}) not implemented"
                    ));
                }
                let h = self.new_handle(Handle::Semaphore {
                    count: initial,
                    max,
                });
                ret(h, 4)
            }
            "ReleaseSemaphore" => {
                let [h, n, previous] = args(emu)?;
                let Some(Handle::Semaphore { count, max }) = self.handles.get_mut(&h) else {
                    self.last_error = ERROR_INVALID_HANDLE;
                    return ret(0, 3);
                };
                let old = *count;
                if n == 0 || old.checked_add(n).is_none_or(|c| c > *max) {
                    return ret(0, 3); // ERROR_TOO_MANY_POSTS
                }
                *count += n;
                if previous != 0 {
                    emu.w32(previous, old)?;
                }
                ret(1, 3)
            }
            "WaitForSingleObject" => {
                let [h, ms] = args(emu)?;
                let r = self.wait(h, ms)?;
                ret(r, 2)
            }
            "CloseHandle" => {
                let h = emu.arg(0)?;
                // A section lives on while a view of it is mapped (its memory is not reused).
                if self.handles.remove(&h).is_none() {
                    self.last_error = ERROR_INVALID_HANDLE;
                    return ret(0, 1);
                }
                ret(1, 1)
            }
            "CreateFileMappingW" => {
                let [file, _sa, _protect, size_hi, size_lo, name] = args(emu)?;
                if file != INVALID_HANDLE_VALUE
                    || size_hi != 0
                    || size_lo == 0
                    || size_lo > MAX_BLOCK
                {
                    return Err(format!(
                        "CreateFileMappingW(file {file:#x}, size {size_hi:#x}:{size_lo:#x}): only \
                         pagefile-backed sections below 4 GiB are implemented"
                    ));
                }
                let name = if name == 0 {
                    String::new()
                } else {
                    emu.wstr(name)?
                };
                let existing = self
                    .sections
                    .get(&name)
                    .copied()
                    .filter(|_| !name.is_empty());
                // An existing section keeps its size (the documented behaviour).
                let (addr, size) = match existing {
                    Some(section) => {
                        self.last_error = ERROR_ALREADY_EXISTS;
                        section
                    }
                    None => {
                        let addr = emu.alloc(size_lo, 0x1_0000)?;
                        self.last_error = 0;
                        // A section a parent holds exists already, with its size.
                        let mut size = size_lo;
                        if let Some(bytes) = self.inherited_sections.get(&name) {
                            size = bytes.len() as u32;
                            let bytes = bytes[..bytes.len().min(size_lo as usize)].to_vec();
                            emu.write(addr, &bytes)?;
                            self.last_error = ERROR_ALREADY_EXISTS;
                        }
                        if !name.is_empty() {
                            self.sections.insert(name, (addr, size));
                        }
                        (addr, size)
                    }
                };
                let h = self.new_handle(Handle::Section { addr, size });
                ret(h, 6)
            }
            "MapViewOfFile" => {
                let [h, _access, off_hi, off_lo, bytes] = args(emu)?;
                let Some(&Handle::Section { addr, size }) = self.handles.get(&h) else {
                    self.last_error = ERROR_INVALID_HANDLE;
                    return ret(0, 5);
                };
                if off_hi != 0 || off_lo != 0 {
                    return Err("MapViewOfFile at a non-zero offset not implemented".into());
                }
                if bytes > size {
                    self.last_error = 8; // ERROR_NOT_ENOUGH_MEMORY: larger than the section
                    return ret(0, 5);
                }
                *self.views.entry(addr).or_default() += 1;
                ret(addr, 5)
            }
            "UnmapViewOfFile" => {
                let addr = emu.arg(0)?;
                match self.views.get_mut(&addr) {
                    Some(n) if *n > 0 => {
                        *n -= 1;
                        ret(1, 1)
                    }
                    _ => Err(format!("UnmapViewOfFile({addr:#x}): not a mapped view")),
                }
            }
            "GetStdHandle" => {
                let n = emu.arg(0)?;
                if !STD_HANDLES.contains(&n) {
                    self.last_error = ERROR_INVALID_HANDLE;
                    return ret(INVALID_HANDLE_VALUE, 1);
                }
                ret(n, 1)
            }
            "SetHandleInformation" => {
                let h = emu.arg(0)?;
                let known = self.handles.contains_key(&h) || STD_HANDLES.contains(&h);
                ret(u32::from(known), 3)
            }
            "GetModuleFileNameA" => {
                let [h, buf, size] = args(emu)?;
                let module = if h == 0 {
                    self.modules.iter().find(|m| !m.is_dll)
                } else {
                    self.modules.iter().find(|m| m.image.base == h)
                };
                let Some(m) = module else {
                    self.last_error = ERROR_MOD_NOT_FOUND;
                    return ret(0, 3);
                };
                // Truncated to the buffer, NUL included; the length copied without it.
                let mut bytes = m.path.clone().into_bytes();
                bytes.truncate((size as usize).saturating_sub(1));
                let n = bytes.len() as u32;
                bytes.push(0);
                if size > 0 {
                    emu.write(buf, &bytes)?;
                }
                ret(n, 3)
            }
            "CreatePipe" => {
                let [read_out, write_out, _sa, _size] = args(emu)?;
                self.pipes.push(Vec::new());
                let index = self.pipes.len() - 1;
                let rd = self.new_handle(Handle::PipeRead(index));
                let wr = self.new_handle(Handle::PipeWrite(index));
                emu.w32(read_out, rd)?;
                emu.w32(write_out, wr)?;
                ret(1, 4)
            }
            "ReadFile" => {
                let [h, buf, n, read_out, overlapped] = args(emu)?;
                let Some(&Handle::PipeRead(index)) = self.handles.get(&h) else {
                    return Err(format!("ReadFile({h:#x}): only pipes are implemented"));
                };
                if overlapped != 0 {
                    return Err("ReadFile: overlapped reads are not implemented".into());
                }
                let pipe = &mut self.pipes[index];
                if pipe.is_empty() {
                    let writer_open = self
                        .handles
                        .values()
                        .any(|h| matches!(h, Handle::PipeWrite(i) if *i == index));
                    if writer_open {
                        return Err("ReadFile would block the only thread forever".into());
                    }
                    emu.w32(read_out, 0)?;
                    self.last_error = ERROR_BROKEN_PIPE;
                    return ret(0, 5);
                }
                let take = pipe.len().min(n.min(MAX_BLOCK) as usize);
                let data: Vec<u8> = pipe.drain(..take).collect();
                emu.write(buf, &data)?;
                emu.w32(read_out, take as u32)?;
                ret(1, 5)
            }
            "CreateProcessA" => {
                let [app, cmdline, _psa, _tsa, _inherit, flags, env, _cwd, si, pi] = args(emu)?;
                if app != 0 || flags != 0 || env != 0 || cmdline == 0 {
                    return Err(format!(
                        "CreateProcessA(app {app:#x}, flags {flags:#x}, env {env:#x}): only a \
                         command line is implemented"
                    ));
                }
                let args = split_command_line(&emu.cstr(cmdline)?);
                let stdout = if emu.r32(si.wrapping_add(44))? & STARTF_USESTDHANDLES != 0 {
                    emu.r32(si.wrapping_add(60))?
                } else {
                    STD_HANDLES[1]
                };
                let exit_code = self.run_child(emu, args, stdout)?;
                let process = self.new_handle(Handle::Process { exit_code });
                let thread = self.new_handle(Handle::Thread);
                let pid = self.children.last().map_or(0, |c| c.pid);
                for (k, v) in [process, thread, pid, pid + 4].into_iter().enumerate() {
                    emu.w32(pi.wrapping_add(4 * k as u32), v)?;
                }
                ret(1, 10)
            }
            "GetExitCodeProcess" => {
                let [h, out] = args(emu)?;
                let Some(&Handle::Process { exit_code }) = self.handles.get(&h) else {
                    self.last_error = ERROR_INVALID_HANDLE;
                    return ret(0, 2);
                };
                emu.w32(out, exit_code)?;
                ret(1, 2)
            }
            _ => Ok(None),
        }
    }

    /// Runs a child process to its end on a machine of its own (see the module comment);
    /// returns its exit code.
    fn run_child(&mut self, emu: &mut Emu, args: Vec<String>, stdout: u32) -> Result<u32, String> {
        let mut machine = Emu::new(crate::x86_host::host_gpu(), 32);
        let pid = self.pid + 0x100 * (self.children.len() as u32 + 1);
        let mut child = Process::with_id(&mut machine, args.clone(), pid)?;
        child.environment = self.environment.clone();
        child.interposed_exports = self.interposed_exports.clone();
        for (name, &(addr, size)) in &self.sections {
            child
                .inherited_sections
                .insert(name.clone(), emu.read(addr, size)?);
        }
        let exit_code = child
            .run(&mut machine)
            .map_err(|e| format!("child process {args:?}: {e}"))?;
        for (name, &(addr, size)) in &self.sections {
            if let Some(&(child_addr, _)) = child.sections.get(name) {
                let bytes = machine.read(child_addr, size)?;
                emu.write(addr, &bytes)?;
            }
        }
        match self.handles.get(&stdout) {
            Some(&Handle::PipeWrite(index)) => {
                self.pipes[index].extend_from_slice(child.stdout.as_bytes())
            }
            _ if stdout == STD_HANDLES[1] => self.stdout.push_str(&child.stdout),
            _ => return Err(format!("child stdout handle {stdout:#x} not implemented")),
        }
        self.children.push(Child {
            args,
            pid,
            exit_code,
            interposed_calls: child.interposed_calls,
        });
        Ok(exit_code)
    }

    fn new_handle(&mut self, h: Handle) -> u32 {
        self.next_handle += 4;
        self.handles.insert(self.next_handle, h);
        self.next_handle
    }

    fn msvcrt(&mut self, emu: &mut Emu, f: &str) -> Result<Option<Return>, String> {
        let ret = |eax: u32| Ok(Some(Return::cdecl(eax)));
        match f {
            "__set_app_type" | "__setusermatherr" | "_lock" | "_unlock" => ret(0),
            "__p__fmode" => ret(self.fmode),
            "__p__commode" => ret(self.commode),
            "__p__acmdln" => ret(self.acmdln),
            "_errno" => ret(self.errno),
            "__getmainargs" => {
                let [argc_out, argv_out, envp_out] = args(emu)?;
                let argv = emu.alloc(4 * (self.args.len() as u32 + 1), 16)?;
                for (i, a) in self.args.clone().iter().enumerate() {
                    let s = emu.alloc_bytes(format!("{a}\0").as_bytes())?;
                    emu.w32(argv + 4 * i as u32, s)?;
                }
                emu.w32(argc_out, self.args.len() as u32)?;
                emu.w32(argv_out, argv)?;
                let env = emu.r32(self.initenv)?;
                emu.w32(envp_out, env)?;
                ret(0)
            }
            "_initterm" => {
                let [start, end] = args(emu)?;
                let mut p = start;
                while p < end && emu.exited.is_none() {
                    let func = emu.r32(p)?;
                    if func != 0 {
                        emu.call(self, func, &[], Conv::Cdecl)?;
                    }
                    p = p.saturating_add(4);
                }
                ret(0)
            }
            "_onexit" => {
                let func = emu.arg(0)?;
                self.onexit.push(func);
                ret(func)
            }
            "_cexit" => {
                self.run_onexit(emu)?;
                ret(0)
            }
            "exit" => {
                let code = emu.arg(0)?;
                self.exit_process(emu, code)?;
                ret(code)
            }
            // The "C" locale's classes; EOF and values outside unsigned char are in none.
            "isspace" | "isupper" | "islower" | "isxdigit" | "isdigit" | "isalpha" => {
                let c = u8::try_from(emu.arg(0)?).ok();
                let yes = c.is_some_and(|c| match f {
                    "isspace" => c == b' ' || (9..=13).contains(&c),
                    "isupper" => c.is_ascii_uppercase(),
                    "islower" => c.is_ascii_lowercase(),
                    "isxdigit" => c.is_ascii_hexdigit(),
                    "isdigit" => c.is_ascii_digit(),
                    _ => c.is_ascii_alphabetic(),
                });
                ret(u32::from(yes))
            }
            "tolower" | "toupper" => {
                let c = emu.arg(0)?;
                let mapped = match u8::try_from(c) {
                    Ok(b) if f == "tolower" => u32::from(b.to_ascii_lowercase()),
                    Ok(b) => u32::from(b.to_ascii_uppercase()),
                    Err(_) => c,
                };
                ret(mapped)
            }
            "strtol" | "strtoul" => {
                let [p, end_out, base] = args(emu)?;
                let text = emu.cstr_bytes(p)?;
                let (value, used, overflow) = parse_c_integer(&text, base, f == "strtol")
                    .ok_or_else(|| format!("{f} with base {base}"))?;
                if overflow {
                    emu.w32(self.errno, 34)?; // ERANGE
                }
                if end_out != 0 {
                    emu.w32(end_out, p.wrapping_add(used as u32))?;
                }
                ret(value)
            }
            "localeconv" => {
                if self.lconv == 0 {
                    self.lconv = c_locale_lconv(emu)?;
                }
                ret(self.lconv)
            }
            "abort" => Err("the guest called abort()".into()),
            "_amsg_exit" => Err(format!("the CRT failed: _amsg_exit({})", emu.arg(0)?)),
            "malloc" => {
                let p = self.malloc(emu, emu.arg(0)?)?;
                ret(p)
            }
            "calloc" => {
                let [n, size] = args(emu)?;
                let Some(total) = n.checked_mul(size) else {
                    return ret(0);
                };
                let p = self.malloc(emu, total)?;
                if p != 0 {
                    emu.write(p, &vec![0; total as usize])?;
                }
                ret(p)
            }
            "realloc" => {
                let [old, size] = args(emu)?;
                if old != 0 && size == 0 {
                    self.free(old)?;
                    return ret(0);
                }
                let old_size = if old == 0 {
                    0
                } else {
                    *self
                        .heap
                        .get(&old)
                        .ok_or_else(|| format!("realloc({old:#x}): not a live heap block"))?
                };
                let p = self.malloc(emu, size)?;
                if p != 0 && old != 0 {
                    let data = emu.read(old, old_size.min(size))?;
                    emu.write(p, &data)?;
                    self.free(old)?;
                }
                ret(p)
            }
            "free" => {
                self.free(emu.arg(0)?)?;
                ret(0)
            }
            "memcpy" | "memmove" => {
                let [dst, src, n] = args(emu)?;
                if n > MAX_BLOCK {
                    return Err(format!("{f} of {n} bytes"));
                }
                let data = emu.read(src, n)?;
                emu.write(dst, &data)?;
                ret(dst)
            }
            "memset" => {
                let [dst, c, n] = args(emu)?;
                if n > MAX_BLOCK {
                    return Err(format!("memset of {n} bytes"));
                }
                emu.write(dst, &vec![c as u8; n as usize])?;
                ret(dst)
            }
            "memcmp" | "strncmp" => {
                let [a, b, n] = args(emu)?;
                if n > MAX_BLOCK {
                    return Err(format!("{f} of {n} bytes"));
                }
                let (mut x, mut y) = (emu.read(a, n)?, emu.read(b, n)?);
                if f == "strncmp" {
                    // Compare up to the first NUL of either, inclusive.
                    if let Some(end) = x.iter().zip(&y).position(|(p, q)| *p == 0 || *q == 0) {
                        x.truncate(end + 1);
                        y.truncate(end + 1);
                    }
                }
                ret(compare(&x, &y))
            }
            "memchr" => {
                let [p, c, n] = args(emu)?;
                if n > MAX_BLOCK {
                    return Err(format!("memchr over {n} bytes"));
                }
                let hit = emu.read(p, n)?.iter().position(|&b| b == c as u8);
                ret(hit.map_or(0, |i| p + i as u32))
            }
            "strlen" => {
                let n = emu.cstr_bytes(emu.arg(0)?)?.len();
                ret(n as u32)
            }
            "wcslen" => {
                let n = emu.wstr(emu.arg(0)?)?.encode_utf16().count();
                ret(n as u32)
            }
            "strcmp" => {
                let [a, b] = args(emu)?;
                let (x, y) = (emu.cstr_bytes(a)?, emu.cstr_bytes(b)?);
                ret(compare(&x, &y))
            }
            "strchr" => {
                let [p, c] = args(emu)?;
                let s = emu.cstr_bytes(p)?;
                // The terminating NUL counts as part of the string.
                let hit = if c as u8 == 0 {
                    Some(s.len())
                } else {
                    s.iter().position(|&b| b == c as u8)
                };
                ret(hit.map_or(0, |i| p + i as u32))
            }
            "fopen" => {
                let [path, mode] = args(emu)?;
                let (path, mode) = (emu.cstr(path)?, emu.cstr(mode)?);
                if mode != "wb" && mode != "w" {
                    return Err(format!(
                        "fopen(\"{path}\", \"{mode}\"): only writing is implemented"
                    ));
                }
                let stream = emu.alloc(FILE_SIZE, 16)?;
                emu.w32(stream + 16, 3 + self.files.len() as u32)?;
                self.files.insert(
                    stream,
                    HostFile {
                        path,
                        data: Vec::new(),
                    },
                );
                ret(stream)
            }
            "fclose" => {
                let stream = emu.arg(0)?;
                let file = self
                    .files
                    .remove(&stream)
                    .ok_or_else(|| format!("fclose({stream:#x}): not an open file"))?;
                std::fs::write(&file.path, &file.data)
                    .map_err(|e| format!("{}: {e}", file.path))?;
                ret(0)
            }
            "fwrite" => {
                let [p, size, n, stream] = args(emu)?;
                let total = size
                    .checked_mul(n)
                    .filter(|&t| t <= MAX_BLOCK)
                    .ok_or_else(|| format!("fwrite of {n} x {size} bytes"))?;
                let data = emu.read(p, total)?;
                self.fwrite_to(stream, &data)?;
                ret(if size == 0 { 0 } else { n })
            }
            "fputc" => {
                let [c, stream] = args(emu)?;
                self.fwrite_to(stream, &[c as u8])?;
                ret(c & 0xFF)
            }
            "fputs" => {
                let [s, stream] = args(emu)?;
                let data = emu.cstr_bytes(s)?;
                self.fwrite_to(stream, &data)?;
                ret(0)
            }
            "fprintf" | "vfprintf" => {
                let [stream, fmt] = args(emu)?;
                let sp = emu.cpu.state.gpr[4] as u32;
                // fprintf's variadic words follow fmt; vfprintf gets a pointer to them.
                let ap = if f == "fprintf" {
                    sp.wrapping_add(12)
                } else {
                    emu.arg(2)?
                };
                let out = format_c(emu, &emu.cstr_bytes(fmt)?, ap)?;
                self.fwrite_to(stream, &out)?;
                ret(out.len() as u32)
            }
            _ => Ok(None),
        }
    }
}

/// strtol / strtoul: blanks, a sign, a base prefix (base 0 or 16), digits. Returns the
/// value, the bytes consumed (0 when there are no digits), and whether it overflowed
/// (the value is then clamped as the C standard says). None for an invalid base.
fn parse_c_integer(text: &[u8], base: u32, signed: bool) -> Option<(u32, usize, bool)> {
    if base == 1 || base > 36 {
        return None;
    }
    let mut i = text.iter().take_while(|c| c.is_ascii_whitespace()).count();
    let negative = text.get(i) == Some(&b'-');
    if matches!(text.get(i), Some(b'-' | b'+')) {
        i += 1;
    }
    let hex_prefix = text.get(i) == Some(&b'0')
        && matches!(text.get(i + 1), Some(b'x' | b'X'))
        && text.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
    let base = match base {
        0 if hex_prefix => 16,
        0 if text.get(i) == Some(&b'0') => 8,
        0 => 10,
        b => b,
    };
    if base == 16 && hex_prefix {
        i += 2;
    }
    let start = i;
    let mut magnitude: u64 = 0;
    while let Some(d) = text.get(i).and_then(|c| (*c as char).to_digit(base)) {
        magnitude = (magnitude * u64::from(base) + u64::from(d)).min(1 << 40);
        i += 1;
    }
    if i == start {
        return Some((0, 0, false));
    }
    Some(if signed {
        let limit = if negative { 1u64 << 31 } else { (1 << 31) - 1 };
        let clamped = magnitude.min(limit) as i64;
        let v = if negative { -clamped } else { clamped };
        (v as i32 as u32, i, magnitude > limit)
    } else if magnitude > u64::from(u32::MAX) {
        (u32::MAX, i, true)
    } else {
        let v = magnitude as u32;
        (if negative { v.wrapping_neg() } else { v }, i, false)
    })
}

/// The "C" locale's `struct lconv` (msvcrt, 32-bit): ten string pointers, decimal point
/// "." and the rest empty, then eight `char` fields, all CHAR_MAX (not available).
fn c_locale_lconv(emu: &mut Emu) -> Result<u32, String> {
    let strings = emu.alloc_bytes(b".\0\0")?;
    let lconv = emu.alloc(48, 16)?;
    emu.w32(lconv, strings)?;
    for k in 1..10 {
        emu.w32(lconv + 4 * k, strings + 2)?;
    }
    emu.write(lconv + 40, &[127; 8])?;
    Ok(lconv)
}

/// A command line's arguments: separated by blanks, double quotes group (no escapes: the
/// programs here quote paths only).
fn split_command_line(line: &str) -> Vec<String> {
    let mut args = Vec::new();
    let (mut current, mut quoted, mut any) = (String::new(), false, false);
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            ' ' | '\t' if !quoted => {
                if any {
                    args.push(std::mem::take(&mut current));
                }
                any = false;
            }
            c => {
                current.push(c);
                any = true;
            }
        }
    }
    if any {
        args.push(current);
    }
    args
}

fn compare(a: &[u8], b: &[u8]) -> u32 {
    match a.cmp(b) {
        std::cmp::Ordering::Less => -1i32 as u32,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    }
}

/// printf formatting of the integer, character, string and pointer conversions
/// (msvcrt's: `%p` is eight upper-case hex digits, `I64` is a length modifier).
/// Floating point and `%n` are refused.
fn format_c(emu: &Emu, fmt: &[u8], mut ap: u32) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut next = |emu: &Emu, words: u32| -> Result<u64, String> {
        let v = if words == 2 {
            emu.r64(ap)?
        } else {
            u64::from(emu.r32(ap)?)
        };
        ap += 4 * words;
        Ok(v)
    };
    let mut i = 0;
    while i < fmt.len() {
        if fmt[i] != b'%' {
            out.push(fmt[i]);
            i += 1;
            continue;
        }
        i += 1;
        let (mut left, mut plus, mut space, mut alt, mut zero) =
            (false, false, false, false, false);
        while let Some(&c) = fmt.get(i) {
            match c {
                b'-' => left = true,
                b'+' => plus = true,
                b' ' => space = true,
                b'#' => alt = true,
                b'0' => zero = true,
                _ => break,
            }
            i += 1;
        }
        let mut number = |i: &mut usize, emu: &Emu| -> Result<Option<usize>, String> {
            if fmt.get(*i) == Some(&b'*') {
                *i += 1;
                return Ok(Some(next(emu, 1)? as i32 as usize));
            }
            let start = *i;
            while fmt.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            Ok(std::str::from_utf8(&fmt[start..*i]).unwrap().parse().ok())
        };
        let width = number(&mut i, emu)?.unwrap_or(0).min(4096);
        let precision = if fmt.get(i) == Some(&b'.') {
            i += 1;
            Some(number(&mut i, emu)?.unwrap_or(0).min(4096))
        } else {
            None
        };
        let mut words = 1;
        loop {
            match fmt.get(i..) {
                Some([b'l', b'l', ..]) | Some([b'I', b'6', b'4', ..]) => {
                    words = 2;
                    i += if fmt[i] == b'l' { 2 } else { 3 };
                }
                Some([b'I', b'3', b'2', ..]) => i += 3,
                Some([b'h' | b'l' | b'z' | b't' | b'j' | b'I', ..]) => i += 1,
                _ => break,
            }
        }
        let conv = *fmt.get(i).ok_or("format ends inside a conversion")?;
        i += 1;
        let (prefix, body): (Vec<u8>, Vec<u8>) = match conv {
            b'%' => (vec![], b"%".to_vec()),
            b'c' => (vec![], vec![next(emu, 1)? as u8]),
            b's' => {
                let p = next(emu, 1)? as u32;
                let mut s = if p == 0 {
                    b"(null)".to_vec()
                } else {
                    emu.cstr_bytes(p)?
                };
                if let Some(n) = precision {
                    s.truncate(n);
                }
                (vec![], s)
            }
            b'd' | b'i' | b'u' | b'x' | b'X' | b'o' | b'p' => {
                let raw = next(emu, if conv == b'p' { 1 } else { words })?;
                let (negative, magnitude) = match conv {
                    b'd' | b'i' if words == 2 => ((raw as i64) < 0, (raw as i64).unsigned_abs()),
                    b'd' | b'i' => ((raw as i32) < 0, u64::from((raw as i32).unsigned_abs())),
                    _ => (false, raw),
                };
                let mut digits = match conv {
                    b'x' => format!("{magnitude:x}"),
                    b'X' => format!("{magnitude:X}"),
                    b'p' => format!("{magnitude:08X}"),
                    b'o' => format!("{magnitude:o}"),
                    _ => magnitude.to_string(),
                };
                if let Some(p) = precision {
                    if p == 0 && magnitude == 0 {
                        digits.clear();
                    }
                    while digits.len() < p {
                        digits.insert(0, '0');
                    }
                }
                let prefix = match conv {
                    _ if negative => "-",
                    b'd' | b'i' if plus => "+",
                    b'd' | b'i' if space => " ",
                    b'x' if alt && magnitude != 0 => "0x",
                    b'X' if alt && magnitude != 0 => "0X",
                    b'o' if alt && !digits.starts_with('0') => "0",
                    _ => "",
                };
                (prefix.as_bytes().to_vec(), digits.into_bytes())
            }
            c => return Err(format!("printf conversion %{} not implemented", c as char)),
        };
        let len = prefix.len() + body.len();
        let pad = width.saturating_sub(len);
        let zero_pad = zero && !left && precision.is_none() && conv != b's' && conv != b'c';
        if !left && !zero_pad {
            out.extend(std::iter::repeat_n(b' ', pad));
        }
        out.extend(&prefix);
        if zero_pad {
            out.extend(std::iter::repeat_n(b'0', pad));
        }
        out.extend(&body);
        if left {
            out.extend(std::iter::repeat_n(b' ', pad));
        }
    }
    Ok(out)
}

impl Services for Process {
    fn service(&mut self, emu: &mut Emu, name: &str) -> Result<Return, String> {
        let (dll, f) = name.split_once('!').unwrap_or(("", name));
        let r = match dll {
            "interposed" => Some(self.interposed(emu, name)?),
            "kernel32.dll" => self.kernel32(emu, f)?,
            "msvcrt.dll" => self.msvcrt(emu, f)?,
            _ => None,
        };
        r.ok_or_else(|| format!("{name} is not implemented by the test's Win32 personality"))
    }
}
