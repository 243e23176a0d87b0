// SPDX-License-Identifier: GPL-2.0

//! Smoke test of the kernel build and the harness: an out-of-tree Rust module that does a little
//! work the host can check. On load it fills a buffer of `len` bytes with a pattern and reports the
//! buffer's FNV-1a checksum; on unload it reports again, from the same buffer.

use kernel::prelude::*;

module! {
    type: RustSmoke,
    name: "rust_smoke",
    authors: ["rust-dma-drivers"],
    description: "Smoke test module of the rust-dma-drivers harness",
    license: "GPL",
    params: {
        len: u32 {
            default: 4096,
            description: "Length of the buffer to checksum, in bytes",
        },
    },
}

struct RustSmoke {
    buffer: KVec<u8>,
}

/// The byte at `index` of the pattern; the host computes the same.
fn pattern(index: usize) -> u8 {
    (index.wrapping_mul(31) ^ (index >> 8)) as u8
}

/// 32-bit FNV-1a.
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5, |hash, &b| {
        (hash ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

impl kernel::Module for RustSmoke {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let len = usize::try_from(module_parameters::len.value()).map_err(|_| EINVAL)?;
        let mut buffer = KVec::with_capacity(len, GFP_KERNEL)?;
        for i in 0..len {
            buffer.push(pattern(i), GFP_KERNEL)?;
        }
        pr_info!("loaded: len={} fnv1a={:#010x}\n", len, fnv1a(&buffer));
        Ok(RustSmoke { buffer })
    }
}

impl Drop for RustSmoke {
    fn drop(&mut self) {
        pr_info!(
            "unloading: len={} fnv1a={:#010x}\n",
            self.buffer.len(),
            fnv1a(&self.buffer)
        );
    }
}
