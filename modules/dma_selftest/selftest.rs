// SPDX-License-Identifier: GPL-2.0

//! Self-test of `dma_local`, the template's DMA wrapper, against a real bound PCI device (QEMU's
//! edu).
//!
//! Probe runs every test and prints the results in KTAP, one line each, to the kernel log; the
//! harness reads them from there. The module tests `template/src/dma_local.rs` itself, included by
//! path.

#[path = "../../template/src/dma_local.rs"]
mod dma_local;
/// The examples of dma_local's documentation, made from its doc comments by doc_examples.sh into
/// the build's output directory.
#[allow(clippy::all, reason = "generated from documentation")]
mod examples {
    include!(env!("DMA_LOCAL_DOC_EXAMPLES"));
}
// edu's registers, as the template's driver names them; this module uses its DMA engine only.
#[allow(dead_code)]
#[path = "../../template/src/regs.rs"]
mod regs;

use dma_local::{
    dir, Attrs, Coherent, Direction, Gfp, Mapping, Mask, NonCoherent, Pool, SgTable, Streaming,
};
use kernel::{
    device::{Bound, Core, Device},
    io::Io,
    page::{Page, PAGE_SIZE},
    pci,
    prelude::*,
    time::{delay::fsleep, Delta},
    transmute::{AsBytes, FromBytes},
};

kernel::module_pci_driver! {
    type: SelfTest,
    name: "dma_local_selftest",
    authors: ["rust-dma-drivers"],
    description: "Self-test of the dma_local DMA wrapper on QEMU's edu device",
    license: "GPL",
}

kernel::pci_device_table!(
    PCI_TABLE,
    <SelfTest as pci::Driver>::IdInfo,
    [(pci::DeviceId::from_class(0x00ff00, 0xffffff), ())]
);

struct SelfTest;

/// A descriptor as a ring would hold it, for the field macros.
#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
struct Descriptor {
    address: u64,
    length: u32,
    status: u32,
}

// SAFETY: `repr(C)` of three integers with no padding (8 + 4 + 4 bytes): every byte is initialised.
unsafe impl AsBytes for Descriptor {}
// SAFETY: Any bit pattern is a valid value of each integer field.
unsafe impl FromBytes for Descriptor {}

/// Collects results and prints them as KTAP.
struct Report {
    results: KVec<(&'static str, core::result::Result<(), Error>)>,
}

impl Report {
    fn run(&mut self, name: &'static str, test: impl FnOnce() -> Result) {
        let _ = self.results.push((name, test()), GFP_KERNEL);
    }

