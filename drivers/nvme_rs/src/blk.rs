// SPDX-License-Identifier: GPL-2.0

//! A thin blk-mq layer over the C API: the tag set, the gendisk, and the request accessors this
//! driver needs.
//!
//! The kernel crate's `block::mq` has no per-request driver data, per-hardware-queue data or
//! timeout handler, which an NVMe driver cannot do without, so this driver keeps its own layer. The
//! `blk_mq_ops` callbacks are the driver's (`tagset.rs`); this module only owns the C objects and reads
//! them. Static inline functions and macros go through `blk_shim.c`.

use core::{marker::PhantomData, ptr::NonNull};

use kernel::{
    bindings,
    error::to_result,
    ffi::{c_uint, c_void},
    prelude::*,
    types::Opaque,
};

use crate::compat::bi_offset;

// One-line C wrappers (`blk_shim.c`). Pointers are passed as `c_void`: the C structs embed lockdep
// types that are zero-sized in Rust.
extern "C" {
    fn nvme_rs_alloc_disk(
        set: *mut c_void,
        lim: *mut c_void,
        queuedata: *mut c_void,
    ) -> *mut c_void;
    fn nvme_rs_fops() -> *const c_void;
    fn nvme_rs_disk_attr_groups() -> *const c_void;
    fn nvme_rs_limits_start_update(q: *mut c_void) -> bindings::queue_limits;
    fn nvme_rs_noio_save() -> c_uint;
    fn nvme_rs_noio_restore(flags: c_uint);
    fn nvme_rs_should_fake_timeout(q: *mut c_void) -> bool;
    fn nvme_rs_tag_to_rq(tags: *mut c_void, tag: c_uint) -> *mut c_void;
    fn nvme_rs_page_address(page: *mut c_void) -> *mut c_void;
    fn nvme_rs_add_to_batch(
        rq: *mut c_void,
        iob: *mut c_void,
        is_error: bool,
        complete: unsafe extern "C" fn(iob: *mut c_void),
    ) -> bool;
}

/// A `blk_status_t`. The values are checked against the C definitions in `blk_shim.c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Status(u8);

impl Status {
    pub(crate) const OK: Status = Status(0);
    pub(crate) const NOTSUPP: Status = Status(1);
    pub(crate) const TIMEOUT: Status = Status(2);
    pub(crate) const RESOURCE: Status = Status(9);
    pub(crate) const IOERR: Status = Status(10);
    pub(crate) const INVAL: Status = Status(19);

    /// The raw value.
    pub(crate) fn raw(self) -> bindings::blk_status_t {
        self.0
    }
}

/// The operation of a request (`enum req_op`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Read,
    Write,
    Flush,
    Discard,
    WriteZeroes,
    /// A driver-private request (`REQ_OP_DRV_IN`/`REQ_OP_DRV_OUT`): a passthrough command.
    Driver,
    /// Anything else; this driver does not advertise it.
    Other(u32),
}

/// What a timeout handler tells blk-mq (`enum blk_eh_timer_return`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimeoutAction {
    /// The driver completed the request, or will.
    Done,
    /// Restart the timer: the driver is still working on it.
    ResetTimer,
}

impl TimeoutAction {
    /// The raw value.
    pub(crate) fn raw(self) -> bindings::blk_eh_timer_return {
        match self {
            TimeoutAction::Done => bindings::blk_eh_timer_return_BLK_EH_DONE,
            TimeoutAction::ResetTimer => bindings::blk_eh_timer_return_BLK_EH_RESET_TIMER,
        }
    }
}

/// A block request handed to the driver, with its per-request data of type `P`.
///
/// # Invariants
///
/// The wrapped `struct request` belongs to a tag set whose `cmd_size` is `size_of::<P>()` and whose
/// `init_request` initialised the per-request data as a `P`.
#[repr(transparent)]
pub(crate) struct Request<P>(Opaque<bindings::request>, core::marker::PhantomData<P>);

