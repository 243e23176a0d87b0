// SPDX-License-Identifier: GPL-2.0

//! Scatter-gather tables ([`SgTable`]), mapped ([`MappedSgTable`]) and walked ([`SgSegments`]).

use core::marker::PhantomData;

use kernel::bindings;
use kernel::device::{Bound, Device};
use kernel::error::to_result;
use kernel::ffi::c_uint;
use kernel::page::{Page, PAGE_SIZE};
use kernel::prelude::*;

use super::{
    check_range, dma_local_sg_dma_address, dma_local_sg_dma_len, dma_local_sg_next,
    dma_local_sync_sgtable_for_cpu, dma_local_sync_sgtable_for_device, dma_local_unmap_sgtable,
    raw_device, Attrs, Direction, DmaAddress, Gfp,
};

/// Pages owned by the driver and described by a scatter-gather table (`struct sg_table`), for a
/// device that takes a list of segments. Physically contiguous pages share one entry. The CPU
/// reads and writes the pages through it; [`SgTable::map`] hands them to a device.
///
/// # Invariants
///
/// `table` was set up by `sg_alloc_table_from_pages_segment` over the pages of `pages`, in order,
/// all of each, and is freed (`sg_free_table`) only in `drop`.
///
/// # Examples
///
/// Four pages, written by the CPU, mapped for the device as a list of segments, and taken back:
///
/// ```
/// # use kernel::device::{Bound, Device};
/// # use kernel::page::Page;
/// use crate::dma_local::{self, Attrs, Direction, SgTable};
///
/// # fn example(dev: &Device<Bound>) -> Result {
/// let mut pages = KVec::new();
/// for _ in 0..4 {
///     pages.push(Page::alloc_page(GFP_KERNEL)?, GFP_KERNEL)?;
/// }
/// let mut table = SgTable::new(pages, dma_local::max_seg_size(dev)).map_err(|(e, _pages)| e)?;
/// table.write(4090, b"across a page")?;
/// let mapped = table.map(dev, Direction::ToDevice, Attrs::NONE).map_err(|(e, _table)| e)?;
/// let mut bytes = 0;
/// for (_address, len) in mapped.segments() {
///     // A device would be given each segment's bus address and length here.
///     bytes += len as usize;
/// }
/// assert_eq!(bytes, 4 * 4096);
/// // SAFETY: The device is done with the pages and is not given them again.
/// let table = unsafe { mapped.unmap() };
/// let mut back = [0u8; 13];
/// table.read(4090, &mut back)?;
/// assert_eq!(&back, b"across a page");
/// # Ok(()) }
/// ```
pub(crate) struct SgTable {
    table: bindings::sg_table,
    pages: KVec<Page>,
}

// SAFETY: The table and the pages are owned; the entries point only to those pages.
unsafe impl Send for SgTable {}
// SAFETY: `&SgTable` only reads the pages, and only while nothing writes them (`write` takes
// `&mut`).
unsafe impl Sync for SgTable {}

impl SgTable {
    /// Describes `pages` by a table whose segments are at most `max_segment` bytes (at least a
    /// page; for a device, [`max_seg_size`]). May sleep. `EINVAL` for no pages or a smaller
    /// segment size, `ENOMEM` when the table cannot be allocated; either way the pages come back.
    pub(crate) fn new(
        pages: KVec<Page>,
        max_segment: u32,
    ) -> core::result::Result<Self, (Error, KVec<Page>)> {
        let n_pages = match c_uint::try_from(pages.len()) {
            Ok(0) | Err(_) => return Err((EINVAL, pages)),
            Ok(n) => n,
        };
        if (max_segment as usize) < PAGE_SIZE {
            return Err((EINVAL, pages));
        }
        let mut raw: KVec<*mut bindings::page> = match KVec::with_capacity(pages.len(), GFP_KERNEL)
        {
            Ok(raw) => raw,
            Err(e) => return Err((e.into(), pages)),
        };
        for page in pages.iter() {
            // Cannot fail: the capacity is there.
            let _ = raw.push(page.as_ptr(), GFP_KERNEL);
        }
        let mut table = bindings::sg_table::default();
        // SAFETY: `table` is a zeroed table to set up; `raw` holds `n_pages` valid page pointers;
        // the size is all of them; `max_segment` is at least a page.
        let ret = unsafe {
            bindings::sg_alloc_table_from_pages_segment(
                &mut table,
                raw.as_mut_ptr(),
                n_pages,
                0,
                pages.len() * PAGE_SIZE,
                max_segment,
                Gfp::KERNEL.bits(),
            )
        };
        match to_result(ret) {
            // INVARIANT: set up above over `pages`.
            Ok(()) => Ok(Self { table, pages }),
            Err(e) => Err((e, pages)),
        }
    }

