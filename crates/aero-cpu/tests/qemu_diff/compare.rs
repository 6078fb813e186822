//! Field-by-field comparison of a QEMU record with an Aero record, honouring the case's
//! undefined bits and the documented exclusions.

use std::fmt::Write;

use super::case::{Case, Mode};
use super::exclusions::FX_IGNORED;
use super::record::Record;

const GPR_NAMES: [&str; 16] = [
    "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13",
    "r14", "r15",
];
const SEG_NAMES: [&str; 6] = ["es", "cs", "ss", "ds", "fs", "gs"];
/// Architectural RFLAGS bits a PUSHF image can show (RF and VM are cleared by PUSHF).
const FLAGS_COMPARED: u64 = 0x0024_7FD7;

/// Differences as readable lines; empty when the records agree.
pub fn diff(case: &Case, q: &Record, a: &Record) -> Vec<String> {
    let mut d = Vec::new();
    if q.exc_vec != a.exc_vec {
        d.push(format!(
            "exception: qemu {:?} aero {:?}",
            q.exc_vec, a.exc_vec
        ));
    } else if q.exc_vec.is_some() {
        if q.exc_err != a.exc_err {
            d.push(format!(
                "error code: qemu {:#x} aero {:#x}",
                q.exc_err, a.exc_err
            ));
        }
        if q.exc_ip != a.exc_ip {
            d.push(format!(
                "exception ip: qemu {:#x} aero {:#x}",
                q.exc_ip, a.exc_ip
            ));
        }
    }
    for (i, name) in GPR_NAMES.iter().enumerate().take(case.mode.gpr_count()) {
        if case.undefined.gprs & (1 << i) != 0 {
            continue;
        }
        if q.gpr[i] != a.gpr[i] {
            d.push(format!("{name}: qemu {:#x} aero {:#x}", q.gpr[i], a.gpr[i]));
        }
    }
    let mask = FLAGS_COMPARED & !case.undefined.flags;
    if (q.rflags ^ a.rflags) & mask != 0 {
        d.push(format!(
            "rflags: qemu {:#x} aero {:#x} (differing {:#x}, undefined {:#x})",
            q.rflags,
            a.rflags,
            (q.rflags ^ a.rflags) & mask,
            case.undefined.flags
        ));
    }
    for (i, name) in SEG_NAMES.iter().enumerate() {
        if q.segs[i] != a.segs[i] {
            d.push(format!(
                "{name}: qemu {:#x} aero {:#x}",
                q.segs[i], a.segs[i]
            ));
        }
    }
    match (&q.fx, &a.fx) {
        (Some(qf), Some(af)) => fx_diff(case, qf, af, &mut d),
        (None, None) => {}
        _ => d.push("FXSAVE presence differs".into()),
    }
    if q.scratch != a.scratch {
        d.push(format!(
            "memory: qemu {} aero {}",
            hex_diff(&q.scratch, &a.scratch),
            hex_diff(&a.scratch, &q.scratch)
        ));
    }
    if q.stack != a.stack {
        d.push(format!(
            "stack: qemu {} aero {}",
            hex(&q.stack),
            hex(&a.stack)
        ));
    }
    d
}

