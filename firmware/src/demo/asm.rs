//! Named symbols over iced-x86's `CodeAssembler` for the demo's 16-bit code.
//!
//! iced cannot use a label as an immediate or as an absolute displacement, and the demo
//! constantly needs "the address of this variable". So the code is assembled again and
//! again: each pass sees the symbol addresses of the previous pass through [`Asm::addr`],
//! until they stop moving (the same scheme as the VGA BIOS assembler).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::{Deref, DerefMut};

use iced_x86::BlockEncoderOptions;
use iced_x86::code_asm::{CodeAssembler, CodeLabel};

use super::DemoError;

/// Code like this converges in 2–3 passes; more means sizes oscillate, which is a bug.
const MAX_PASSES: usize = 16;

pub(crate) struct Asm {
    a: CodeAssembler,
    labels: BTreeMap<&'static str, CodeLabel>,
    bound: BTreeSet<&'static str>,
    used: BTreeSet<&'static str>,
    prev: BTreeMap<&'static str, u16>,
    /// Instruction count when the last label was bound: iced allows one label per
    /// instruction, so a second label at the same spot needs a filler `nop`.
    last_label_at: Option<usize>,
}

impl Deref for Asm {
    type Target = CodeAssembler;
    fn deref(&self) -> &CodeAssembler {
        &self.a
    }
}

impl DerefMut for Asm {
    fn deref_mut(&mut self) -> &mut CodeAssembler {
        &mut self.a
    }
}

impl Asm {
    fn new(prev: BTreeMap<&'static str, u16>) -> Result<Self, DemoError> {
        Ok(Self {
            a: CodeAssembler::new(16)?,
            labels: BTreeMap::new(),
            bound: BTreeSet::new(),
            used: BTreeSet::new(),
            prev,
            last_label_at: None,
        })
    }

    /// The label of symbol `name`, created on first use.
    pub(crate) fn l(&mut self, name: &'static str) -> CodeLabel {
        let a = &mut self.a;
        *self.labels.entry(name).or_insert_with(|| a.create_label())
    }

    /// Defines symbol `name` at the next emitted instruction or data.
    pub(crate) fn bind(&mut self, name: &'static str) -> Result<(), DemoError> {
        if !self.bound.insert(name) {
            return Err(DemoError::DuplicateSymbol(name));
        }
        let mut label = self.l(name);
        self.set(&mut label)?;
        // CodeLabel is a value: keep the copy that now carries the instruction index.
        self.labels.insert(name, label);
        Ok(())
    }

    /// Binds a local label (from `create_label`) at the next instruction.
    pub(crate) fn set(&mut self, label: &mut CodeLabel) -> Result<(), DemoError> {
        let here = self.a.instructions().len();
        if self.last_label_at == Some(here) {
            self.a.nop()?;
        }
        self.last_label_at = Some(self.a.instructions().len());
        self.a.set_label(label)?;
        Ok(())
    }

    /// Address of symbol `name` as found by the previous pass (0 in the first pass).
    pub(crate) fn addr(&mut self, name: &'static str) -> u16 {
        self.used.insert(name);
        self.prev.get(name).copied().unwrap_or(0)
    }

    pub(crate) fn call_sym(&mut self, name: &'static str) -> Result<(), DemoError> {
        let l = self.l(name);
        self.a.call(l)?;
        Ok(())
    }
}

/// Runs `emit` until symbol addresses are stable; returns the bytes for `origin` and the
/// final symbol addresses.
pub(crate) fn assemble(
    origin: u16,
    emit: impl Fn(&mut Asm) -> Result<(), DemoError>,
) -> Result<(Vec<u8>, BTreeMap<&'static str, u16>), DemoError> {
    let mut prev = BTreeMap::new();
    for _ in 0..MAX_PASSES {
        let mut asm = Asm::new(prev.clone())?;
        emit(&mut asm)?;
        if let Some(missing) = asm.labels.keys().find(|n| !asm.bound.contains(*n)) {
            return Err(DemoError::UndefinedSymbol(missing));
        }
        let result = asm.a.assemble_options(
            u64::from(origin),
            BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS,
        )?;
        let mut symbols = BTreeMap::new();
        for name in &asm.bound {
            let label = asm
                .labels
                .get(name)
                .ok_or(DemoError::UndefinedSymbol(name))?;
            let ip = result.label_ip(label)?;
            let ip = u16::try_from(ip).map_err(|_| DemoError::TooLarge(ip as usize))?;
            symbols.insert(*name, ip);
        }
        if let Some(missing) = asm.used.iter().find(|n| !symbols.contains_key(*n)) {
            return Err(DemoError::UndefinedSymbol(missing));
        }
        if symbols == prev {
            return Ok((result.inner.code_buffer, symbols));
        }
        prev = symbols;
    }
    Err(DemoError::NotConverged)
}