impl<P> Request<P> {
    /// Borrows a request that blk-mq handed over.
    ///
    /// # Safety
    ///
    /// `ptr` is a live request of a tag set that keeps the type invariant, and stays live for `'r`.
    pub(crate) unsafe fn from_raw<'r>(ptr: *mut bindings::request) -> &'r Self {
        // SAFETY: `Request` is transparent over the C struct; liveness by the safety requirement.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The C request.
    pub(crate) fn as_raw(&self) -> *mut bindings::request {
        self.0.get()
    }

    /// The tag: unique among the requests in flight on its hardware queue.
    pub(crate) fn tag(&self) -> u16 {
        // SAFETY: `as_raw` is a live request; the tag is fixed while the driver holds it.
        unsafe { (*self.as_raw()).tag as u16 }
    }

    // The accessors below read what the block layer's one-line inline accessors read
    // (`blk_rq_pos`, `blk_rq_bytes`, `req_op`, `rq_for_each_bvec`): a call to a C wrapper
    // for each cost more than the field read, on every I/O.

    /// The first sector (512 bytes) the request touches.
    pub(crate) fn sector(&self) -> u64 {
        // SAFETY: A live request, which the driver holds: the field does not change meanwhile.
        unsafe { (*self.as_raw()).__sector }
    }

    /// The number of bytes left to transfer.
    pub(crate) fn bytes(&self) -> u32 {
        // SAFETY: As above.
        unsafe { (*self.as_raw()).__data_len }
    }

    /// The operation.
    pub(crate) fn op(&self) -> Op {
        // SAFETY: As above.
        let flags = unsafe { (*self.as_raw()).cmd_flags };
        match flags & ((1 << bindings::REQ_OP_BITS) - 1) {
            bindings::req_op_REQ_OP_READ => Op::Read,
            bindings::req_op_REQ_OP_WRITE => Op::Write,
            bindings::req_op_REQ_OP_FLUSH => Op::Flush,
            bindings::req_op_REQ_OP_DISCARD => Op::Discard,
            bindings::req_op_REQ_OP_WRITE_ZEROES => Op::WriteZeroes,
            bindings::req_op_REQ_OP_DRV_IN | bindings::req_op_REQ_OP_DRV_OUT => Op::Driver,
            other => Op::Other(other),
        }
    }

    /// Whether the write must reach the medium whole or not at all (`REQ_ATOMIC`, `RWF_ATOMIC`).
    pub(crate) fn is_atomic(&self) -> bool {
        // SAFETY: As above.
        let flags = unsafe { (*self.as_raw()).cmd_flags };
        flags & (1 << bindings::req_flag_bits___REQ_ATOMIC) != 0
    }

    /// The disk's atomic write limits: the largest unit and the boundary (0 for none), in bytes.
    pub(crate) fn atomic_write_limits(&self) -> (u32, u32) {
        // SAFETY: A live request has a live queue; its limits change only while it is frozen,
        // which waits for this request.
        unsafe {
            let q = (*self.as_raw()).q;
            (
                (*q).limits.atomic_write_unit_max,
                (*q).limits.atomic_write_boundary_sectors << 9,
            )
        }
    }

    /// Whether the data must be durable when the request completes (`REQ_FUA`), which a disk
    /// with a write cache passes on rather than following with a flush.
    pub(crate) fn is_fua(&self) -> bool {
        // SAFETY: As above.
        let flags = unsafe { (*self.as_raw()).cmd_flags };
        flags & (1 << bindings::req_flag_bits___REQ_FUA) != 0
    }

    /// How many ranges this discard carries (`blk_rq_nr_discard_segments`): with more than one,
    /// one per bio, as [`Request::bio_ranges`] lists them; with one, the request's whole span.
    pub(crate) fn discard_segments(&self) -> u16 {
        // SAFETY: As above.
        unsafe { (*self.as_raw()).nr_phys_segments }.max(1)
    }

    /// Whether the disk takes discards of several ranges (`queue_max_discard_segments` > 1); if
    /// not, the block layer merges only adjacent discards, into one range.
    pub(crate) fn multi_range_discards(&self) -> bool {
        // SAFETY: A live request has a live queue.
        unsafe { (*(*self.as_raw()).q).limits.max_discard_segments > 1 }
    }

    /// The first sector and the bytes of each of the request's bios (`__rq_for_each_bio`): a
    /// discard's ranges.
    pub(crate) fn bio_ranges(&self) -> BioRanges<'_> {
        BioRanges {
            // SAFETY: A live request, which the driver holds: its bios stay until it ends.
            bio: unsafe { (*self.as_raw()).bio },
            _request: PhantomData,
        }
    }

    /// The queue data (`queuedata`) of the disk this request is for.
    pub(crate) fn queue_data(&self) -> *mut c_void {
        // SAFETY: A live request has a live queue.
        unsafe { (*(*self.as_raw()).q).queuedata }
    }

    /// The per-request data.
    pub(crate) fn pdu(&self) -> *mut P {
        pdu_of(self.as_raw()).cast()
    }

