//! Which handles the pipeline currently references. Kept so a destroyed handle can never
//! stay bound (the executor would otherwise see a dangling reference) and so draws can
//! check their prerequisites.

use aero_protocol::Handle;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bindings {
    pub render_targets: [Handle; 8],
    pub depth_stencil: Handle,
    pub vertex_buffers: [Handle; 16],
    pub index_buffer: Handle,
    /// [vertex, pixel][slot]
    pub textures: [[Handle; 16]; 2],
    pub vs: Handle,
    pub ps: Handle,
    pub input_layout: Handle,
}

impl Bindings {
    /// Unbinds `handle` everywhere (it was destroyed).
    pub fn forget(&mut self, handle: Handle) {
        let clear = |slot: &mut Handle| {
            if *slot == handle {
                *slot = 0;
            }
        };
        self.render_targets.iter_mut().for_each(clear);
        self.vertex_buffers.iter_mut().for_each(clear);
        self.textures.iter_mut().flatten().for_each(clear);
        for slot in [
            &mut self.depth_stencil,
            &mut self.index_buffer,
            &mut self.vs,
            &mut self.ps,
            &mut self.input_layout,
        ] {
            clear(slot);
        }
    }
}