    /// The size in bytes: all of every page.
    pub(crate) fn size(&self) -> usize {
        self.pages.len() * PAGE_SIZE
    }

    /// The number of entries (physically contiguous runs of pages).
    pub(crate) fn entries(&self) -> u32 {
        self.table.orig_nents
    }

    /// Copies `dst.len()` bytes from byte `offset` on into `dst`. `EINVAL` outside the pages.
    pub(crate) fn read(&self, offset: usize, dst: &mut [u8]) -> Result {
        check_range(offset, dst.len(), self.size())?;
        let mut done = 0;
        while done < dst.len() {
            let at = offset + done;
            let chunk = (PAGE_SIZE - at % PAGE_SIZE).min(dst.len() - done);
            // SAFETY: `dst[done..done + chunk]` is valid for writes; `&self` excludes writers of
            // the pages, which this table owns.
            unsafe {
                self.pages[at / PAGE_SIZE].read_raw(
                    dst.as_mut_ptr().add(done),
                    at % PAGE_SIZE,
                    chunk,
                )
            }?;
            done += chunk;
        }
        Ok(())
    }

    /// Copies `src` into the pages from byte `offset` on. `EINVAL` outside the pages.
    pub(crate) fn write(&mut self, offset: usize, src: &[u8]) -> Result {
        check_range(offset, src.len(), self.size())?;
        let mut done = 0;
        while done < src.len() {
            let at = offset + done;
            let chunk = (PAGE_SIZE - at % PAGE_SIZE).min(src.len() - done);
            // SAFETY: `src[done..done + chunk]` is valid for reads; `&mut self` excludes every
            // other access to the pages.
            unsafe {
                self.pages[at / PAGE_SIZE].write_raw(src.as_ptr().add(done), at % PAGE_SIZE, chunk)
            }?;
            done += chunk;
        }
        Ok(())
    }

    /// Maps the table for `dev` in direction `dir` (`dma_map_sgtable`): the device may then access
    /// every page, the CPU none until [`MappedSgTable::unmap`] gives the table back. On failure the
    /// table comes back with the error (`EINVAL`, `ENOMEM`, `EIO` or `EREMOTEIO`, as the DMA API
    /// says); `EINVAL` also for [`Attrs::MMIO`] and [`Attrs::CC_SHARED`], as for [`Mapping::new`].
    pub(crate) fn map<'a>(
        mut self,
        dev: &'a Device<Bound>,
        dir: Direction,
        attrs: Attrs,
    ) -> core::result::Result<MappedSgTable<'a>, (Error, SgTable)> {
        if attrs.intersects(Attrs::REFUSED_BY_MAPPINGS) {
            return Err((EINVAL, self));
        }
        // SAFETY: `table` is set up over pages this owns, which stay alive and untouched by the
        // CPU while `MappedSgTable` holds them; `raw_device` gives a bound device.
        let ret = unsafe {
            bindings::dma_map_sgtable(raw_device(dev), &mut self.table, dir.raw(), attrs.bits())
        };
        match to_result(ret) {
            // INVARIANT: mapped above with these arguments.
            Ok(()) => Ok(MappedSgTable {
                dev,
                table: self,
                dir,
                attrs,
            }),
            Err(e) => Err((e, self)),
        }
    }

    /// Frees the table and gives the pages back.
    pub(crate) fn into_pages(self) -> KVec<Page> {
        let mut this = core::mem::ManuallyDrop::new(self);
        // SAFETY: Set up and not freed (type invariant); `this` is never used or dropped again.
        unsafe { bindings::sg_free_table(&mut this.table) };
        // SAFETY: Read once out of a value that is never dropped.
        unsafe { core::ptr::read(&this.pages) }
    }
}

