//! Runs 32-bit Windows code (the shipped `aerogpu.sys`) on Aero's own CPU, next to Aero's
//! own AeroGPU device model, with the operating system played by the test.
//!
//! The machine: flat 32-bit protected mode, ring 0, no paging (virtual = physical), RAM at
//! 0, the device's BAR0 above RAM. Every import and every callback the test hands out is a
//! thunk: `out 0xE0, al` at a known address. The CPU stops on that OUT, the test's
//! [`Services`] does the work on the host, and the harness returns to the caller as the
//! calling convention says. Calling into the guest pushes the arguments and a return
//! address that is itself a thunk, so a host call ends exactly when the guest function
//! returns, and the stack pointer then proves the callee popped what stdcall says.

#![allow(dead_code)]

use std::collections::BTreeMap;

use aero_cpu::{Bus, Cpu, DescriptorTable, PageMapping, RunExit, Seg, Segment};
use aero_gpu::aerogpu::{AeroGpu, GuestMemory, VecMemory};

pub const RAM_SIZE: u32 = 64 << 20;
/// Thunks: 4 bytes each. Index 0 is "return to the host".
pub const THUNK_BASE: u32 = 0x8000;
pub const MAX_THUNKS: u32 = 1024;
/// Images load at their preferred base inside [IMAGE_MIN, IMAGE_MAX).
pub const IMAGE_MIN: u32 = 0x1_0000;
pub const IMAGE_MAX: u32 = 0x20_0000;
pub const STACK_TOP: u32 = 0x30_0000;
pub const STACK_BOTTOM: u32 = 0x20_0000;
/// Everything the test or the guest allocates comes from here.
pub const HEAP_BASE: u32 = 0x40_0000;
/// The device's registers (BAR0), outside RAM.
pub const BAR0: u32 = 0xFEB0_0000;
pub const BAR0_SIZE: u32 = 0x1000;
const TRAP_PORT: u16 = 0xE0;
/// A guest function that runs longer than this is stuck.
const MAX_INSTRUCTIONS_PER_CALL: u64 = 200_000_000;

pub struct HostBus {
    pub gpu: AeroGpu,
    /// Register writes wait for the CPU to stop: they may need RAM (doorbell).
    writes: Vec<(u64, u8, u64)>,
    trapped: bool,
    stop: bool,
    tsc: u64,
}

impl Bus for HostBus {
    fn map_page(&self, paddr: u64) -> PageMapping {
        if paddr < u64::from(RAM_SIZE) {
            PageMapping::Ram {
                offset: (paddr & !0xFFF) as usize,
            }
        } else {
            PageMapping::Mmio
        }
    }
    fn mmio_read(&mut self, paddr: u64, size: u8) -> u64 {
        match paddr.checked_sub(u64::from(BAR0)) {
            Some(off) if off < u64::from(BAR0_SIZE) => self.gpu.mmio_read(off, usize::from(size)),
            _ => u64::MAX >> (64 - 8 * u32::from(size.clamp(1, 8))),
        }
    }
    fn mmio_write(&mut self, paddr: u64, size: u8, value: u64) {
        if let Some(off) = paddr.checked_sub(u64::from(BAR0)) {
            if off < u64::from(BAR0_SIZE) {
                self.writes.push((off, size, value));
                self.stop = true;
            }
        }
    }
    fn io_read(&mut self, _port: u16, _size: u8) -> u32 {
        u32::MAX
    }
    fn io_write(&mut self, port: u16, _size: u8, _value: u32) {
        if port == TRAP_PORT {
            self.trapped = true;
            self.stop = true;
        }
    }
    fn sync_time(&mut self, instructions_retired: u64) {
        self.tsc = instructions_retired;
    }
    fn tsc(&mut self) -> u64 {
        self.tsc
    }
    fn interrupt_pending(&mut self) -> bool {
        false // the test calls the driver's ISR itself, as dxgkrnl does
    }
    fn acknowledge_interrupt(&mut self) -> u8 {
        0xFF
    }
    fn stop_requested(&mut self) -> bool {
        std::mem::take(&mut self.stop)
    }
}