    /// The request's data, piece by piece: each `bio_vec` of each of its bios
    /// (`rq_for_each_bvec`). This driver never attaches a special payload (`RQF_SPECIAL_PAYLOAD`):
    /// its discard ranges go to the device from a pool block.
    pub(crate) fn data(&self) -> DataPieces<'_> {
        // SAFETY: A live request, which the driver holds: its bios stay until it ends.
        let bio = unsafe { (*self.as_raw()).bio };
        // SAFETY: `bio` is null or a live bio.
        let (vecs, iter) = unsafe { bio_vectors(bio) };
        // INVARIANT: The first bio, all of it left, or nothing.
        DataPieces {
            bio,
            vecs,
            iter,
            _request: PhantomData,
        }
    }

    /// Tells blk-mq that the driver started the request (arms its timeout).
    pub(crate) fn start(&self) {
        // SAFETY: A live request owned by the driver.
        unsafe { bindings::blk_mq_start_request(self.as_raw()) };
    }

    /// Ends the request with `status`. The driver must not touch it afterwards.
    pub(crate) fn end(&self, status: Status) {
        // SAFETY: A live request owned by the driver; ended once.
        unsafe { bindings::blk_mq_end_request(self.as_raw(), status.raw()) };
    }

    /// Whether fault injection (`fail_io_timeout`) chose to lose this request's completion, so that
    /// it times out: then the driver must not complete it.
    pub(crate) fn should_fake_timeout(&self) -> bool {
        // SAFETY: A live request and its live queue.
        unsafe { nvme_rs_should_fake_timeout((*self.as_raw()).q.cast()) }
    }

    /// Hands the request to blk-mq's completion, which calls the driver's `complete` callback on
    /// the submitting CPU. Returns false, doing nothing, when fault injection chose to lose this
    /// completion ([`Request::should_fake_timeout`]).
    pub(crate) fn complete(&self) -> bool {
        if self.should_fake_timeout() {
            return false;
        }
        self.complete_now();
        true
    }

    /// Hands the request to blk-mq's completion even when fault injection would lose it: for the
    /// cancelling, which must end every request it finds.
    pub(crate) fn complete_now(&self) {
        // SAFETY: A live request owned by the driver.
        unsafe { bindings::blk_mq_complete_request(self.as_raw()) };
    }

    /// Gives the request back to blk-mq to be dispatched again (its `queue_rq` runs anew once the
    /// queue runs). The driver must not touch it afterwards.
    pub(crate) fn requeue(&self) {
        // SAFETY: A live request owned by the driver, which hands it back once.
        unsafe { bindings::blk_mq_requeue_request(self.as_raw(), true) };
    }

    /// Whether the request is started and not yet completed (`MQ_RQ_IN_FLIGHT`): in any other
    /// state it is blk-mq's, completed (`MQ_RQ_COMPLETE`) or already ended (`MQ_RQ_IDLE`, which a
    /// batch completion goes straight back to), and the driver must not end it again.
    #[inline]
    pub(crate) fn is_in_flight(&self) -> bool {
        // SAFETY: A live request. This is `blk_mq_rq_state`'s `READ_ONCE` of the field, which
        // blk-mq changes concurrently.
        let state =
            unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*self.as_raw()).state)) };
        state == bindings::mq_rq_state_MQ_RQ_IN_FLIGHT
    }
}

/// Where a request's per-request data starts: right after the request, which is all that
/// `blk_mq_rq_to_pdu` computes; done here, it costs no call on every I/O.
pub(crate) fn pdu_of(rq: *mut bindings::request) -> *mut c_void {
    rq.wrapping_add(1).cast()
}

/// Requests completed together (`struct io_comp_batch`): blk-mq ends them in one go, which costs
/// less than one `blk_mq_complete_request` each.
pub(crate) struct CompletionBatch {
    raw: bindings::io_comp_batch,
}

impl CompletionBatch {
    /// An empty batch.
    pub(crate) fn new() -> Self {
        Self {
            raw: bindings::io_comp_batch::default(),
        }
    }

    /// Adds `rq`, whose data `finish` will release before the batch ends; false when blk-mq wants
    /// this request completed on its own (an error, an I/O scheduler, an `end_io`).
    ///
    /// # Safety
    ///
    /// `finish` releases the driver's resources of every request of this batch, and then ends them
    /// all with [`end_batch`].
    pub(crate) unsafe fn add<P>(
        &mut self,
        rq: &Request<P>,
        is_error: bool,
        finish: unsafe extern "C" fn(iob: *mut c_void),
    ) -> bool {
        // SAFETY: A live request owned by the driver, and a live batch.
        unsafe {
            nvme_rs_add_to_batch(
                rq.as_raw().cast(),
                core::ptr::from_mut(&mut self.raw).cast(),
                is_error,
                finish,
            )
        }
    }

    /// Runs the batch's completion (`finish` of [`CompletionBatch::add`]), if it holds requests.
    pub(crate) fn complete(mut self) {
        if self.raw.req_list.head.is_null() {
            return;
        }
        if let Some(complete) = self.raw.complete {
            // SAFETY: The callback given with the requests, on the batch they were added to.
            unsafe { complete(&mut self.raw) };
        }
    }
}