impl Drop for SgTable {
    fn drop(&mut self) {
        // SAFETY: Set up and not freed (type invariant); freed once. The pages go after it.
        unsafe { bindings::sg_free_table(&mut self.table) };
    }
}

/// An [`SgTable`] mapped for a device (`dma_map_sgtable`). The device sees the segments of
/// [`MappedSgTable::segments`], which may be fewer than the table's entries (an IOMMU merges
/// them). Dropping it unmaps the table and frees it with its pages; [`MappedSgTable::unmap`] gives
/// the table back instead.
///
/// # Invariants
///
/// `table` is mapped for `dev` in `dir` with `attrs`, not yet unmapped.
pub(crate) struct MappedSgTable<'a> {
    dev: &'a Device<Bound>,
    table: SgTable,
    dir: Direction,
    attrs: Attrs,
}

impl MappedSgTable<'_> {
    /// The segments as the device sees them: `(DMA address, length in bytes)`.
    pub(crate) fn segments(&self) -> SgSegments<'_> {
        SgSegments {
            next: self.table.table.sgl,
            left: self.table.table.nents,
            _table: PhantomData,
        }
    }

    /// Syncs every page for the CPU (`dma_sync_sgtable_for_cpu`), for a device that keeps the
    /// mapping across transfers; the CPU still reaches the pages only after [`MappedSgTable::unmap`].
    pub(crate) fn sync_for_cpu(&mut self) {
        // SAFETY: Mapped for this bound device in `dir` (type invariant).
        unsafe {
            dma_local_sync_sgtable_for_cpu(
                raw_device(self.dev).cast(),
                &mut self.table.table,
                self.dir.raw(),
            )
        };
    }

    /// Syncs every page for the device (`dma_sync_sgtable_for_device`).
    pub(crate) fn sync_for_device(&mut self) {
        // SAFETY: As in `sync_for_cpu`.
        unsafe {
            dma_local_sync_sgtable_for_device(
                raw_device(self.dev).cast(),
                &mut self.table.table,
                self.dir.raw(),
            )
        };
    }

    /// Unmaps the table and gives it back, with whatever the device wrote into its pages.
    ///
    /// # Safety
    ///
    /// The device has finished every access to the pages, and is given none of them any more (as
    /// for [`Streaming::unmap`]).
    pub(crate) unsafe fn unmap(self) -> SgTable {
        let mut this = core::mem::ManuallyDrop::new(self);
        this.unmap_in_place();
        // SAFETY: Read once out of a value that is never dropped.
        unsafe { core::ptr::read(&this.table) }
    }

    fn unmap_in_place(&mut self) {
        // SAFETY: Mapped with these arguments and not unmapped (type invariant); every caller
        // unmaps once, then drops or forgets `self`.
        unsafe {
            dma_local_unmap_sgtable(
                raw_device(self.dev).cast(),
                &mut self.table.table,
                self.dir.raw(),
                self.attrs.bits(),
            )
        };
    }
}

impl Drop for MappedSgTable<'_> {
    fn drop(&mut self) {
        self.unmap_in_place();
    }
}

/// The segments of a [`MappedSgTable`] (see [`MappedSgTable::segments`]).
///
/// # Invariants
///
/// `next` is the next of `left` mapped entries of a table that the borrow keeps mapped.
pub(crate) struct SgSegments<'t> {
    next: *mut bindings::scatterlist,
    left: c_uint,
    _table: PhantomData<&'t MappedSgTable<'t>>,
}

impl Iterator for SgSegments<'_> {
    type Item = (DmaAddress, u32);

    fn next(&mut self) -> Option<(DmaAddress, u32)> {
        if self.left == 0 {
            return None;
        }
        let sg = self.next;
        // SAFETY: A mapped entry of a live table (type invariant).
        let segment = unsafe { (dma_local_sg_dma_address(sg), dma_local_sg_dma_len(sg)) };
        self.left -= 1;
        if self.left > 0 {
            // SAFETY: As above; more mapped entries follow this one.
            self.next = unsafe { dma_local_sg_next(sg) };
        }
        Some(segment)
    }
}