    fn print(&self) -> usize {
        pr_info!("KTAP version 1\n");
        pr_info!("1..{}\n", self.results.len());
        let mut failed = 0;
        for (i, (name, result)) in self.results.iter().enumerate() {
            match result {
                Ok(()) => pr_info!("ok {} {}\n", i + 1, name),
                Err(e) => {
                    failed += 1;
                    pr_info!("not ok {} {} # {:?}\n", i + 1, name, e);
                }
            }
        }
        failed
    }
}

/// Fails the test with `EBADE` ("invalid exchange") unless `condition` holds; `EBADE` is used by
/// nothing the wrapper returns, so it cannot be mistaken for one of its errors.
fn expect(condition: bool) -> Result {
    if condition {
        Ok(())
    } else {
        Err(EBADE)
    }
}

/// Ok when `result` is exactly the error `want`.
fn expect_err<T>(result: Result<T>, want: Error) -> Result {
    match result {
        Err(e) if e == want => Ok(()),
        _ => Err(EBADE),
    }
}

const MASK_BITS: u32 = 28;

fn below_mask(address: dma_local::DmaAddress, len: usize) -> bool {
    address.saturating_add(len as u64) <= 1u64 << MASK_BITS
}

fn run_all(dev: &Device<Bound>, report: &mut Report) {
    report.run("mask_bits_limits", || {
        expect_err(Mask::bits(0), EINVAL)?;
        expect_err(Mask::bits(65), EINVAL)?;
        expect(Mask::bits(64)?.value() == u64::MAX)?;
        expect(Mask::bits(MASK_BITS)?.value() == (1 << MASK_BITS) - 1)
    });
    // The `set_*` calls below are sound: nothing of this device is allocated or mapped yet, and
    // every test drops what it made before the next one runs.
    report.run("set_masks", || {
        // SAFETY: See above.
        unsafe { dma_local::set_mask_and_coherent(dev, Mask::bits(32)?) }?;
        // SAFETY: See above.
        unsafe { dma_local::set_mask(dev, Mask::bits(MASK_BITS)?) }?;
        // SAFETY: See above.
        unsafe { dma_local::set_coherent_mask(dev, Mask::bits(MASK_BITS)?) }
    });
    report.run("mapping_limits", || {
        // SAFETY: See above.
        unsafe { dma_local::set_min_align_mask(dev, 4095) }?;
        // SAFETY: See above.
        unsafe { dma_local::set_min_align_mask(dev, 0) }?;
        // Unlimited (`SIZE_MAX`) without a bounce buffer; a bounce buffer's slots hold 256 KiB.
        expect(dma_local::max_mapping_size(dev) >= 256 * 1024)?;
        // No IOMMU here: the optimal size is the largest.
        expect(dma_local::opt_mapping_size(dev) == dma_local::max_mapping_size(dev))
    });
    report.run("segment_limits", || {
        // The PCI core's default, then a new one and back.
        let default = dma_local::max_seg_size(dev);
        expect(default == 64 * 1024)?;
        // SAFETY: See above.
        unsafe { dma_local::set_max_seg_size(dev, 8192) }?;
        expect(dma_local::max_seg_size(dev) == 8192)?;
        // SAFETY: See above.
        expect_err(unsafe { dma_local::set_max_seg_size(dev, 0) }, EINVAL)?;
        // SAFETY: See above.
        unsafe { dma_local::set_max_seg_size(dev, default) }?;
        // SAFETY: See above.
        expect_err(unsafe { dma_local::set_seg_boundary(dev, 0x1000) }, EINVAL)?;
        // SAFETY: See above.
        unsafe { dma_local::set_seg_boundary(dev, 0xffff_ffff) }
    });
    report.run("barriers", || {
        // Nothing to observe on one CPU: they link against this kernel and return.
        dma_local::dma_rmb();
        dma_local::dma_wmb();
        dma_local::wmb();
        dma_local::mb();
        Ok(())
    });
    report.run("coherent_respects_mask", || {
        let buf = Coherent::<u8>::alloc(dev, 8192, Gfp::KERNEL)?;
        expect(below_mask(buf.dma_handle(), buf.size()))
    });
    report.run("coherent_zero_length_rejected", || {
        expect_err(Coherent::<u32>::alloc(dev, 0, Gfp::KERNEL), EINVAL)
    });
    report.run("coherent_size_overflow", || {
        expect_err(
            Coherent::<u64>::alloc(dev, usize::MAX / 4, Gfp::KERNEL),
            EOVERFLOW,
        )
    });
    report.run("coherent_allocation_failure", || {
        let huge = 1usize << 40;
        expect_err(
            Coherent::<u8>::alloc_attrs(dev, huge, Gfp::KERNEL | Gfp::NOWARN, Attrs::NO_WARN),
            ENOMEM,
        )
    });
    report.run("coherent_rejects_no_kernel_mapping", || {
        expect_err(
            Coherent::<u8>::alloc_attrs(dev, 64, Gfp::KERNEL, Attrs::NO_KERNEL_MAPPING),
            EINVAL,
        )
    });
    report.run("coherent_rejects_cc_shared", || {
        expect_err(
            Coherent::<u8>::alloc_attrs(dev, 64, Gfp::KERNEL, Attrs::CC_SHARED),
            EINVAL,
        )
    });
    report.run("coherent_is_zeroed", || {
        let buf = Coherent::<u64>::alloc(dev, 512, Gfp::KERNEL)?;
        let mut back = KVec::from_elem(1u64, 512, GFP_KERNEL)?;
        buf.read_into(0, &mut back)?;
        expect(back.iter().all(|&v| v == 0))
    });
    report.run("bounds_exact_edges", || {
        let mut buf = Coherent::<u32>::alloc(dev, 16, Gfp::KERNEL)?;
        buf.write(15, 0xdead_beef)?;
        expect(buf.read(15)? == 0xdead_beef)?;
        expect_err(buf.write(16, 1), EINVAL)?;
        expect_err(buf.read(16), EINVAL)?;
        // A bulk access that ends exactly at the last element is valid.
        let mut four = [0u32; 4];
        buf.read_into(12, &mut four)?;
        expect(four[3] == 0xdead_beef)?;
        buf.write_from(12, &[1, 2, 3, 4])?;
        expect_err(buf.read_into(13, &mut four), EINVAL)?;
        expect_err(buf.write_from(13, &[0; 4]), EINVAL)?;
        // Empty accesses at the end are in bounds, one past it are not.
        buf.read_into(16, &mut [])?;
        expect_err(buf.read_into(17, &mut []), EINVAL)
    });
    report.run("bounds_offset_overflow", || {
        let mut buf = Coherent::<u32>::alloc(dev, 16, Gfp::KERNEL)?;
        expect_err(buf.read_into(usize::MAX, &mut [0u32; 1]), EOVERFLOW)?;
        expect_err(buf.write_from(usize::MAX - 1, &[0u32; 2]), EOVERFLOW)?;
        expect_err(buf.read(usize::MAX), EOVERFLOW)
    });
    report.run("bulk_round_trip_and_handles", || {
        let mut buf = Coherent::<u32>::alloc(dev, 1024, Gfp::KERNEL)?;
        let mut data = KVec::with_capacity(1024, GFP_KERNEL)?;
        for i in 0..1024u32 {
            data.push(i.wrapping_mul(2_654_435_761), GFP_KERNEL)?;
        }
        buf.write_from(0, &data)?;
        let mut back = KVec::from_elem(0u32, 1024, GFP_KERNEL)?;
        buf.read_into(0, &mut back)?;
        expect(back == data)?;
        expect(buf.dma_handle_at(10)? == buf.dma_handle() + 40)?;
        expect_err(buf.dma_handle_at(1024), EINVAL)
    });
    report.run("field_access_macros", || {
        let mut ring = Coherent::<Descriptor>::alloc(dev, 4, Gfp::KERNEL)?;
        crate::dma_write!(ring, 3, address, 0x1234_5678_9abc)?;
        crate::dma_write!(ring, 3, status, 7)?;
        expect(crate::dma_read!(ring, 3, status)? == 7)?;
        expect(crate::dma_read!(ring, 3, length)? == 0)?;
        expect(
            ring.read(3)?
                == Descriptor {
                    address: 0x1234_5678_9abc,
                    length: 0,
                    status: 7,
                },
        )?;
        expect_err(crate::dma_read!(ring, 4, status), EINVAL)?;
        expect_err(crate::dma_write!(ring, 4, status, 1), EINVAL)
    });
    report.run("shared_write", || {
        let ring = Coherent::<Descriptor>::alloc(dev, 4, Gfp::KERNEL)?;
        let descriptor = Descriptor {
            address: 0xfeed_0000,
            length: 60,
            status: 1,
        };
        // SAFETY: This CPU is the only one that accesses `ring`.
        unsafe { ring.write_shared(2, descriptor) }?;
        expect(ring.read(2)? == descriptor && ring.read(1)? == Descriptor::default())?;
        // SAFETY: As above.
        expect_err(unsafe { ring.write_shared(4, descriptor) }, EINVAL)
    });
    report.run("attrs_operators", || {
        let both = Attrs::WEAK_ORDERING | Attrs::NO_WARN;
        expect(both.contains(Attrs::NO_WARN) && !both.contains(Attrs::PRIVILEGED))?;
        expect(both & Attrs::NO_WARN == Attrs::NO_WARN)?;
        expect(!Attrs::NONE == Attrs::ALL)?;
        expect((!both & both) == Attrs::NONE)?;
        expect(Attrs::NO_WARN.bits() == kernel::bindings::DMA_ATTR_NO_WARN as usize)
    });
    report.run("coherent_with_attrs", || {
        let buf = Coherent::<u8>::alloc_attrs(
            dev,
            4096,
            Gfp::KERNEL,
            Attrs::WEAK_ORDERING | Attrs::NO_WARN,
        )?;
        expect(buf.attrs() == Attrs::WEAK_ORDERING | Attrs::NO_WARN)
    });
    report.run("streaming_map_view_unmap", || {
        let mut data = KVec::with_capacity(3000, GFP_KERNEL)?;
        for i in 0..3000usize {
            data.push((i % 251) as u8, GFP_KERNEL)?;
        }
        let mut mapping =
            Streaming::map(dev, data, dir::Bidirectional, Attrs::NONE).map_err(|(e, _)| e)?;
        expect(below_mask(mapping.dma_handle(), mapping.len()))?;
        // No bounce buffer and a coherent platform: nothing to sync.
        expect(!mapping.need_sync())?;
        {
            // SAFETY: The device was never told of this buffer.
            let mut view = unsafe { mapping.sync_for_cpu() };
            expect(view.len() == 3000 && view[2999] == (2999 % 251) as u8)?;
            view[0] = 0xff;
        }
        {
            // SAFETY: As above.
            let mut part = unsafe { mapping.sync_range_for_cpu(1000, 10) }?;
            expect(part.len() == 10 && part[0] == (1000 % 251) as u8)?;
            part[9] = 0xee;
        }
        // SAFETY: As above; out of range is refused before anything is synced.
        let outside = unsafe { mapping.sync_range_for_cpu(2995, 6) }.map(drop);
        expect_err(outside, EINVAL)?;
        {
            // Zero bytes, even at the end: an empty view, which syncs nothing either way.
            // SAFETY: As above.
            let empty = unsafe { mapping.sync_range_for_cpu(3000, 0) }?;
            expect(empty.is_empty())?;
        }
        // SAFETY: The device was never told of this buffer.
        let back = unsafe { mapping.unmap() };
        expect(
            back.len() == 3000
                && back[0] == 0xff
                && back[1] == 1
                && back[1009] == 0xee
                && back[2999] == (2999 % 251) as u8,
        )
    });
    report.run("streaming_from_device_view_reads", || {
        let data = KVec::from_elem(0x3cu8, 512, GFP_KERNEL)?;
        let mut mapping =
            Streaming::map(dev, data, dir::FromDevice, Attrs::NONE).map_err(|(e, _)| e)?;
        // SAFETY: The device was never told of this buffer.
        let view = unsafe { mapping.sync_for_cpu() };
        expect(view.iter().all(|&b| b == 0x3c))
    });
    report.run(
        "streaming_empty_rejected_buffer_returned",
        || match Streaming::map(dev, KVec::new(), dir::ToDevice, Attrs::NONE) {
            Err((e, buf)) => expect(e == EINVAL && buf.is_empty()),
            Ok(_) => Err(EBADE),
        },
    );
    report.run("mapping_of_foreign_memory", || {
        let mut buf = KVec::from_elem(0x5au8, 1500, GFP_KERNEL)?;
        // SAFETY: `buf` is kmalloc memory that outlives `mapping` (dropped at the end of this
        // block) and is not touched by the CPU while mapped.
        let mut mapping = unsafe {
            Mapping::new(
                dev,
                buf.as_mut_ptr(),
                buf.len(),
                Direction::FromDevice,
                Attrs::NONE,
            )?
        };
        expect(mapping.len() == 1500 && below_mask(mapping.dma_handle(), 1500))?;
        mapping.sync_for_cpu();
        mapping.sync_for_device();
        mapping.sync_range_for_cpu(100, 1400)?;
        mapping.sync_range_for_device(100, 1400)?;
        expect_err(mapping.sync_range_for_cpu(100, 1401), EINVAL)?;
        expect_err(mapping.sync_range_for_device(usize::MAX, 2), EOVERFLOW)?;
        // Zero bytes sync nothing, at either end; still checked against the mapping.
        mapping.sync_range_for_cpu(1500, 0)?;
        mapping.sync_range_for_device(0, 0)?;
        expect_err(mapping.sync_range_for_cpu(1501, 0), EINVAL)?;
        drop(mapping);
        // SAFETY: As above; refused before anything is mapped.
        let mmio =
            unsafe { Mapping::new(dev, buf.as_mut_ptr(), 64, Direction::ToDevice, Attrs::MMIO) };
        expect_err(mmio, EINVAL)?;
        // SAFETY: As above; memory not made shared with the host is refused before mapping.
        let shared = unsafe {
            Mapping::new(
                dev,
                buf.as_mut_ptr(),
                64,
                Direction::ToDevice,
                Attrs::CC_SHARED,
            )
        };
        expect_err(shared, EINVAL)?;
        // SAFETY: as above; a zero-length mapping is refused before anything is mapped.
        let empty =
            unsafe { Mapping::new(dev, buf.as_mut_ptr(), 0, Direction::ToDevice, Attrs::NONE) };
        expect_err(empty, EINVAL)?;
        expect(buf.iter().all(|&b| b == 0x5a))
    });
    report.run("mapping_of_pages", || {
        let page = Page::alloc_page(GFP_KERNEL)?;
        // SAFETY: `page` is from the page allocator and outlives `mapping` (dropped at the end of
        // this block); the CPU does not touch it while mapped.
        let mut mapping = unsafe {
            Mapping::from_page(
                dev,
                page.as_ptr(),
                100,
                1000,
                Direction::ToDevice,
                Attrs::NONE,
            )?
        };
        // Neither the direct mapping nor an IOMMU moves data within its page.
        expect(mapping.len() == 1000 && mapping.dma_handle() % PAGE_SIZE as u64 == 100)?;
        expect(below_mask(mapping.dma_handle(), 1000))?;
        mapping.sync_for_cpu();
        mapping.sync_for_device();
        drop(mapping);
        // SAFETY: As above; a zero-length mapping is refused before anything is mapped.
        let empty = unsafe {
            Mapping::from_page(dev, page.as_ptr(), 0, 0, Direction::ToDevice, Attrs::NONE)
        };
        expect_err(empty, EINVAL)
    });
    report.run("pool_blocks", || {
        expect_err(Pool::<u64>::new(dev, c"selftest", 0, 8, 0), EINVAL)?;
        expect_err(Pool::<u64>::new(dev, c"selftest", 512, 3, 0), EINVAL)?;
        expect_err(Pool::<u64>::new(dev, c"selftest", 512, 4, 0), EINVAL)?;
        // A boundary that is not a power of two, or smaller than a block.
        expect_err(Pool::<u64>::new(dev, c"selftest", 512, 8, 6000), EINVAL)?;
        expect_err(Pool::<u64>::new(dev, c"selftest", 512, 8, 2048), EINVAL)?;
        let pool = Pool::<u64>::new(dev, c"selftest", 512, 4096, 4096)?;
        let mut a = pool.alloc(Gfp::KERNEL)?;
        let b = pool.alloc(Gfp::KERNEL)?;
        expect(a.dma_handle() != b.dma_handle())?;
        expect(a.dma_handle() % 4096 == 0 && below_mask(a.dma_handle(), 4096))?;
        expect(a.count() == 512 && a.read(511)? == 0)?;
        a.write(511, 0x0123_4567_89ab_cdef)?;
        expect(a.read(511)? == 0x0123_4567_89ab_cdef)?;
        expect_err(a.write(512, 0), EINVAL)?;
        expect_err(b.read(512), EINVAL)?;
        // Unzeroed blocks work like the others; a block that held data comes back zeroed from
        // `alloc` (dma_pool hands out the block freed last first).
        drop(a);
        let mut c = pool.alloc_unzeroed(Gfp::KERNEL)?;
        expect(c.dma_handle() % 4096 == 0 && c.count() == 512)?;
        c.write(511, 0x0123_4567_89ab_cdef)?;
        expect(c.read(511)? == 0x0123_4567_89ab_cdef)?;
        expect_err(c.write(512, 0), EINVAL)?;
        let handle = c.dma_handle();
        drop(c);
        let d = pool.alloc(Gfp::KERNEL)?;
        expect(d.dma_handle() == handle && d.read(511)? == 0)
    });
    report.run("noncoherent_views", || {
        expect_err(
            NonCoherent::alloc(dev, 0, dir::Bidirectional, Gfp::KERNEL).map(drop),
            EINVAL,
        )?;
        let mut buf = NonCoherent::alloc(dev, 6000, dir::Bidirectional, Gfp::KERNEL)?;
        expect(buf.len() == 6000 && below_mask(buf.dma_handle(), 6000))?;
        {
            // SAFETY: The device was never told of this buffer.
            let mut view = unsafe { buf.sync_for_cpu() };
            expect(view.iter().all(|&b| b == 0))?;
            for (i, b) in view.iter_mut().enumerate() {
                *b = (i % 253) as u8;
            }
        }
        // SAFETY: As above.
        let part = unsafe { buf.sync_range_for_cpu(4096, 100) }?;
        expect(part.len() == 100 && part[0] == (4096 % 253) as u8)?;
        drop(part);
        // SAFETY: As above.
        expect_err(
            unsafe { buf.sync_range_for_cpu(5990, 11) }.map(drop),
            EINVAL,
        )
    });
    report.run("sg_table_map_segments_unmap", || {
        expect_err(
            SgTable::new(KVec::new(), 65536)
                .map(drop)
                .map_err(|(e, _)| e),
            EINVAL,
        )?;
        let mut pages = KVec::new();
        for _ in 0..3 {
            pages.push(Page::alloc_page(GFP_KERNEL)?, GFP_KERNEL)?;
        }
        let mut table = SgTable::new(pages, dma_local::max_seg_size(dev)).map_err(|(e, _)| e)?;
        expect(table.size() == 3 * PAGE_SIZE && table.entries() >= 1)?;
        let mut pattern = KVec::with_capacity(3 * PAGE_SIZE, GFP_KERNEL)?;
        for i in 0..3 * PAGE_SIZE {
            pattern.push((i % 241) as u8, GFP_KERNEL)?;
        }
        table.write(0, &pattern)?;
        expect_err(table.write(3 * PAGE_SIZE - 1, &[0, 0]), EINVAL)?;
        // Memory not made shared with the host is refused, and the table comes back.
        let table = match table.map(dev, Direction::ToDevice, Attrs::CC_SHARED) {
            Err((e, table)) if e == EINVAL => table,
            _ => return Err(EBADE),
        };
        let mut mapped = table
            .map(dev, Direction::Bidirectional, Attrs::NONE)
            .map_err(|(e, _)| e)?;
        let mut total = 0usize;
        for (address, len) in mapped.segments() {
            expect(len > 0 && below_mask(address, len as usize))?;
            total += len as usize;
        }
        expect(total == 3 * PAGE_SIZE)?;
        mapped.sync_for_cpu();
        mapped.sync_for_device();
        // SAFETY: The device was never told of these pages.
        let table = unsafe { mapped.unmap() };
        // The bytes went in before the mapping and come back after it, across page edges.
        let mut back = KVec::from_elem(0u8, 3 * PAGE_SIZE, GFP_KERNEL)?;
        table.read(0, &mut back)?;
        expect(back == pattern)?;
        let mut edge = [0u8; 4];
        table.read(PAGE_SIZE - 2, &mut edge)?;
        expect(edge[..] == pattern[PAGE_SIZE - 2..PAGE_SIZE + 2])?;
        expect(table.into_pages().len() == 3)
    });
    // Each example of the wrapper's documentation runs to its end (a failed assertion in one is a
    // kernel BUG, which the scenario reports).
    for (name, example) in examples::EXAMPLES {
        report.run(name, || example(dev));
    }
}

type Bar0<'bound> = pci::Bar<'bound, { regs::BAR0_SIZE }>;

/// Copies `len` bytes with edu's DMA engine between `ram` and edu's own buffer, and waits (polling
/// the command register, which edu clears when done) for the transfer to finish.
fn edu_copy(bar: &Bar0<'_>, ram: dma_local::DmaAddress, len: usize, to_ram: bool) -> Result {
    let (source, destination) = if to_ram {
        (regs::DEVICE_BUFFER, ram)
    } else {
        (ram, regs::DEVICE_BUFFER)
    };
    bar.write32(u32::try_from(source).map_err(|_| EINVAL)?, regs::DMA_SOURCE);
    bar.write32(
        u32::try_from(destination).map_err(|_| EINVAL)?,
        regs::DMA_DESTINATION,
    );
    bar.write32(u32::try_from(len).map_err(|_| EINVAL)?, regs::DMA_COUNT);
    let direction = if to_ram { regs::DMA_CMD_TO_RAM } else { 0 };
    bar.write32(regs::DMA_CMD_START | direction, regs::DMA_COMMAND);
    // edu finishes a transfer 100 ms of virtual time after it starts.
    for _ in 0..2000 {
        if bar.read32(regs::DMA_COMMAND) & regs::DMA_CMD_START == 0 {
            return Ok(());
        }
        fsleep(Delta::from_millis(1));
    }
    Err(ETIMEDOUT)
}

/// The test pattern of a round trip: every byte differs from its neighbours.
fn pattern(index: usize, seed: u8) -> u8 {
    (index as u8).wrapping_mul(13) ^ (index >> 8) as u8 ^ seed
}

/// Bytes through the device and back, with the buffers that only the self-test exercised on the
/// CPU side: a scatter-gather table and non-coherent memory, each direction once.
fn device_round_trips(dev: &Device<Bound>, bar: &Bar0<'_>, report: &mut Report) {
    let len = regs::MAX_TRANSFER;
    report.run("edu_sg_table_to_noncoherent", || {
        let mut pages = KVec::new();
        pages.push(Page::alloc_page(GFP_KERNEL)?, GFP_KERNEL)?;
        let mut table = SgTable::new(pages, dma_local::max_seg_size(dev)).map_err(|(e, _)| e)?;
        let mut outgoing = KVec::with_capacity(len, GFP_KERNEL)?;
        for i in 0..len {
            outgoing.push(pattern(i, 0x3c), GFP_KERNEL)?;
        }
        table.write(0, &outgoing)?;
        let mapped = table
            .map(dev, Direction::ToDevice, Attrs::NONE)
            .map_err(|(e, _)| e)?;
        let mut segments = mapped.segments();
        let (address, segment_len) = segments.next().ok_or(EBADE)?;
        expect(segment_len as usize == PAGE_SIZE && segments.next().is_none())?;
        edu_copy(bar, address, len, false)?;
        drop(mapped);
        let mut incoming = NonCoherent::alloc(dev, len, dir::FromDevice, Gfp::KERNEL)?;
        edu_copy(bar, incoming.dma_handle(), len, true)?;
        // SAFETY: `edu_copy` returned after edu finished the transfer; edu is given nothing else.
        let view = unsafe { incoming.sync_for_cpu() };
        expect(view[..] == outgoing[..])
    });
    report.run("edu_noncoherent_to_sg_table", || {
        let mut outgoing = NonCoherent::alloc(dev, len, dir::ToDevice, Gfp::KERNEL)?;
        {
            // SAFETY: edu was never told of this buffer.
            let mut view = unsafe { outgoing.sync_for_cpu() };
            for (i, b) in view.iter_mut().enumerate() {
                *b = pattern(i, 0xc3);
            }
        }
        edu_copy(bar, outgoing.dma_handle(), len, false)?;
        let mut pages = KVec::new();
        pages.push(Page::alloc_page(GFP_KERNEL)?, GFP_KERNEL)?;
        let table = SgTable::new(pages, dma_local::max_seg_size(dev)).map_err(|(e, _)| e)?;
        let mapped = table
            .map(dev, Direction::FromDevice, Attrs::NONE)
            .map_err(|(e, _)| e)?;
        let (address, _) = mapped.segments().next().ok_or(EBADE)?;
        edu_copy(bar, address, len, true)?;
        // SAFETY: `edu_copy` returned after edu finished the transfer; edu is given nothing else.
        let table = unsafe { mapped.unmap() };
        let mut back = KVec::from_elem(0u8, len, GFP_KERNEL)?;
        table.read(0, &mut back)?;
        expect(back.iter().enumerate().all(|(i, &b)| b == pattern(i, 0xc3)))
    });
}

impl pci::Driver for SelfTest {
    type IdInfo = ();
    type Data<'bound> = ();

    const ID_TABLE: pci::IdTable<Self::IdInfo> = &PCI_TABLE;

    fn probe<'bound>(
        pdev: &'bound pci::Device<Core<'_>>,
        _info: Option<&'bound Self::IdInfo>,
    ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
        let mut report = Report {
            results: KVec::new(),
        };
        // Checked from outside too: bus master while bound, released after unbind.
        report.run("enable_bus_master", || dma_local::enable_bus_master(pdev));
        run_all(pdev.as_ref(), &mut report);
        let bound: &pci::Device<Bound> = pdev;
        match bound.iomap_region_sized::<{ regs::BAR0_SIZE }>(0, c"dma_local_selftest") {
            Ok(bar) => device_round_trips(pdev.as_ref(), &bar, &mut report),
            Err(e) => report.run("edu_bar", || Err(e)),
        }
        let failed = report.print();
        pr_info!(
            "{} of {} passed\n",
            report.results.len() - failed,
            report.results.len()
        );
        Ok(())
    }
}