/// Calls `f` on every request of a batch, then ends them all successfully.
///
/// # Safety
///
/// `iob` is the batch handed to a completion callback given to [`CompletionBatch::add`], whose
/// requests carry a `P`.
pub(crate) unsafe fn end_batch<P>(iob: *mut c_void, mut f: impl FnMut(&Request<P>)) {
    let iob = iob.cast::<bindings::io_comp_batch>();
    // SAFETY: A live batch (safety requirement); its requests are linked through `rq_next`.
    let mut rq = unsafe { (*iob).req_list.head };
    while !rq.is_null() {
        // SAFETY: A live request of the batch, which links it through the `rq_next` member of its
        // list union; `f` does not unlink it.
        let next = unsafe { (*rq).__bindgen_anon_1.rq_next };
        // SAFETY: As above.
        f(unsafe { Request::<P>::from_raw(rq) });
        rq = next;
    }
    // SAFETY: A live batch of requests the driver is done with.
    unsafe { bindings::blk_mq_end_request_batch(iob) };
}

// `Piece::address` finds data through the linear map, which holds every page only without highmem.
#[cfg(CONFIG_HIGHMEM)]
compile_error!("nvme_rs needs a kernel without CONFIG_HIGHMEM");

/// A piece of a request's data: `len` bytes from `offset` into `page` and, for a multi-page vector,
/// the pages that follow it.
#[derive(Clone, Copy)]
pub(crate) struct Piece {
    pub(crate) page: *mut bindings::page,
    pub(crate) offset: usize,
    pub(crate) len: usize,
}

impl Piece {
    /// The CPU address of the first byte, to find pieces that follow each other in memory.
    pub(crate) fn address(&self) -> *mut u8 {
        // SAFETY: A page of a request's data (`DataPieces`). Without highmem (64-bit),
        // `page_address` is the page's address in the linear map, where a vector's pages follow
        // each other, as `bvec_virt` assumes too.
        let page = unsafe { nvme_rs_page_address(self.page.cast()) }.cast::<u8>();
        page.wrapping_add(self.offset)
    }
}

/// The pieces of a request's data ([`Request::data`]), in order.
///
/// # Invariants
///
/// `bio` is null (with nothing left in `iter`), or a live bio of the request, which the driver
/// holds and which keeps its bios and their pages until it ends; `iter` is what is left of `bio`'s
/// vectors, which are at `vecs`, or, for a bio without data pages, `vecs` is null.
pub(crate) struct DataPieces<'r> {
    bio: *mut bindings::bio,
    vecs: *const bindings::bio_vec,
    iter: bindings::bvec_iter,
    _request: PhantomData<&'r ()>,
}

/// The ranges of a request's bios, from [`Request::bio_ranges`].
///
/// # Invariants
///
/// `bio` is null or a live bio of a request that lives for `'r`.
pub(crate) struct BioRanges<'r> {
    bio: *mut bindings::bio,
    _request: PhantomData<&'r ()>,
}

impl Iterator for BioRanges<'_> {
    /// First sector and bytes.
    type Item = (u64, u32);

    fn next(&mut self) -> Option<Self::Item> {
        if self.bio.is_null() {
            return None;
        }
        // SAFETY: A live bio of the request (type invariant); it links the next one, null after
        // the last.
        let (iter, next) = unsafe { ((*self.bio).bi_iter, (*self.bio).bi_next) };
        // INVARIANT: The request's next bio, or null.
        self.bio = next;
        Some((iter.bi_sector, iter.bi_size))
    }
}

/// The vectors of `bio` and an iterator over all of its data; nothing for a null `bio`.
///
/// # Safety
///
/// `bio` is null or a live bio.
unsafe fn bio_vectors(bio: *mut bindings::bio) -> (*const bindings::bio_vec, bindings::bvec_iter) {
    if bio.is_null() {
        return (core::ptr::null(), Default::default());
    }
    // SAFETY: A live bio (safety requirement), read without making a reference to it.
    unsafe { ((*bio).bi_io_vec, (*bio).bi_iter) }
}

impl Iterator for DataPieces<'_> {
    type Item = Piece;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        while self.iter.bi_size == 0 {
            if self.bio.is_null() {
                return None;
            }
            // SAFETY: `bio` is a live bio of the request (type invariant); it links the next one,
            // null after the last.
            let next = unsafe { (*self.bio).bi_next };
            // SAFETY: `next` is null or a live bio.
            let (vecs, iter) = unsafe { bio_vectors(next) };
            // INVARIANT: The next bio, all of it left, or nothing.
            self.bio = next;
            self.vecs = vecs;
            self.iter = iter;
        }
        // A bio without data pages (discard, write zeroes) has a size but no vectors.
        if self.vecs.is_null() {
            return None;
        }
        let (size, index, done) = (self.iter.bi_size, self.iter.bi_idx, bi_offset!(self.iter));
        // SAFETY: Bytes are left and there are vectors, so vector `bi_idx` exists (type invariant).
        let vec = unsafe { *self.vecs.add(index as usize) };
        // A vector that does not hold what the iterator says ends the walk; the caller finds fewer
        // bytes than the request has.
        let len = vec
            .bv_len
            .checked_sub(done)
            .filter(|&len| len > 0)?
            .min(size);
        self.iter.bi_size = size - len;
        self.iter.bi_idx = index + 1;
        bi_offset!(self.iter) = 0;
        Some(Piece {
            page: vec.bv_page,
            offset: (vec.bv_offset + done) as usize,
            len: len as usize,
        })
    }
}

