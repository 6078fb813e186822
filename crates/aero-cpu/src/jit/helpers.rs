//! Calls from compiled code back into the interpreter: memory operands (with the
//! interpreter's segment checks, paging, MMIO and code-page tracking) and whole
//! flag-neutral instructions. Argument `a` is the instruction index in the block, plus
//! the operand number in bits 8.. where one is needed.

use super::{Env, JitCtx};

/// On every helper entry: the iterations a self-loop block finished count as retired
/// before the helper's instruction runs (devices read the count).
#[inline(always)]
pub fn enter(env: &mut Env<'_, '_>, ctx: &mut JitCtx) {
    env.ex.c.retired += std::mem::take(&mut ctx.loop_retired);
    ctx.helper_calls += 1;
}

/// Record a helper's outcome where generated code tests it. A self-loop block stops
/// iterating after anything the run loop would look at before the next block: an event,
/// or a bus call (device state, the INTR line or a stop request may have changed).
#[inline(always)]
fn outcome<T: Default>(env: &mut Env<'_, '_>, ctx: &mut JitCtx, r: crate::fault::XResult<T>) -> T {
    ctx.end_block = env.ex.c.end_block as u64;
    // (Every bus call sets `stop_stale`, which the run loop clears before any block.)
    if (env.ex.c.events != 0) | env.ex.bus.stop_stale {
        ctx.loop_left = 0;
    }
    match r {
        Ok(v) => {
            ctx.status = 0;
            v
        }
        Err(f) => {
            env.fault = Some(f);
            ctx.status = 1;
            T::default()
        }
    }
}

/// Operand `a >> 8` of instruction `a & 0xFF`.
pub fn read_op(env: &mut Env<'_, '_>, ctx: &mut JitCtx, a: u64, _: u64) -> u64 {
    let Some(i) = env.insns.get(a as usize & 0xFF) else {
        return outcome(env, ctx, Err(crate::fault::Fault::ud()));
    };
    env.ex.c.pos = (a & 0xFF) as u32;
    let r = env.ex.read_op(i, (a >> 8) as usize % 3);
    outcome(env, ctx, r)
}

pub fn write_op(env: &mut Env<'_, '_>, ctx: &mut JitCtx, a: u64, v: u64) -> u64 {
    let Some(i) = env.insns.get(a as usize & 0xFF) else {
        return outcome(env, ctx, Err(crate::fault::Fault::ud()));
    };
    env.ex.c.pos = (a & 0xFF) as u32;
    let r = env.ex.write_op(i, (a >> 8) as usize % 3, v);
    outcome(env, ctx, r.map(|()| 0))
}

/// Read the read-modify-write destination (operand 0), remembering where it is.
pub fn rmw_read(env: &mut Env<'_, '_>, ctx: &mut JitCtx, a: u64, _: u64) -> u64 {
    let Some(i) = env.insns.get(a as usize & 0xFF) else {
        return outcome(env, ctx, Err(crate::fault::Fault::ud()));
    };
    env.ex.c.pos = (a & 0xFF) as u32;
    let r = env.ex.rmw_loc(i, 0).and_then(|loc| {
        env.rmw = Some(loc);
        env.ex.loc_read(loc)
    });
    outcome(env, ctx, r)
}

/// Write the result to the destination `rmw_read` resolved.
pub fn rmw_write(env: &mut Env<'_, '_>, ctx: &mut JitCtx, a: u64, v: u64) -> u64 {
    env.ex.c.pos = (a & 0xFF) as u32;
    let r = match env.rmw.take() {
        Some(loc) => env.ex.loc_write(loc, v),
        None => Err(crate::fault::Fault::ud()),
    };
    outcome(env, ctx, r.map(|()| 0))
}

/// Run instruction `a` through its interpreter handler (flag-neutral instructions only:
/// the lazy flags are not synchronized around the call).
pub fn handler(env: &mut Env<'_, '_>, ctx: &mut JitCtx, a: u64, _: u64) -> u64 {
    let Some(i) = env.insns.get(a as usize & 0xFF) else {
        return outcome(env, ctx, Err(crate::fault::Fault::ud()));
    };
    env.ex.c.pos = (a & 0xFF) as u32;
    let r = (i.handler)(env.ex, i);
    outcome(env, ctx, r.map(|()| 0))
}
