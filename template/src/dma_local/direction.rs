// SPDX-License-Identifier: GPL-2.0

//! The direction of a streaming mapping, at run time ([`Direction`]) and as types ([`dir`]).

use kernel::bindings;

/// The direction of a streaming mapping, chosen at run time (for [`Mapping`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// The device reads the buffer.
    ToDevice,
    /// The device writes the buffer.
    FromDevice,
    /// The device reads and writes the buffer.
    Bidirectional,
}

impl Direction {
    pub(super) fn raw(self) -> bindings::dma_data_direction {
        match self {
            Direction::ToDevice => dma_data_direction::DMA_TO_DEVICE,
            Direction::FromDevice => dma_data_direction::DMA_FROM_DEVICE,
            Direction::Bidirectional => dma_data_direction::DMA_BIDIRECTIONAL,
        }
    }
}

/// The values of C's `enum dma_data_direction`: the newtype's constants.
#[cfg(not(kernel_before_7_3))]
use bindings::dma_data_direction;

/// The values of C's `enum dma_data_direction`, which bindgen made plain constants before 7.3 (the
/// cfg comes from `scripts/kernel-cfg.mk`, which a driver's Kbuild includes).
#[cfg(kernel_before_7_3)]
mod dma_data_direction {
    pub(super) use kernel::bindings::{
        dma_data_direction_DMA_BIDIRECTIONAL as DMA_BIDIRECTIONAL,
        dma_data_direction_DMA_FROM_DEVICE as DMA_FROM_DEVICE,
        dma_data_direction_DMA_TO_DEVICE as DMA_TO_DEVICE,
    };
}

/// Directions as types, for the buffers this module owns ([`Streaming`], [`NonCoherent`]): what
/// the CPU may do with the buffer between the device's turns follows from the type.
pub(crate) mod dir {
    use super::Direction;

    /// The device reads the buffer; the CPU writes it.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct ToDevice;
    /// The device writes the buffer; the CPU only reads it. A bounce buffer (swiotlb) copies
    /// nothing towards the device in this direction, and copies the device's data over the CPU's
    /// buffer at unmap: a CPU write would be lost, so none compiles.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct FromDevice;
    /// The device and the CPU both read and write the buffer, in turns.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Bidirectional;

    mod sealed {
        pub(crate) trait Sealed {}
    }

    /// A direction type. Sealed: only the three above.
    pub(crate) trait DataDirection: sealed::Sealed + Copy {
        /// The direction's value.
        const DIRECTION: Direction;
    }

    /// The directions in which the CPU writes the buffer between the device's turns.
    pub(crate) trait CpuWrites: DataDirection {}

    impl sealed::Sealed for ToDevice {}
    impl sealed::Sealed for FromDevice {}
    impl sealed::Sealed for Bidirectional {}
    impl DataDirection for ToDevice {
        const DIRECTION: Direction = Direction::ToDevice;
    }
    impl DataDirection for FromDevice {
        const DIRECTION: Direction = Direction::FromDevice;
    }
    impl DataDirection for Bidirectional {
        const DIRECTION: Direction = Direction::Bidirectional;
    }
    impl CpuWrites for ToDevice {}
    impl CpuWrites for Bidirectional {}
}