fn fx_diff(case: &Case, q: &[u8], a: &[u8], d: &mut Vec<String>) {
    let ignored = |i: usize| FX_IGNORED.iter().any(|&(s, e, _)| i >= s && i < e);
    let u16_at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
    if u16_at(q, 0) != u16_at(a, 0) {
        d.push(format!(
            "fcw: qemu {:#06x} aero {:#06x}",
            u16_at(q, 0),
            u16_at(a, 0)
        ));
    }
    let fsw_mask = !case.undefined.fsw;
    if (u16_at(q, 2) ^ u16_at(a, 2)) & fsw_mask != 0 {
        d.push(format!(
            "fsw: qemu {:#06x} aero {:#06x} (undefined {:#06x})",
            u16_at(q, 2),
            u16_at(a, 2),
            case.undefined.fsw
        ));
    }
    if q[4] != a[4] {
        d.push(format!("ftw: qemu {:#04x} aero {:#04x}", q[4], a[4]));
    }
    let mxcsr = |b: &[u8]| u32::from_le_bytes([b[24], b[25], b[26], b[27]]);
    if (mxcsr(q) ^ mxcsr(a)) & !super::exclusions::MXCSR_IGNORED != 0 {
        d.push(format!("mxcsr: qemu {:#x} aero {:#x}", mxcsr(q), mxcsr(a)));
    }
    for i in (6..24).chain(28..32) {
        if !ignored(i) && q[i] != a[i] {
            d.push(format!(
                "fxsave[{i}]: qemu {} aero {}",
                hex(&q[0..32]),
                hex(&a[0..32])
            ));
            break;
        }
    }
    for r in 0..8 {
        let o = 32 + r * 16;
        // After an MMX instruction TOP = 0, so FXSAVE slot r is physical register r.
        let len = if case.undefined.st_high & (1 << r) != 0 {
            super::exclusions::MMX_WRITE_EXPONENT
        } else {
            10
        };
        if q[o..o + len] != a[o..o + len] {
            d.push(format!(
                "st{r} (fxsave order): qemu {} aero {}",
                f80_hex(&q[o..o + 10]),
                f80_hex(&a[o..o + 10])
            ));
        }
    }
    let nxmm = if case.mode == Mode::Long64 { 16 } else { 8 };
    for r in 0..nxmm {
        let o = 160 + r * 16;
        if q[o..o + 16] != a[o..o + 16] {
            d.push(format!(
                "xmm{r}: qemu {} aero {}",
                xmm_hex(&q[o..o + 16]),
                xmm_hex(&a[o..o + 16])
            ));
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().fold(String::new(), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

/// Only the differing bytes, as offset:value.
fn hex_diff(x: &[u8], y: &[u8]) -> String {
    let mut s = String::new();
    for (i, (a, b)) in x.iter().zip(y).enumerate() {
        if a != b {
            let _ = write!(s, "[{i}]={a:02x} ");
        }
    }
    s
}

fn f80_hex(b: &[u8]) -> String {
    format!(
        "{:04x}:{:016x}",
        u16::from_le_bytes([b[8], b[9]]),
        u64::from_le_bytes(b[0..8].try_into().unwrap_or([0; 8]))
    )
}

fn xmm_hex(b: &[u8]) -> String {
    format!(
        "{:016x}{:016x}",
        u64::from_le_bytes(b[8..16].try_into().unwrap_or([0; 8])),
        u64::from_le_bytes(b[0..8].try_into().unwrap_or([0; 8]))
    )
}

/// The inputs of a case, for mismatch reports.
pub fn describe_inputs(case: &Case) -> String {
    let mut s = String::new();
    for (i, name) in GPR_NAMES.iter().enumerate().take(case.mode.gpr_count()) {
        if i != 4 {
            let _ = write!(s, "{name}={:#x} ", case.gpr[i]);
        }
    }
    let _ = write!(s, "rflags={:#x}", case.rflags);
    if let Some(fx) = &case.fx {
        let _ = write!(
            s,
            " fcw={:#06x} fsw={:#06x} ftw={:#04x} mxcsr={:#x}",
            u16::from_le_bytes([fx[0], fx[1]]),
            u16::from_le_bytes([fx[2], fx[3]]),
            fx[4],
            u32::from_le_bytes([fx[24], fx[25], fx[26], fx[27]])
        );
        for r in 0..8 {
            let o = 32 + r * 16;
            let _ = write!(s, "\n        st{r}={}", f80_hex(&fx[o..o + 10]));
        }
        for r in 0..case.mode.gpr_count() {
            let o = 160 + r * 16;
            let _ = write!(
                s,
                "{}xmm{r}={}",
                if r % 4 == 0 { "\n        " } else { " " },
                xmm_hex(&fx[o..o + 16])
            );
        }
        let _ = write!(s, "\n        mem={}", hex(&case.mem));
    }
    s
}