/// The parameters of a tag set.
pub(crate) struct TagSetConfig {
    pub(crate) ops: &'static bindings::blk_mq_ops,
    pub(crate) nr_hw_queues: u32,
    pub(crate) queue_depth: u32,
    pub(crate) cmd_size: u32,
    /// Passed to `init_hctx`.
    pub(crate) driver_data: *mut c_void,
    /// Request timeout in jiffies; 0 for blk-mq's default.
    pub(crate) timeout: u32,
}

/// A `struct blk_mq_tag_set`, allocated.
///
/// # Invariants
///
/// `raw` was set up by `blk_mq_alloc_tag_set` and is freed on drop; the box never moves its
/// contents, so the C lists inside stay valid.
pub(crate) struct TagSet {
    raw: KBox<Opaque<bindings::blk_mq_tag_set>>,
}

// SAFETY: The C tag set is used from any CPU; blk-mq locks it internally.
unsafe impl Send for TagSet {}
// SAFETY: As above.
unsafe impl Sync for TagSet {}

impl TagSet {
    /// Allocates the tags and requests (which runs `init_request` on each).
    pub(crate) fn new(config: TagSetConfig) -> Result<Self> {
        // SAFETY: All-zeroes is a valid `blk_mq_tag_set` before `blk_mq_alloc_tag_set`.
        let mut set: bindings::blk_mq_tag_set = unsafe { core::mem::zeroed() };
        set.ops = config.ops;
        set.nr_hw_queues = config.nr_hw_queues;
        set.queue_depth = config.queue_depth;
        set.cmd_size = config.cmd_size;
        set.numa_node = bindings::NUMA_NO_NODE;
        set.timeout = config.timeout;
        set.nr_maps = 1;
        set.driver_data = config.driver_data;
        let raw = KBox::new(Opaque::new(set), GFP_KERNEL)?;
        // SAFETY: `raw` holds a filled-in tag set at an address that does not change.
        to_result(unsafe { bindings::blk_mq_alloc_tag_set(raw.get()) })?;
        // INVARIANT: allocated above.
        Ok(Self { raw })
    }

    /// The C tag set.
    pub(crate) fn as_raw(&self) -> *mut bindings::blk_mq_tag_set {
        self.raw.get()
    }

    /// The hardware queue that blk-mq maps `cpu` to (default map).
    pub(crate) fn hw_queue_of_cpu(&self, cpu: u32) -> Option<u32> {
        if cpu >= kernel::cpu::nr_cpu_ids() {
            return None;
        }
        // SAFETY: An allocated set has a default map with an entry for every possible CPU id.
        Some(unsafe { *(*self.raw.get()).map[0].mq_map.add(cpu as usize) })
    }
}

/// Calls `f` on every request of `set` that is in flight.
///
/// # Safety
///
/// `set` is a live tag set whose requests carry a `P`.
pub(crate) unsafe fn for_each_busy_raw<P, F: FnMut(&Request<P>)>(
    set: *mut bindings::blk_mq_tag_set,
    mut f: F,
) {
    /// # Safety
    ///
    /// `data` is an `&mut F` and `rq` a live request of the set, as `blk_mq_tagset_busy_iter`
    /// passes them.
    unsafe extern "C" fn visit<P, F: FnMut(&Request<P>)>(
        rq: *mut bindings::request,
        data: *mut c_void,
    ) -> bool {
        // SAFETY: `data` is the `&mut F` below, for the duration of the iteration.
        let f = unsafe { &mut *data.cast::<F>() };
        // SAFETY: blk-mq hands over a live request of this set.
        f(unsafe { Request::from_raw(rq) });
        true
    }
    // SAFETY: A live set (safety requirement); `visit` matches `busy_tag_iter_fn` and `f` outlives
    // the call.
    unsafe {
        bindings::blk_mq_tagset_busy_iter(
            set,
            Some(visit::<P, F>),
            core::ptr::from_mut(&mut f).cast(),
        )
    };
}

/// Runs `f` while no queue of `set` dispatches to the driver: `blk_mq_quiesce_tagset` waits for
/// the `queue_rq` calls running now (an RCU grace period), none starts until `f` returns, and the
/// requests held back meanwhile are dispatched afterwards. Sleeps.
///
/// # Safety
///
/// `set` is a live tag set. Not called from a dispatch (`queue_rq`, `commit_rqs`): the wait
/// would be for the caller itself.
pub(crate) unsafe fn with_dispatch_stopped<R>(
    set: *mut bindings::blk_mq_tag_set,
    f: impl FnOnce() -> R,
) -> R {
    // SAFETY: A live set (safety requirement).
    unsafe { bindings::blk_mq_quiesce_tagset(set) };
    let result = f();
    // SAFETY: A live set, quiesced above.
    unsafe { bindings::blk_mq_unquiesce_tagset(set) };
    result
}