/// What a host service returns to the guest.
#[derive(Clone, Copy, Debug, Default)]
pub struct Return {
    pub eax: u32,
    pub edx: u32,
    /// Argument bytes the callee pops (stdcall); 0 for cdecl and fastcall register args.
    pub pop: u32,
}

impl Return {
    pub fn stdcall(eax: u32, args: u32) -> Self {
        Return {
            eax,
            edx: 0,
            pop: 4 * args,
        }
    }
    pub fn cdecl(eax: u32) -> Self {
        Return {
            eax,
            edx: 0,
            pop: 0,
        }
    }
}

/// The operating system side: called when the guest reaches thunk `name`.
pub trait Services {
    fn service(&mut self, emu: &mut Emu, name: &str) -> Result<Return, String>;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conv {
    /// The callee pops its arguments.
    Stdcall,
    /// The caller pops them.
    Cdecl,
}

pub struct Emu {
    pub cpu: Cpu,
    pub ram: VecMemory,
    pub bus: HostBus,
    thunks: Vec<String>,
    heap_next: u32,
    /// Guest instructions retired by host calls, for the report.
    pub instructions: u64,
}

impl Emu {
    pub fn new(gpu: AeroGpu) -> Emu {
        let mut emu = Emu {
            cpu: Cpu::new(),
            ram: VecMemory::new(RAM_SIZE as usize),
            bus: HostBus {
                gpu,
                writes: Vec::new(),
                trapped: false,
                stop: false,
                tsc: 0,
            },
            thunks: Vec::new(),
            heap_next: HEAP_BASE,
            instructions: 0,
        };
        emu.thunk("<return to host>");
        let s = &mut emu.cpu.state;
        s.cr0 = 0x11; // PE + ET, no paging
        s.rflags = 0x2; // interrupts off: the host delivers them by calling the ISR
        // No IDT: any exception becomes a triple fault, which ends the call with an error.
        s.idtr = DescriptorTable { base: 0, limit: 0 };
        s.seg[Seg::Cs as usize] = Segment {
            selector: 0x08,
            base: 0,
            limit: 0xFFFF_FFFF,
            attr: 0xC9B,
        };
        for sg in [Seg::Es, Seg::Ss, Seg::Ds, Seg::Fs, Seg::Gs] {
            s.seg[sg as usize] = Segment {
                selector: 0x10,
                base: 0,
                limit: 0xFFFF_FFFF,
                attr: 0xC93,
            };
        }
        s.gpr[4] = u64::from(STACK_TOP);
        emu
    }

    // ---- memory ---------------------------------------------------------------------

