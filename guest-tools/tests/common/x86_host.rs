//! Runs Windows kernel code (the shipped x86 and x64 `aerogpu.sys`) and, with
//! `win32_user.rs`, 32-bit user-mode programs and DLLs on Aero's own CPU, next to Aero's
//! own AeroGPU device model, with the operating system played by the test. Images load at
//! their preferred base or, relocated, anywhere in the image window.
//!
//! The machine: ring 0 with virtual = physical for the low 4 GiB, either flat 32-bit
//! protected mode without paging, or long mode with identity-mapped 2 MiB pages plus
//! KUSER_SHARED_DATA at its fixed x64 address (x64 drivers read the interrupt time there).
//! RAM at 0, the device's BAR0 above RAM. Every import and every callback the test hands out is a
//! thunk: `out 0xE0, al` at a known address. The CPU stops on that OUT, the test's
//! [`Services`] does the work on the host, and the harness returns to the caller as the
//! calling convention says (stdcall/cdecl/fastcall on x86, the Microsoft x64 convention).
//! Calling into the guest passes the arguments and a return address that is itself a
//! thunk, so a host call ends exactly when the guest function returns; the stack pointer
//! then proves the callee popped what stdcall says, and callee-saved registers are checked.

#![allow(dead_code)]

use std::collections::BTreeMap;

use aero_cpu::{Bus, Cpu, DescriptorTable, PageMapping, RunExit, Seg, Segment};
use aero_gpu::aerogpu::{AeroGpu, AeroGpuConfig, GuestMemory, SoftExecutor, VecMemory};

pub const RAM_SIZE: u32 = 64 << 20;
/// Long-mode page tables live in [0x1000, 0xA000).
const PML4: u32 = 0x1000;
/// The physical page behind KUSER_SHARED_DATA.
const KUSD_PAGE: u32 = 0xA000;
const KUSD_VA: u64 = 0xFFFF_F780_0000_0000;
/// Thunks: 4 bytes each. Index 0 is "return to the host".
pub const THUNK_BASE: u32 = 0xC000;
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
/// A guest function that runs longer than this is stuck (default of
/// [`Emu::max_instructions_per_call`]).
const MAX_INSTRUCTIONS_PER_CALL: u64 = 200_000_000;

/// The device the guest code drives: AeroGPU with the CPU executor, so copies, clears and
/// write-backs really happen and what the scanout shows can be checked.
pub type HostGpu = AeroGpu<SoftExecutor>;

/// A fresh device with the default configuration.
pub fn host_gpu() -> HostGpu {
    AeroGpu::with_executor(AeroGpuConfig::default(), SoftExecutor::default())
}