impl Drop for TagSet {
    fn drop(&mut self) {
        // SAFETY: Allocated by `blk_mq_alloc_tag_set` (type invariant); every disk using it is
        // gone.
        unsafe { bindings::blk_mq_free_tag_set(self.raw.get()) };
    }
}

/// Looks up the request with `tag` among a hardware queue's tags.
///
/// # Safety
///
/// `tags` are the live tags of a hardware queue of a tag set whose requests carry a `P`.
pub(crate) unsafe fn tag_to_rq<'r, P>(
    tags: *mut bindings::blk_mq_tags,
    tag: u16,
) -> Option<&'r Request<P>> {
    // SAFETY: By the safety requirement; the C function checks `tag` against the depth.
    let rq =
        unsafe { nvme_rs_tag_to_rq(tags.cast(), c_uint::from(tag)) }.cast::<bindings::request>();
    // SAFETY: A request of these tags, live while the tag set is.
    (!rq.is_null()).then(|| unsafe { Request::from_raw(rq) })
}

/// The parameters of a disk.
pub(crate) struct DiskConfig<'n> {
    pub(crate) name: &'n CStr,
    pub(crate) logical_block_size: u32,
    pub(crate) capacity_sectors: u64,
    pub(crate) max_hw_sectors: u32,
    pub(crate) max_segments: u16,
    /// PRP-style devices: segments may only start or end on this boundary (mask).
    pub(crate) virt_boundary_mask: u64,
    /// A volatile write cache: flushes and FUA writes reach the driver.
    pub(crate) write_cache: bool,
    /// Largest discard in sectors; 0 for none.
    pub(crate) max_discard_sectors: u32,
    /// The discard size and alignment the device prefers, in bytes.
    pub(crate) discard_granularity: u32,
    /// The most ranges one discard may carry.
    pub(crate) max_discard_segments: u16,
    /// Largest write zeroes in sectors; 0 for none.
    pub(crate) max_write_zeroes_sectors: u32,
    /// The largest write the disk keeps whole (at least a block), and the boundary such a write
    /// must not cross (0 for none), in bytes; `None` for no atomic writes.
    pub(crate) atomic_write: Option<(u32, u32)>,
}

impl DiskConfig<'_> {
    /// Sets the limits this configuration decides in `lim`, leaving the others as they are.
    fn apply_to(&self, lim: &mut bindings::queue_limits) {
        lim.logical_block_size = self.logical_block_size;
        lim.physical_block_size = self.logical_block_size;
        // The block layer's defaults, from the block size: it only raises what it finds (after a
        // format to smaller blocks, the old size would stay).
        lim.io_min = 0;
        lim.io_opt = 0;
        lim.max_hw_sectors = self.max_hw_sectors;
        lim.max_segments = self.max_segments;
        lim.virt_boundary_mask = self.virt_boundary_mask as kernel::ffi::c_ulong;
        // Segments of any size, as in the C driver (the default would cap them at 64 KiB where
        // there is no virtual boundary).
        lim.max_segment_size = u32::MAX;
        lim.dma_alignment = 3;
        if self.write_cache {
            lim.features |= BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA;
        }
        lim.max_write_zeroes_sectors = self.max_write_zeroes_sectors;
        if let Some((max, boundary)) = self.atomic_write {
            lim.atomic_write_hw_max = max;
            lim.atomic_write_hw_boundary = boundary;
            lim.atomic_write_hw_unit_min = self.logical_block_size;
            // The largest power of two that fits. Not `1 << max.ilog2()`: with rustc 1.85 (Debian's
            // 7.3), `ilog2` panics through a function objtool does not know never returns.
            lim.atomic_write_hw_unit_max = 1 << (u32::BITS - 1 - max.leading_zeros());
            lim.features |= BLK_FEAT_ATOMIC_WRITES;
        } else {
            lim.atomic_write_hw_max = 0;
            lim.atomic_write_hw_boundary = 0;
            lim.atomic_write_hw_unit_min = 0;
            lim.atomic_write_hw_unit_max = 0;
            lim.features &= !BLK_FEAT_ATOMIC_WRITES;
        }
        lim.max_hw_discard_sectors = self.max_discard_sectors;
        if self.max_discard_sectors > 0 {
            lim.max_discard_segments = self.max_discard_segments;
            lim.discard_granularity = self.discard_granularity;
        }
    }
}

/// A scope in which the task's allocations do no I/O (`memalloc_noio_save`), as while it holds a
/// queue frozen: reclaim writing to that queue would wait for the task. Ends when dropped, in the
/// task that began it (it is not `Send`).
pub(crate) struct NoIo {
    flags: c_uint,
    _task_bound: PhantomData<*mut ()>,
}