    pub fn read(&self, addr: u32, len: u32) -> Result<Vec<u8>, String> {
        let mut buf = vec![0; len as usize];
        self.ram
            .read(u64::from(addr), &mut buf)
            .map_err(|e| e.to_string())?;
        Ok(buf)
    }
    pub fn write(&mut self, addr: u32, data: &[u8]) -> Result<(), String> {
        self.ram
            .write(u64::from(addr), data)
            .map_err(|e| e.to_string())?;
        self.cpu.invalidate_code(u64::from(addr), data.len() as u64);
        Ok(())
    }
    pub fn r8(&self, addr: u32) -> Result<u8, String> {
        Ok(self.read(addr, 1)?[0])
    }
    pub fn r16(&self, addr: u32) -> Result<u16, String> {
        let b = self.read(addr, 2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    pub fn r32(&self, addr: u32) -> Result<u32, String> {
        let b = self.read(addr, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub fn r64(&self, addr: u32) -> Result<u64, String> {
        Ok(u64::from(self.r32(addr)?) | u64::from(self.r32(addr.wrapping_add(4))?) << 32)
    }
    pub fn w8(&mut self, addr: u32, v: u8) -> Result<(), String> {
        self.write(addr, &[v])
    }
    pub fn w16(&mut self, addr: u32, v: u16) -> Result<(), String> {
        self.write(addr, &v.to_le_bytes())
    }
    pub fn w32(&mut self, addr: u32, v: u32) -> Result<(), String> {
        self.write(addr, &v.to_le_bytes())
    }
    pub fn w64(&mut self, addr: u32, v: u64) -> Result<(), String> {
        self.write(addr, &v.to_le_bytes())
    }

    /// A NUL-terminated UTF-16 string (at most 4096 units).
    pub fn wstr(&self, addr: u32) -> Result<String, String> {
        let mut units = Vec::new();
        for i in 0..4096u32 {
            let u = self.r16(addr.wrapping_add(2 * i))?;
            if u == 0 {
                return Ok(String::from_utf16_lossy(&units));
            }
            units.push(u);
        }
        Err(format!("unterminated UTF-16 string at {addr:#x}"))
    }

    /// Zeroed memory from the host heap (never freed: a test is short).
    pub fn alloc(&mut self, size: u32, align: u32) -> Result<u32, String> {
        let align = align.max(16);
        let start = self
            .heap_next
            .checked_add(align - 1)
            .ok_or("heap overflow")?
            & !(align - 1);
        let end = start.checked_add(size.max(1)).ok_or("heap overflow")?;
        if end > RAM_SIZE {
            return Err(format!("heap exhausted allocating {size} bytes"));
        }
        self.heap_next = end;
        self.write(start, &vec![0; size as usize])?;
        Ok(start)
    }

    /// Copies `data` into fresh heap memory.
    pub fn alloc_bytes(&mut self, data: &[u8]) -> Result<u32, String> {
        let p = self.alloc(data.len() as u32, 16)?;
        self.write(p, data)?;
        Ok(p)
    }

    /// A UNICODE_STRING (x86: Length, MaximumLength, Buffer) and its buffer.
    pub fn unicode_string(&mut self, s: &str) -> Result<u32, String> {
        let mut units: Vec<u8> = s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
        let len = units.len() as u16;
        units.extend([0, 0]);
        let buf = self.alloc_bytes(&units)?;
        let us = self.alloc(8, 16)?;
        self.w16(us, len)?;
        self.w16(us + 2, len + 2)?;
        self.w32(us + 4, buf)?;
        Ok(us)
    }

    // ---- thunks and images ------------------------------------------------------------

    /// The address of a host service named `name` (made on first use).
    pub fn thunk(&mut self, name: &str) -> u32 {
        let idx = match self.thunks.iter().position(|n| n == name) {
            Some(i) => i,
            None => {
                assert!((self.thunks.len() as u32) < MAX_THUNKS, "too many thunks");
                self.thunks.push(name.to_string());
                self.thunks.len() - 1
            }
        };
        let addr = THUNK_BASE + 4 * idx as u32;
        // out 0xE0, al; two NOPs to fill the slot.
        self.write(addr, &[0xE6, TRAP_PORT as u8, 0x90, 0x90])
            .expect("thunk page is RAM");
        addr
    }

    /// Maps a PE32 image at its preferred base and points every import at the thunk
    /// named `DLL!function`. Returns (image base, entry point).
    pub fn load_pe32(&mut self, file: &[u8]) -> Result<(u32, u32), String> {
        let (info, image) = aero_guest_tools::pe::map_image(file, IMAGE_MAX - IMAGE_MIN)
            .map_err(|e| e.to_string())?;
        if info.is_pe32_plus {
            return Err("not a 32-bit image".into());
        }
        let base = u32::try_from(info.image_base).map_err(|_| "image base above 4 GiB")?;
        let end = base
            .checked_add(image.len() as u32)
            .ok_or("image too large")?;
        if base < IMAGE_MIN || end > IMAGE_MAX {
            return Err(format!(
                "image at {base:#x}..{end:#x} is outside the image window"
            ));
        }
        self.write(base, &image)?;
        for imp in &info.imports {
            for (k, f) in imp.functions.iter().enumerate() {
                let t = self.thunk(&format!("{}!{}", imp.dll.to_ascii_lowercase(), f));
                self.w32(base + imp.iat_rva + 4 * k as u32, t)?;
            }
        }
        Ok((base, base + info.entry_point_rva))
    }

    // ---- running ------------------------------------------------------------------------

    fn push(&mut self, v: u32) -> Result<(), String> {
        let esp = (self.cpu.state.gpr[4] as u32).wrapping_sub(4);
        if esp < STACK_BOTTOM {
            return Err("guest stack overflow".into());
        }
        self.cpu.state.gpr[4] = u64::from(esp);
        self.w32(esp, v)
    }

    /// The `k`th stack argument of the service being handled (after the return address).
    pub fn arg(&self, k: u32) -> Result<u32, String> {
        self.r32((self.cpu.state.gpr[4] as u32).wrapping_add(4 + 4 * k))
    }
    pub fn ecx(&self) -> u32 {
        self.cpu.state.gpr[1] as u32
    }
    pub fn edx(&self) -> u32 {
        self.cpu.state.gpr[2] as u32
    }

    /// Applies queued register writes with RAM at hand.
    fn apply_register_writes(&mut self) {
        for (off, size, value) in std::mem::take(&mut self.bus.writes) {
            if std::env::var_os("AERO_X86_TRACE").is_some() {
                eprintln!("[x86] BAR0[{off:#x}] <- {value:#x} ({size} bytes)");
            }
            self.bus
                .gpu
                .mmio_write(off, usize::from(size), value, &mut self.ram);
        }
    }

    /// Calls the guest function at `func` with `args` and returns EDX:EAX. Services
    /// called meanwhile go to `os`. Checks the callee left ESP where `conv` says.
    pub fn call<S: Services>(
        &mut self,
        os: &mut S,
        func: u32,
        args: &[u32],
        conv: Conv,
    ) -> Result<u64, String> {
        let saved = self.cpu.state.clone();
        let esp0 = saved.gpr[4] as u32;
        for &a in args.iter().rev() {
            self.push(a)?;
        }
        let ret = self.thunk("<return to host>");
        self.push(ret)?;
        self.cpu.state.rip = u64::from(func);
        let mut budget = MAX_INSTRUCTIONS_PER_CALL;
        loop {
            let before = self.cpu.instructions_retired();
            let exit = self
                .cpu
                .run(&mut self.ram.bytes, &mut self.bus, budget.min(10_000_000));
            let ran = self.cpu.instructions_retired() - before;
            self.instructions += ran;
            budget = budget.saturating_sub(ran);
            self.apply_register_writes();
            match exit {
                RunExit::StopRequested if std::mem::take(&mut self.bus.trapped) => {
                    let eip = self.cpu.state.rip as u32;
                    let idx = eip.wrapping_sub(THUNK_BASE + 2) / 4;
                    let name = self
                        .thunks
                        .get(idx as usize)
                        .cloned()
                        .ok_or_else(|| format!("OUT to the trap port from {eip:#x}"))?;
                    if idx == 0 {
                        let esp = self.cpu.state.gpr[4] as u32;
                        let want = match conv {
                            Conv::Stdcall => esp0,
                            Conv::Cdecl => esp0 - 4 * args.len() as u32,
                        };
                        let result = (self.cpu.state.gpr[2] & 0xFFFF_FFFF) << 32
                            | (self.cpu.state.gpr[0] & 0xFFFF_FFFF);
                        // Callee-saved registers (EBX, ESI, EDI, EBP) must survive.
                        let clobbered: Vec<usize> = [3, 5, 6, 7]
                            .into_iter()
                            .filter(|&r| self.cpu.state.gpr[r] as u32 != saved.gpr[r] as u32)
                            .collect();
                        self.cpu.state.gpr[4] = saved.gpr[4];
                        if esp != want {
                            return Err(format!(
                                "function at {func:#x} returned with ESP {esp:#x}, expected {want:#x} \
                                 (wrong argument count or calling convention)"
                            ));
                        }
                        if !clobbered.is_empty() {
                            return Err(format!(
                                "function at {func:#x} clobbered callee-saved registers {clobbered:?}"
                            ));
                        }
                        return Ok(result);
                    }
                    let r = os.service(self, &name)?;
                    if std::env::var_os("AERO_X86_TRACE").is_some() {
                        eprintln!("[x86] {name} -> {:#x}", r.eax);
                    }
                    let esp = self.cpu.state.gpr[4] as u32;
                    let back = self.r32(esp)?;
                    self.cpu.state.gpr[4] = u64::from(esp.wrapping_add(4).wrapping_add(r.pop));
                    self.cpu.state.gpr[0] = u64::from(r.eax);
                    self.cpu.state.gpr[2] = u64::from(r.edx);
                    self.cpu.state.rip = u64::from(back);
                }
                RunExit::StopRequested | RunExit::BudgetExhausted => {
                    if budget == 0 {
                        return Err(format!(
                            "function at {func:#x} ran {MAX_INSTRUCTIONS_PER_CALL} instructions \
                             without returning (EIP {:#x})",
                            self.cpu.state.rip
                        ));
                    }
                }
                RunExit::Halted => {
                    return Err(format!("HLT at {:#x}", self.cpu.state.rip));
                }
                RunExit::Shutdown {
                    reason,
                    rip,
                    last_exception,
                    ..
                } => {
                    return Err(format!(
                        "guest fault in function {func:#x}: {reason} at EIP {rip:#x} \
                         (exception {last_exception:?})"
                    ));
                }
            }
        }
    }
}

/// Offsets and sizes of the driver's C structures, as the mingw-w64 compiler lays them out
/// from the same headers the driver is built with.
pub struct Layout(pub BTreeMap<String, u32>);

impl Layout {
    /// `T.member` (a member path such as `u.Memory.Start` or `List[0].Count`) or `T` for
    /// sizeof.
    pub fn get(&self, key: &str) -> u32 {
        *self
            .0
            .get(key)
            .unwrap_or_else(|| panic!("layout of {key} was not probed"))
    }

    /// Compiles a probe listing every entry with `compiler -S` and reads the constants
    /// back from the assembly.
    pub fn probe(
        compiler: &str,
        flags: &[&str],
        header: &std::path::Path,
        entries: &[&str],
        dir: &std::path::Path,
    ) -> Layout {
        let mut c = format!("#include \"{}\"\n#include <stddef.h>\n", header.display());
        for (i, e) in entries.iter().enumerate() {
            match e.split_once('.') {
                Some((ty, member)) => {
                    c += &format!(
                        "const unsigned long agpu_layout_{i} = offsetof({ty}, {member});\n"
                    )
                }
                None => c += &format!("const unsigned long agpu_layout_{i} = sizeof({e});\n"),
            }
        }
        std::fs::create_dir_all(dir).unwrap();
        let src = dir.join("layout_probe.c");
        let asm = dir.join("layout_probe.s");
        std::fs::write(&src, c).unwrap();
        let out = std::process::Command::new(compiler)
            .args(flags)
            .args(["-S", "-O0", "-o"])
            .arg(&asm)
            .arg(&src)
            .output()
            .unwrap_or_else(|e| panic!("{compiler}: {e}"));
        assert!(
            out.status.success(),
            "layout probe failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&asm).unwrap();
        let mut map = BTreeMap::new();
        let mut current: Option<usize> = None;
        for line in text.lines() {
            let line = line.trim();
            if let Some(i) = line
                .strip_suffix(':')
                .and_then(|l| l.trim_start_matches('_').strip_prefix("agpu_layout_"))
            {
                current = i.parse().ok();
            } else if let (Some(i), Some(v)) = (current, line.strip_prefix(".long")) {
                map.insert(entries[i].to_string(), v.trim().parse().unwrap());
                current = None;
            } else if let (Some(i), true) = (
                current,
                line.starts_with(".space") || line.starts_with(".zero"),
            ) {
                map.insert(entries[i].to_string(), 0); // a zero may land in .bss
                current = None;
            }
        }
        for e in entries {
            assert!(map.contains_key(*e), "no value for {e} in the probe output");
        }
        Layout(map)
    }
}
