// SPDX-License-Identifier: GPL-2.0

//! Allocation flags ([`Gfp`]) and DMA attributes ([`Attrs`]).

use kernel::bindings;
use kernel::ffi::c_ulong;

/// Memory allocation flags for the DMA API (`gfp_t`), from the kernel's own constants.
///
/// The kernel crate's `Flags` does not expose its raw value to drivers, hence this type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gfp(bindings::gfp_t);

impl Gfp {
    /// `GFP_KERNEL`: may sleep.
    pub(crate) const KERNEL: Gfp = Gfp(bindings::GFP_KERNEL);
    /// `GFP_ATOMIC`: may not sleep, may use reserves.
    pub(crate) const ATOMIC: Gfp = Gfp(bindings::GFP_ATOMIC);
    /// `GFP_NOWAIT`: may not sleep.
    pub(crate) const NOWAIT: Gfp = Gfp(bindings::GFP_NOWAIT);
    /// `__GFP_NOWARN`: an allocation failure is expected and handled; do not warn.
    pub(crate) const NOWARN: Gfp = Gfp(bindings::__GFP_NOWARN);
    /// `__GFP_ZERO`: zeroed memory; the allocations of this module that promise it add it.
    pub(super) const ZERO: Gfp = Gfp(bindings::__GFP_ZERO);

    /// The raw `gfp_t`.
    pub(crate) const fn bits(self) -> bindings::gfp_t {
        self.0
    }
}

impl core::ops::BitOr for Gfp {
    type Output = Gfp;
    fn bitor(self, rhs: Gfp) -> Gfp {
        Gfp(self.0 | rhs.0)
    }
}

/// A set of `DMA_ATTR_*` attributes, combined with `|`, `&` and `!`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Attrs(c_ulong);

macro_rules! dma_attrs {
    ($($(#[$doc:meta])* $name:ident = $c:ident;)*) => {
        impl Attrs {
            $($(#[$doc])* pub(crate) const $name: Attrs = Attrs(bindings::$c as c_ulong);)*
            /// Every attribute this wrapper knows.
            pub(crate) const ALL: Attrs = Attrs(0 $(| bindings::$c as c_ulong)*);
        }
    };
}

dma_attrs! {
    /// `DMA_ATTR_WEAK_ORDERING`: reads and writes to the mapping may be weakly ordered.
    WEAK_ORDERING = DMA_ATTR_WEAK_ORDERING;
    /// `DMA_ATTR_WRITE_COMBINE`: writes to the mapping may be buffered.
    WRITE_COMBINE = DMA_ATTR_WRITE_COMBINE;
    /// `DMA_ATTR_NO_KERNEL_MAPPING`: no kernel virtual mapping; not allowed for [`Coherent`].
    NO_KERNEL_MAPPING = DMA_ATTR_NO_KERNEL_MAPPING;
    /// `DMA_ATTR_SKIP_CPU_SYNC`: map or unmap without cache maintenance.
    SKIP_CPU_SYNC = DMA_ATTR_SKIP_CPU_SYNC;
    /// `DMA_ATTR_FORCE_CONTIGUOUS`: physically contiguous memory.
    FORCE_CONTIGUOUS = DMA_ATTR_FORCE_CONTIGUOUS;
    /// `DMA_ATTR_ALLOC_SINGLE_PAGES`: build the allocation from single pages.
    ALLOC_SINGLE_PAGES = DMA_ATTR_ALLOC_SINGLE_PAGES;
    /// `DMA_ATTR_NO_WARN`: no warning on allocation failure.
    NO_WARN = DMA_ATTR_NO_WARN;
    /// `DMA_ATTR_PRIVILEGED`: accessible to privileged device accesses only.
    PRIVILEGED = DMA_ATTR_PRIVILEGED;
    /// `DMA_ATTR_MMIO`: the physical address is MMIO, not memory.
    MMIO = DMA_ATTR_MMIO;
    /// `DMA_ATTR_DEBUGGING_IGNORE_CACHELINES`: DMA-API debugging ignores cache-line overlaps.
    DEBUGGING_IGNORE_CACHELINES = DMA_ATTR_DEBUGGING_IGNORE_CACHELINES;
    /// `DMA_ATTR_REQUIRE_COHERENT`: fail rather than bounce or sync.
    REQUIRE_COHERENT = DMA_ATTR_REQUIRE_COHERENT;
    /// `DMA_ATTR_CC_SHARED`: memory shared with the host in a confidential guest.
    CC_SHARED = DMA_ATTR_CC_SHARED;
}

impl Attrs {
    /// No attribute.
    pub(crate) const NONE: Attrs = Attrs(0);

    /// The raw bits, as the C API takes them.
    pub(crate) const fn bits(self) -> c_ulong {
        self.0
    }

    /// Whether every attribute of `other` is in `self`.
    pub(crate) const fn contains(self, other: Attrs) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether any attribute of `other` is in `self`.
    pub(crate) const fn intersects(self, other: Attrs) -> bool {
        self.0 & other.0 != 0
    }

    /// What [`Mapping`], [`Streaming`] and [`SgTable::map`] refuse: [`Attrs::MMIO`], as they map
    /// memory, and [`Attrs::CC_SHARED`], which the DMA API allows only for memory made shared with
    /// `set_memory_decrypted()` first, and nothing here does that.
    pub(super) const REFUSED_BY_MAPPINGS: Attrs = Attrs(Attrs::MMIO.0 | Attrs::CC_SHARED.0);
}

impl core::ops::BitOr for Attrs {
    type Output = Attrs;
    fn bitor(self, rhs: Attrs) -> Attrs {
        Attrs(self.0 | rhs.0)
    }
}

impl core::ops::BitAnd for Attrs {
    type Output = Attrs;
    fn bitand(self, rhs: Attrs) -> Attrs {
        Attrs(self.0 & rhs.0)
    }
}

impl core::ops::Not for Attrs {
    type Output = Attrs;
    /// The attributes this wrapper knows that are not in `self`.
    fn not(self) -> Attrs {
        Attrs(!self.0 & Attrs::ALL.0)
    }
}
