// SPDX-License-Identifier: GPL-2.0

//! Physical Region Page (PRP) entries: how a command describes data that is mapped in pages, with
//! PRP Entry 1 and 2 and, beyond two pages, a PRP list that PRP Entry 2 points at (NVM Express
//! Base Specification, 4.3.1). The list is a block of the controller's list pool.

use crate::blk::Status;
use crate::controller::LIST_BLOCK_BYTES;
use crate::dma_local::{Gfp, Mapping, Pool, PoolBlock};
use crate::regs::PAGE_SIZE;

/// Entries of a PRP list: enough for the largest request plus its offset.
pub(crate) const PRP_LIST_ENTRIES: usize = 128;
/// The most segments of one request: its largest size in pages, plus one for a first page that
/// starts at an offset.
pub(crate) const MAX_SEGMENTS: usize = PRP_LIST_ENTRIES + 1;
/// The largest request in bytes.
pub(crate) const MAX_TRANSFER: usize = PRP_LIST_ENTRIES * PAGE_SIZE;
// A list block holds a PRP list.
const _: () = assert!(8 * PRP_LIST_ENTRIES <= LIST_BLOCK_BYTES);

/// A command's PRP Entry 1 and PRP Entry 2, and the PRP list that the latter points at, if any,
/// which must live until the command completes.
pub(crate) struct Prps<'a> {
    pub(crate) prp1: u64,
    pub(crate) prp2: u64,
    pub(crate) list: Option<PoolBlock<'a, 'a, u64>>,
}

/// Describes the mapped data, `mappings` in segment order (`single` when there is exactly one),
/// with PRP1, PRP2 and, beyond two pages, a PRP list from `pool`; `None`, keeping nothing, when
/// PRPs cannot describe it: only the first mapping may start inside a page, and only the last may
/// end inside one (data the disk allows only when the controller has SGLs).
pub(crate) fn build<'a, 'm>(
    pool: &'a Pool<'a, u64>,
    single: Option<&Mapping<'a>>,
    mappings: impl Iterator<Item = &'m Mapping<'a>>,
) -> Result<Option<Prps<'a>>, Status>
where
    'a: 'm,
{
    const PAGE: u64 = PAGE_SIZE as u64;
    // The common case, as in the C driver: one mapping within two pages needs no list.
    if let Some(map) = single {
        let start = map.dma_handle();
        let end = start + map.len() as u64;
        let second_page = (start / PAGE + 1) * PAGE;
        if end <= second_page + PAGE {
            return Ok(Some(Prps {
                prp1: start,
                prp2: if end > second_page { second_page } else { 0 },
                list: None,
            }));
        }
    }
    // Every page the data touches, in order, in one pass: PRP1, then PRP2, or from the third page
    // on a PRP list that PRP2 points at and that starts with the second page.
    let mut pages = 0usize;
    let mut first = 0;
    let mut second = 0;
    let mut list: Option<PoolBlock<'a, 'a, u64>> = None;
    let mut previous_end = None;
    for map in mappings {
        let (start, end) = (map.dma_handle(), map.dma_handle() + map.len() as u64);
        if previous_end.is_some_and(|previous: u64| previous % PAGE != 0 || start % PAGE != 0) {
            return Ok(None);
        }
        previous_end = Some(end);
        let mut page = start;
        while page < end {
            match pages {
                0 => first = page,
                1 => second = page,
                _ => {
                    let list = match list.as_mut() {
                        Some(list) => list,
                        None => {
                            let mut new = pool
                                .alloc_unzeroed(Gfp::ATOMIC | Gfp::NOWARN)
                                .map_err(|_| Status::RESOURCE)?;
                            new.write(0, second).map_err(|_| Status::IOERR)?;
                            list.insert(new)
                        }
                    };
                    // Only a request larger than the disk's limit has more pages.
                    if pages > PRP_LIST_ENTRIES {
                        return Err(Status::IOERR);
                    }
                    list.write(pages - 1, page).map_err(|_| Status::IOERR)?;
                }
            }
            pages += 1;
            page = (page / PAGE + 1) * PAGE;
        }
    }
    Ok(Some(match list {
        Some(list) => Prps {
            prp1: first,
            prp2: list.dma_handle(),
            list: Some(list),
        },
        None => Prps {
            prp1: first,
            prp2: second,
            list: None,
        },
    }))
}
