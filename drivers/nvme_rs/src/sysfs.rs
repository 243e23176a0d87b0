// SPDX-License-Identifier: GPL-2.0

//! What the driver's sysfs attributes show: a line of text in the page sysfs hands a show.

use core::fmt::Write;

use crate::regs::PAGE_SIZE;

/// Writes `text`, up to its first NUL, and a newline to `buf`; returns the bytes written (a page
/// at most), as a show returns them.
///
/// # Safety
///
/// `buf` is the page sysfs hands a show.
pub(crate) unsafe fn show_bytes(buf: *mut u8, text: &[u8]) -> isize {
    let text = text.split(|&b| b == 0).next().unwrap_or_default();
    let len = text.len().min(PAGE_SIZE - 1);
    // SAFETY: `buf` is a page (safety requirement), `len` and the newline fit in it.
    unsafe {
        core::ptr::copy_nonoverlapping(text.as_ptr(), buf, len);
        *buf.add(len) = b'\n';
    }
    len as isize + 1
}

/// Writes `value` in decimal and a newline to `buf`, as [`show_bytes`].
///
/// # Safety
///
/// As for [`show_bytes`].
pub(crate) unsafe fn show_decimal(buf: *mut u8, value: u32) -> isize {
    let mut digits = Digits([0; 10], 0);
    // Ten digits hold any `u32`.
    let _ = write!(digits, "{value}");
    // SAFETY: By the function's safety requirement.
    unsafe { show_bytes(buf, &digits.0[..digits.1]) }
}

/// Up to ten digits, and how many there are.
struct Digits([u8; 10], usize);

impl Write for Digits {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.1 + s.len();
        self.0
            .get_mut(self.1..end)
            .ok_or(core::fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.1 = end;
        Ok(())
    }
}