impl NoIo {
    /// Begins the scope.
    pub(crate) fn begin() -> Self {
        // SAFETY: Saves and sets a flag of the current task; restored in `drop`, in this task.
        let flags = unsafe { nvme_rs_noio_save() };
        Self {
            flags,
            _task_bound: PhantomData,
        }
    }
}

impl Drop for NoIo {
    fn drop(&mut self) {
        // SAFETY: What `begin` saved, in the same task (not `Send`), scopes nested in order.
        unsafe { nvme_rs_noio_restore(self.flags) };
    }
}

/// A `struct gendisk` of a tag set, added to the system until dropped.
///
/// # Invariants
///
/// `raw` came from `blk_mq_alloc_disk` and holds a reference; `added` says `device_add_disk`
/// succeeded.
pub(crate) struct Disk {
    raw: NonNull<bindings::gendisk>,
    added: bool,
}

// SAFETY: The C gendisk is reference counted and locked internally.
unsafe impl Send for Disk {}
// SAFETY: As above.
unsafe impl Sync for Disk {}

/// The `BLK_FEAT_WRITE_CACHE` (flushes reach the driver) and `BLK_FEAT_FUA` (FUA writes reach the
/// driver) features; checked in `blk_shim.c`.
const BLK_FEAT_WRITE_CACHE: u32 = 1 << 0;
const BLK_FEAT_FUA: u32 = 1 << 1;
/// `BLK_FEAT_ATOMIC_WRITES`: writes marked atomic (`RWF_ATOMIC`) reach the driver unsplit.
const BLK_FEAT_ATOMIC_WRITES: u32 = 1 << 14;

/// A driver-private request (`REQ_OP_DRV_IN`), allocated on a disk's queue for the driver to fill
/// in and execute, freed on drop.
///
/// # Invariants
///
/// `rq` was allocated by `blk_mq_alloc_request` and is not freed yet.
pub(crate) struct DriverRequest<P> {
    rq: NonNull<bindings::request>,
    _pdu: PhantomData<P>,
}

impl<P> DriverRequest<P> {
    /// Allocates a request on `disk`'s queue, waiting for a tag; `to_device` for one whose data
    /// goes to the device (`REQ_OP_DRV_OUT`).
    pub(crate) fn new(disk: &Disk, to_device: bool) -> Result<Self> {
        let op = if to_device {
            bindings::req_op_REQ_OP_DRV_OUT
        } else {
            bindings::req_op_REQ_OP_DRV_IN
        };
        // SAFETY: The disk's queue is live while the disk is.
        let rq = unsafe { bindings::blk_mq_alloc_request((*disk.raw.as_ptr()).queue, op, 0) };
        // An `ERR_PTR` on failure: the last `MAX_ERRNO` addresses.
        if rq as usize >= 0usize.wrapping_sub(bindings::MAX_ERRNO as usize) {
            return Err(Error::from_errno(rq as isize as i32));
        }
        // INVARIANT: allocated above (not null: an `ERR_PTR` otherwise).
        Ok(Self {
            rq: NonNull::new(rq).ok_or(ENOMEM)?,
            _pdu: PhantomData,
        })
    }

    /// The request, which the driver owns until it executes it.
    pub(crate) fn request(&self) -> &Request<P> {
        // SAFETY: Allocated and not freed (type invariant).
        unsafe { Request::from_raw(self.rq.as_ptr()) }
    }

    /// Sets how long the request may take, in milliseconds; 0 keeps the queue's timeout.
    pub(crate) fn set_timeout_ms(&mut self, ms: u32) {
        if ms > 0 {
            // SAFETY: Not executed yet: the driver's to fill in.
            unsafe {
                (*self.rq.as_ptr()).timeout = kernel::time::msecs_to_jiffies(ms)
                    .try_into()
                    .unwrap_or(u32::MAX)
            };
        }
    }

    /// Sends the request through the queue and waits for it to end.
    pub(crate) fn execute(&mut self) {
        // SAFETY: An allocated request, filled in, not executed yet.
        unsafe { bindings::blk_execute_rq(self.rq.as_ptr(), false) };
    }
}

impl<P> Drop for DriverRequest<P> {
    fn drop(&mut self) {
        // SAFETY: Allocated and not freed (type invariant), and not in flight: `execute` waited.
        unsafe { bindings::blk_mq_free_request(self.rq.as_ptr()) };
    }
}