pub struct HostBus {
    pub gpu: HostGpu,
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
        if let Some(off) = paddr.checked_sub(u64::from(BAR0))
            && off < u64::from(BAR0_SIZE)
        {
            self.writes.push((off, size, value));
            self.stop = true;
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

/// What a host service returns to the guest (a 64-bit result is EDX:EAX on x86, RAX on
/// x64).
#[derive(Clone, Copy, Debug, Default)]
pub struct Return {
    pub eax: u32,
    pub edx: u32,
    /// Argument bytes the callee pops (x86 stdcall); ignored on x64, where the caller pops.
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
    /// 32 (protected mode) or 64 (long mode).
    pub bits: u32,
    pub cpu: Cpu,
    pub ram: VecMemory,
    pub bus: HostBus,
    thunks: Vec<String>,
    heap_next: u32,
    /// Where the next relocated image goes in the image window.
    image_next: u32,
    /// Guest instructions retired by host calls, for the report.
    pub instructions: u64,
    /// Host calls into the guest so far (varies the callee-saved register sentinels).
    calls: u64,
    pub max_instructions_per_call: u64,
    /// Set by a service when the guest ends its process (ExitProcess, exit): every
    /// [`call`](Self::call) in progress then returns this code at once.
    pub exited: Option<u32>,
}

/// A PE image mapped by [`Emu::load_pe_at`].
#[derive(Clone, Debug, Default)]
pub struct Image {
    pub base: u32,
    pub size: u32,
    pub entry: u32,
    /// Exported names and their addresses.
    pub exports: BTreeMap<String, u32>,
    /// Ordinal base of the export table and the address of each ordinal from it.
    pub ordinal_base: u32,
    pub ordinals: Vec<u32>,
    /// Address of the TLS directory (IMAGE_TLS_DIRECTORY), 0 when there is none.
    pub tls_directory: u32,
}

impl Emu {
    pub fn new(gpu: HostGpu, bits: u32) -> Emu {
        assert!(bits == 32 || bits == 64);
        let mut emu = Emu {
            bits,
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
            image_next: IMAGE_MIN,
            instructions: 0,
            calls: 0,
            max_instructions_per_call: MAX_INSTRUCTIONS_PER_CALL,
            exited: None,
        };
        emu.thunk("<return to host>");
        if bits == 64 {
            emu.long_mode_tables().expect("page tables fit in RAM");
        }
        let s = &mut emu.cpu.state;
        s.rflags = 0x2; // interrupts off: the host delivers them by calling the ISR
        // No IDT: any exception becomes a triple fault, which ends the call with an error.
        s.idtr = DescriptorTable { base: 0, limit: 0 };
        // As Windows runs: NE + ET + MP + PE, SSE enabled (OSFXSR, OSXMMEXCPT); x64
        // code saves XMM6-15 in every prologue.
        s.cr0 = 0x33;
        s.cr4 = 0x600;
        if bits == 64 {
            s.cr0 |= 0x8000_0000; // PG
            s.cr3 = u64::from(PML4);
            s.cr4 |= 0x20; // PAE
            s.efer = 0x500; // LME + LMA
        }
        s.seg[Seg::Cs as usize] = Segment {
            selector: 0x08,
            base: 0,
            limit: 0xFFFF_FFFF,
            attr: if bits == 64 { 0xA9B } else { 0xC9B }, // L or D/B
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

    /// Identity map of the low 4 GiB in 2 MiB pages, and KUSER_SHARED_DATA.
    fn long_mode_tables(&mut self) -> Result<(), String> {
        const PRESENT_RW: u64 = 0x3;
        let (pdpt, pd0) = (PML4 + 0x1000, PML4 + 0x2000);
        self.w64(PML4, u64::from(pdpt) | PRESENT_RW)?;
        for i in 0..4u32 {
            self.w64(pdpt + 8 * i, u64::from(pd0 + 0x1000 * i) | PRESENT_RW)?;
            for j in 0..512u32 {
                let addr = (u64::from(i) << 30) | (u64::from(j) << 21);
                self.w64(pd0 + 0x1000 * i + 8 * j, addr | PRESENT_RW | 0x80)?; // PS
            }
        }
        let (pdpt_hi, pd_hi, pt_hi) = (PML4 + 0x6000, PML4 + 0x7000, PML4 + 0x8000);
        let index = |shift: u32| ((KUSD_VA >> shift) & 511) as u32;
        self.w64(PML4 + 8 * index(39), u64::from(pdpt_hi) | PRESENT_RW)?;
        self.w64(pdpt_hi + 8 * index(30), u64::from(pd_hi) | PRESENT_RW)?;
        self.w64(pd_hi + 8 * index(21), u64::from(pt_hi) | PRESENT_RW)?;
        self.w64(pt_hi + 8 * index(12), u64::from(KUSD_PAGE) | PRESENT_RW)?;
        Ok(())
    }

    /// KUSER_SHARED_DATA's InterruptTime (at 0x8) and SystemTime (at 0x14), in 100 ns
    /// units, as KSYSTEM_TIME { LowPart, High1Time, High2Time }.
    pub fn set_shared_times(&mut self, interrupt: u64, system: u64) -> Result<(), String> {
        for (off, t) in [(0x8, interrupt), (0x14, system)] {
            self.w32(KUSD_PAGE + off, t as u32)?;
            self.w32(KUSD_PAGE + off + 4, (t >> 32) as u32)?;
            self.w32(KUSD_PAGE + off + 8, (t >> 32) as u32)?;
        }
        Ok(())
    }

    /// Bytes in a pointer.
    pub fn ptr(&self) -> u32 {
        self.bits / 8
    }

    /// A pointer-sized value (addresses the test hands out stay below 4 GiB).
    pub fn read_ptr(&self, addr: u32) -> Result<u32, String> {
        let v = if self.bits == 64 {
            self.r64(addr)?
        } else {
            u64::from(self.r32(addr)?)
        };
        u32::try_from(v).map_err(|_| format!("pointer {v:#x} at {addr:#x} is above 4 GiB"))
    }
    pub fn write_ptr(&mut self, addr: u32, v: u32) -> Result<(), String> {
        if self.bits == 64 {
            self.w64(addr, u64::from(v))
        } else {
            self.w32(addr, v)
        }
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

    /// A NUL-terminated byte string (at most 64 KiB).
    pub fn cstr_bytes(&self, addr: u32) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        let mut p = addr;
        while out.len() < 0x1_0000 {
            // Up to the end of the page, so a string near the top of RAM still reads.
            let chunk = 0x1000 - (p & 0xFFF);
            let bytes = self.read(p, chunk)?;
            match bytes.iter().position(|&b| b == 0) {
                Some(n) => {
                    out.extend_from_slice(&bytes[..n]);
                    return Ok(out);
                }
                None => out.extend_from_slice(&bytes),
            }
            p = p.wrapping_add(chunk);
        }
        Err(format!("unterminated string at {addr:#x}"))
    }
    pub fn cstr(&self, addr: u32) -> Result<String, String> {
        Ok(String::from_utf8_lossy(&self.cstr_bytes(addr)?).into_owned())
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

    /// A UNICODE_STRING (Length, MaximumLength, then Buffer pointer-aligned) and its
    /// buffer.
    pub fn unicode_string(&mut self, s: &str) -> Result<u32, String> {
        let mut units: Vec<u8> = s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
        let len = units.len() as u16;
        units.extend([0, 0]);
        let buf = self.alloc_bytes(&units)?;
        let us = self.alloc(16, 16)?;
        self.w16(us, len)?;
        self.w16(us + 2, len + 2)?;
        self.write_ptr(us + self.ptr(), buf)?;
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

    /// Maps a PE image (PE32 in 32-bit mode, PE32+ in 64-bit mode) at its preferred base
    /// and points every import at the thunk named `dll!function`. Returns (image base,
    /// entry point).
    pub fn load_pe(&mut self, file: &[u8]) -> Result<(u32, u32), String> {
        let image = self.load_pe_at(file, None, &mut |emu, dll, f| {
            Ok(emu.thunk(&format!("{dll}!{f}")))
        })?;
        Ok((image.base, image.entry))
    }

    /// Maps a PE image at its preferred base (`None`), at the next free place in the image
    /// window (`Some(0)`) or at `Some(base)`, applying its base relocations when it moves. Each import's address comes from `resolve(emu, lowercase dll, function)`
    /// (a thunk for code, or the address of a variable for data imports).
    pub fn load_pe_at(
        &mut self,
        file: &[u8],
        base: Option<u32>,
        resolve: &mut dyn FnMut(&mut Emu, &str, &str) -> Result<u32, String>,
    ) -> Result<Image, String> {
        let (info, mut image) = aero_guest_tools::pe::map_image(file, IMAGE_MAX - IMAGE_MIN)
            .map_err(|e| e.to_string())?;
        if info.is_pe32_plus != (self.bits == 64) {
            return Err(format!("not a {}-bit image", self.bits));
        }
        let preferred = u32::try_from(info.image_base).map_err(|_| "image base above 4 GiB");
        let size = image.len() as u32;
        let base = match base {
            None => preferred?,
            Some(0) => {
                let b = (self.image_next + 0xFFFF) & !0xFFFF;
                self.image_next = b.checked_add(size).ok_or("image too large")?;
                b
            }
            Some(b) => b,
        };
        let end = base.checked_add(size).ok_or("image too large")?;
        if base < IMAGE_MIN || end > IMAGE_MAX {
            return Err(format!(
                "image at {base:#x}..{end:#x} is outside the image window"
            ));
        }
        let dirs = DataDirectories::of(&image, info.is_pe32_plus)?;
        if u64::from(base) != info.image_base {
            relocate(&mut image, &dirs, info.image_base, base, info.is_pe32_plus)?;
        }
        let exports = exports(&image, &dirs, base)?;
        self.write(base, &image)?;
        for imp in &info.imports {
            for (k, f) in imp.functions.iter().enumerate() {
                let addr = resolve(self, &imp.dll.to_ascii_lowercase(), f)?;
                let slot = base
                    .wrapping_add(imp.iat_rva)
                    .wrapping_add(self.ptr() * k as u32);
                self.write_ptr(slot, addr)?;
            }
        }
        Ok(Image {
            base,
            size,
            entry: base.wrapping_add(info.entry_point_rva),
            exports: exports.by_name,
            ordinal_base: exports.ordinal_base,
            ordinals: exports.ordinals,
            tls_directory: if dirs.tls.1 == 0 {
                0
            } else {
                base.wrapping_add(dirs.tls.0)
            },
        })
    }

    // ---- running ------------------------------------------------------------------------

    fn push(&mut self, v: u32) -> Result<(), String> {
        let sp = (self.cpu.state.gpr[4] as u32).wrapping_sub(self.ptr());
        if sp < STACK_BOTTOM {
            return Err("guest stack overflow".into());
        }
        self.cpu.state.gpr[4] = u64::from(sp);
        self.write_ptr(sp, v)
    }

    /// Argument `k` of the service being handled: on the stack after the return address
    /// (x86), or RCX, RDX, R8, R9 then the stack above the 32-byte home area (x64).
    pub fn arg64(&self, k: u32) -> Result<u64, String> {
        let sp = self.cpu.state.gpr[4] as u32;
        if self.bits == 32 {
            return Ok(u64::from(self.r32(sp.wrapping_add(4 + 4 * k))?));
        }
        Ok(match k {
            0 => self.cpu.state.gpr[1],
            1 => self.cpu.state.gpr[2],
            2 => self.cpu.state.gpr[8],
            3 => self.cpu.state.gpr[9],
            _ => self.r64(sp.wrapping_add(8 + 8 * k))?,
        })
    }
    /// [`arg64`](Self::arg64) truncated: pointers, handles and 32-bit values.
    pub fn arg(&self, k: u32) -> Result<u32, String> {
        Ok(self.arg64(k)? as u32)
    }
    /// x86 fastcall registers.
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
        let saved_xmm = self.cpu.sse().xmm;
        let sp0 = saved.gpr[4] as u32;
        // Callee-saved: EBX, EBP, ESI, EDI (and R12-R15, XMM6-XMM15 on x64). They get
        // distinct values for the call, so a callee that changes one and does not restore
        // it is caught, then the caller's values come back.
        let saved_regs: &[usize] = if self.bits == 64 {
            &[3, 5, 6, 7, 12, 13, 14, 15]
        } else {
            &[3, 5, 6, 7]
        };
        self.calls += 1;
        let call = self.calls & 0xFFF;
        let sentinel = move |r: usize| 0x5AC0_0000 | (r as u64) << 12 | call;
        let xmm_sentinel = |i: usize| u128::from(sentinel(i)) << 64 | 0xA5A5_0000 | i as u128;
        for &r in saved_regs {
            self.cpu.state.gpr[r] = sentinel(r);
        }
        if self.bits == 64 {
            for i in 6..16 {
                self.cpu.sse_mut().xmm[i] = xmm_sentinel(i);
            }
        }
        if self.bits == 64 {
            // Stack arguments above a 32-byte home area; RSP is 16-byte aligned at the
            // call, so the callee starts with RSP = 8 (mod 16).
            let stack_args = args.len().saturating_sub(4) as u32;
            let mut sp = (sp0 - 32 - 8 * stack_args) & !15;
            for (k, &a) in args.iter().enumerate().skip(4) {
                self.w64(sp + 32 + 8 * (k as u32 - 4), u64::from(a))?;
            }
            for (k, &a) in args.iter().take(4).enumerate() {
                self.cpu.state.gpr[[1, 2, 8, 9][k]] = u64::from(a);
            }
            sp -= 8;
            let ret = self.thunk("<return to host>");
            self.w64(sp, u64::from(ret))?;
            self.cpu.state.gpr[4] = u64::from(sp);
        } else {
            for &a in args.iter().rev() {
                self.push(a)?;
            }
            let ret = self.thunk("<return to host>");
            self.push(ret)?;
        }
        let entry_sp = self.cpu.state.gpr[4] as u32;
        self.cpu.state.rip = u64::from(func);
        let mut budget = self.max_instructions_per_call;
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
                        let sp = self.cpu.state.gpr[4] as u32;
                        let want = match (self.bits, conv) {
                            (64, _) => entry_sp + 8,
                            (_, Conv::Stdcall) => sp0,
                            (_, Conv::Cdecl) => sp0 - 4 * args.len() as u32,
                        };
                        let result = if self.bits == 64 {
                            self.cpu.state.gpr[0]
                        } else {
                            (self.cpu.state.gpr[2] & 0xFFFF_FFFF) << 32
                                | (self.cpu.state.gpr[0] & 0xFFFF_FFFF)
                        };
                        let mut clobbered: Vec<String> = saved_regs
                            .iter()
                            .filter(|&&r| self.cpu.state.gpr[r] != sentinel(r))
                            .map(|r| format!("gpr{r}"))
                            .collect();
                        if self.bits == 64 {
                            clobbered.extend(
                                (6..16)
                                    .filter(|&i| self.cpu.sse().xmm[i] != xmm_sentinel(i))
                                    .map(|i| format!("xmm{i}")),
                            );
                        }
                        for &r in saved_regs {
                            self.cpu.state.gpr[r] = saved.gpr[r];
                        }
                        self.cpu.sse_mut().xmm[6..].copy_from_slice(&saved_xmm[6..]);
                        self.cpu.state.gpr[4] = saved.gpr[4];
                        if sp != want {
                            return Err(format!(
                                "function at {func:#x} returned with SP {sp:#x}, expected {want:#x} \
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
                    if let Some(code) = self.exited {
                        self.cpu.state.gpr[4] = saved.gpr[4];
                        return Ok(u64::from(code));
                    }
                    if std::env::var_os("AERO_X86_TRACE").is_some() {
                        eprintln!("[x86] {name} -> {:#x}", r.eax);
                    }
                    let sp = self.cpu.state.gpr[4] as u32;
                    let back = self.read_ptr(sp)?;
                    if self.bits == 64 {
                        self.cpu.state.gpr[4] = u64::from(sp + 8);
                        self.cpu.state.gpr[0] = u64::from(r.edx) << 32 | u64::from(r.eax);
                    } else {
                        self.cpu.state.gpr[4] = u64::from(sp.wrapping_add(4).wrapping_add(r.pop));
                        self.cpu.state.gpr[0] = u64::from(r.eax);
                        self.cpu.state.gpr[2] = u64::from(r.edx);
                    }
                    self.cpu.state.rip = u64::from(back);
                }
                RunExit::StopRequested | RunExit::BudgetExhausted => {
                    if budget == 0 {
                        return Err(format!(
                            "function at {func:#x} ran {} instructions without returning \
                             (EIP {:#x})",
                            self.max_instructions_per_call, self.cpu.state.rip
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

fn u32_at(image: &[u8], off: u32) -> Result<u32, String> {
    let o = off as usize;
    image
        .get(o..o.saturating_add(4))
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| format!("image offset {off:#x} out of range"))
}
fn u16_at(image: &[u8], off: u32) -> Result<u16, String> {
    let o = off as usize;
    image
        .get(o..o.saturating_add(2))
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .ok_or_else(|| format!("image offset {off:#x} out of range"))
}

/// The optional header's data directories a loader needs, as (RVA, size).
struct DataDirectories {
    export: (u32, u32),
    reloc: (u32, u32),
    tls: (u32, u32),
    /// Offset of the ImageBase field in the mapped headers.
    image_base_field: u32,
}

impl DataDirectories {
    fn of(image: &[u8], pe32_plus: bool) -> Result<DataDirectories, String> {
        let opt = u32_at(image, 0x3C)?.checked_add(24).ok_or("bad e_lfanew")?;
        let dirs = opt.wrapping_add(if pe32_plus { 112 } else { 96 });
        let count = u32_at(image, dirs.wrapping_sub(4))?;
        let dir = |i: u32| -> Result<(u32, u32), String> {
            if i >= count {
                return Ok((0, 0));
            }
            let at = dirs.wrapping_add(8 * i);
            Ok((u32_at(image, at)?, u32_at(image, at.wrapping_add(4))?))
        };
        Ok(DataDirectories {
            export: dir(0)?,
            reloc: dir(5)?,
            tls: dir(9)?,
            image_base_field: opt.wrapping_add(if pe32_plus { 24 } else { 28 }),
        })
    }
}

/// Applies the base relocation table for a move from `from` to `to` (and records the new
/// base in the headers, as the Windows loader does).
fn relocate(
    image: &mut [u8],
    dirs: &DataDirectories,
    from: u64,
    to: u32,
    pe32_plus: bool,
) -> Result<(), String> {
    let (rva, size) = dirs.reloc;
    if size == 0 {
        return Err("the image must move but has no base relocations".into());
    }
    let delta = u64::from(to).wrapping_sub(from);
    let mut block = rva;
    let end = rva.checked_add(size).ok_or("bad relocation directory")?;
    while block < end {
        let page = u32_at(image, block)?;
        let len = u32_at(image, block.wrapping_add(4))?;
        if len < 8 {
            return Err(format!("relocation block at {block:#x} has size {len}"));
        }
        for k in 0..(len - 8) / 2 {
            let e = u16_at(image, block.wrapping_add(8 + 2 * k))?;
            let at = page.wrapping_add(u32::from(e & 0xFFF)) as usize;
            let width = match e >> 12 {
                0 => continue, // padding
                3 => 4,        // HIGHLOW
                10 => 8,       // DIR64
                t => return Err(format!("relocation type {t} at {at:#x} not supported")),
            };
            let slot = image
                .get_mut(at..at.saturating_add(width))
                .ok_or_else(|| format!("relocation at {at:#x} out of range"))?;
            if width == 4 {
                let v = u32::from_le_bytes(slot[..4].try_into().unwrap());
                slot.copy_from_slice(&v.wrapping_add(delta as u32).to_le_bytes());
            } else {
                let v = u64::from_le_bytes(slot[..8].try_into().unwrap());
                slot.copy_from_slice(&v.wrapping_add(delta).to_le_bytes());
            }
        }
        block = block.checked_add(len).ok_or("bad relocation block")?;
    }
    let field = dirs.image_base_field as usize;
    let width = if pe32_plus { 8 } else { 4 };
    let slot = image
        .get_mut(field..field.saturating_add(width))
        .ok_or("ImageBase field out of range")?;
    slot.copy_from_slice(&u64::from(to).to_le_bytes()[..width]);
    Ok(())
}

/// An image's export table, as in [`Image`].
#[derive(Default)]
struct Exports {
    by_name: BTreeMap<String, u32>,
    ordinal_base: u32,
    ordinals: Vec<u32>,
}

/// Reads the export table; forwarded exports are refused.
fn exports(image: &[u8], dirs: &DataDirectories, base: u32) -> Result<Exports, String> {
    let (dir, size) = dirs.export;
    if size == 0 {
        return Ok(Exports::default());
    }
    let ordinal_base = u32_at(image, dir.wrapping_add(16))?;
    let functions = u32_at(image, dir.wrapping_add(20))?;
    let names = u32_at(image, dir.wrapping_add(24))?;
    let (funcs_rva, names_rva, ords_rva) = (
        u32_at(image, dir.wrapping_add(28))?,
        u32_at(image, dir.wrapping_add(32))?,
        u32_at(image, dir.wrapping_add(36))?,
    );
    if functions > 0x1_0000 || names > functions {
        return Err(format!(
            "export table claims {functions} functions, {names} names"
        ));
    }
    let mut ordinals = Vec::new();
    for i in 0..functions {
        let rva = u32_at(image, funcs_rva.wrapping_add(4 * i))?;
        if rva >= dir && u64::from(rva) < u64::from(dir) + u64::from(size) {
            return Err(format!(
                "forwarded export #{} not supported",
                ordinal_base.wrapping_add(i)
            ));
        }
        ordinals.push(if rva == 0 { 0 } else { base.wrapping_add(rva) });
    }
    let mut by_name = BTreeMap::new();
    for i in 0..names {
        let name_rva = u32_at(image, names_rva.wrapping_add(4 * i))? as usize;
        let name = image
            .get(name_rva..)
            .and_then(|s| s.split(|&b| b == 0).next())
            .ok_or("export name out of range")?;
        let index = u16_at(image, ords_rva.wrapping_add(2 * i))?;
        let addr = *ordinals
            .get(usize::from(index))
            .ok_or("export ordinal out of range")?;
        by_name.insert(String::from_utf8_lossy(name).into_owned(), addr);
    }
    Ok(Exports {
        by_name,
        ordinal_base,
        ordinals,
    })
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
