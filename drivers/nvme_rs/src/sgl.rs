// SPDX-License-Identifier: GPL-2.0

//! Scatter Gather Lists (SGLs): how a command describes data in segments of any length and
//! alignment (NVM Express Base Specification, 4.3.2). One segment is a Data Block descriptor in
//! the command itself; more are Data Block descriptors in a list, a block of the controller's list
//! pool, that a Last Segment descriptor in the command points at.

use crate::blk::Status;
use crate::command::SglDescriptor;
use crate::controller::LIST_BLOCK_BYTES;
use crate::dma_local::{Gfp, Mapping, Pool, PoolBlock};
use crate::prp::MAX_SEGMENTS;

// A list block holds an SGL descriptor for every segment.
const _: () = assert!(SglDescriptor::BYTES * MAX_SEGMENTS <= LIST_BLOCK_BYTES);

/// A command's SGL Entry 1, and the list of descriptors it points at, if any, which must live
/// until the command completes.
pub(crate) struct Sgl<'a> {
    pub(crate) sgl1: SglDescriptor,
    pub(crate) list: Option<PoolBlock<'a, 'a, u64>>,
}

/// Describes the mapped data, `mappings` in segment order (`single` when there is exactly one),
/// with an SGL: one Data Block descriptor in the command, or a Last Segment descriptor pointing
/// at a list of them from `pool`.
pub(crate) fn build<'a, 'm>(
    pool: &'a Pool<'a, u64>,
    single: Option<&Mapping<'a>>,
    mappings: impl Iterator<Item = &'m Mapping<'a>>,
) -> Result<Sgl<'a>, Status>
where
    'a: 'm,
{
    if let Some(map) = single {
        return Ok(Sgl {
            sgl1: SglDescriptor::data_block(map.dma_handle(), map.len() as u32),
            list: None,
        });
    }
    // A block holds a descriptor for every segment (asserted above).
    let mut list = pool
        .alloc_unzeroed(Gfp::ATOMIC | Gfp::NOWARN)
        .map_err(|_| Status::RESOURCE)?;
    let mut count = 0;
    for map in mappings {
        let [address, length] =
            SglDescriptor::data_block(map.dma_handle(), map.len() as u32).quadwords();
        list.write(2 * count, address)
            .and_then(|()| list.write(2 * count + 1, length))
            .map_err(|_| Status::IOERR)?;
        count += 1;
    }
    Ok(Sgl {
        sgl1: SglDescriptor::last_segment(list.dma_handle(), (SglDescriptor::BYTES * count) as u32),
        list: Some(list),
    })
}