impl Disk {
    /// Allocates a disk with its request queue on `set`; `queuedata` is what the queue's requests
    /// carry (see [`Request::queue_data`]), `private_data` what the disk's operations get
    /// (`blk_shim.c`: the namespace's handle).
    ///
    /// # Safety
    ///
    /// `queuedata` stays valid until the disk is dropped, and so does `private_data`, which the
    /// operations may keep longer (an open disk) by their own means.
    pub(crate) unsafe fn new(
        set: &TagSet,
        config: &DiskConfig<'_>,
        queuedata: *mut c_void,
        private_data: *mut c_void,
    ) -> Result<Self> {
        // SAFETY: All-zeroes is blk-mq's "use the defaults" for every limit.
        let mut lim: bindings::queue_limits = unsafe { core::mem::zeroed() };
        config.apply_to(&mut lim);
        // SAFETY: A live tag set; `lim` is read during the call only.
        let raw = unsafe {
            nvme_rs_alloc_disk(
                set.as_raw().cast(),
                core::ptr::from_mut(&mut lim).cast(),
                queuedata,
            )
        }
        .cast::<bindings::gendisk>();
        let raw = NonNull::new(kernel::error::from_err_ptr(raw)?).ok_or(ENOMEM)?;
        // SAFETY: A fresh disk that only this function uses so far.
        unsafe {
            let disk = raw.as_ptr();
            let disk_name = &mut (*disk).disk_name;
            let name = config.name.to_bytes_with_nul();
            let len = name.len().min(disk_name.len());
            for (dst, src) in disk_name[..len].iter_mut().zip(name) {
                *dst = *src as kernel::ffi::c_char;
            }
            disk_name[len - 1] = 0;
            (*disk).fops = nvme_rs_fops().cast();
            (*disk).private_data = private_data;
            bindings::set_capacity(disk, config.capacity_sectors);
        }
        // INVARIANT: allocated above, not added yet.
        Ok(Self { raw, added: false })
    }

    /// Starts freezing the disk's queue: no new request enters it until [`Disk::unfreeze`]. For
    /// system sleep, whose callbacks freeze and unfreeze in different contexts (C's
    /// `nvme_start_freeze`).
    pub(crate) fn start_freeze(&self) {
        // SAFETY: A live disk's queue.
        unsafe { bindings::blk_freeze_queue_start_non_owner((*self.raw.as_ptr()).queue) };
    }

    /// Waits at most `timeout` jiffies for the requests in the queue to end, after
    /// [`Disk::start_freeze`]; returns whether they did.
    pub(crate) fn wait_frozen(&self, timeout: kernel::ffi::c_ulong) -> bool {
        // SAFETY: A live disk's queue, being frozen.
        unsafe {
            bindings::blk_mq_freeze_queue_wait_timeout((*self.raw.as_ptr()).queue, timeout) > 0
        }
    }

    /// Lets requests into the queue again, after [`Disk::start_freeze`].
    pub(crate) fn unfreeze(&self) {
        // SAFETY: A live disk's queue, frozen by `start_freeze`.
        unsafe { bindings::blk_mq_unfreeze_queue_non_owner((*self.raw.as_ptr()).queue) };
    }

    /// Changes the disk's limits and capacity to `config`'s (its name aside), as a namespace's
    /// format changed: the block layer checks them, and announces a new size.
    pub(crate) fn set_limits(&self, config: &DiskConfig<'_>) -> Result {
        // SAFETY: A live disk's queue. `start_update` takes the queue's limits lock, which
        // `queue_limits_commit_update` releases, whether it fails or not.
        to_result(unsafe {
            let queue = (*self.raw.as_ptr()).queue;
            let mut lim = nvme_rs_limits_start_update(queue.cast());
            config.apply_to(&mut lim);
            bindings::queue_limits_commit_update(queue, &mut lim)
        })?;
        self.set_capacity(config.capacity_sectors);
        Ok(())
    }

    /// Sets the disk's capacity, and tells user space if it changed.
    pub(crate) fn set_capacity(&self, sectors: u64) {
        // SAFETY: A live disk.
        unsafe { bindings::set_capacity_and_notify(self.raw.as_ptr(), sectors) };
    }

    /// Makes the disk visible (`/dev/<name>`), with `parent` as its device, and its sysfs
    /// attributes (`nsid`, `wwid`: the queue data must be a namespace).
    pub(crate) fn add(&mut self, parent: &kernel::device::Device) -> Result {
        let parent: *mut bindings::device = core::ptr::from_ref(parent).cast_mut().cast();
        // SAFETY: A live disk not added yet, a live parent device, static attribute groups.
        to_result(unsafe {
            bindings::device_add_disk(
                parent,
                self.raw.as_ptr(),
                nvme_rs_disk_attr_groups().cast_mut().cast(),
            )
        })?;
        self.added = true;
        Ok(())
    }
}

impl Drop for Disk {
    fn drop(&mut self) {
        // SAFETY: A live disk (type invariant): removed if it was added, then our reference put.
        unsafe {
            if self.added {
                bindings::del_gendisk(self.raw.as_ptr());
            }
            bindings::put_disk(self.raw.as_ptr());
        }
    }
}
