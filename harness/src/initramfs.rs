//! Writes an uncompressed initramfs in the kernel's "newc" cpio format.

use std::io::Write;
use std::path::Path;

use crate::Result;

/// An initramfs under construction: directories, files and symlinks, written in order.
#[derive(Default)]
pub struct Initramfs {
    data: Vec<u8>,
    inode: u32,
}

impl Initramfs {
    /// An empty archive.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a directory (its parents must have been added already).
    pub fn dir(&mut self, path: &str) -> &mut Self {
        self.entry(path, 0o040755, &[]);
        self
    }

    /// Adds a regular file with the given mode bits (e.g. `0o755`).
    pub fn file(&mut self, path: &str, mode: u32, contents: &[u8]) -> &mut Self {
        self.entry(path, 0o100000 | mode, contents);
        self
    }

    /// Adds a file read from the host.
    pub fn host_file(&mut self, path: &str, mode: u32, host: &Path) -> Result<&mut Self> {
        let contents = std::fs::read(host)
            .map_err(|e| crate::err!("cannot read {} for the initramfs: {e}", host.display()))?;
        Ok(self.file(path, mode, &contents))
    }

    /// Writes the archive, with its trailer, to `out`.
    pub fn write_to(mut self, out: &Path) -> Result<()> {
        self.entry("TRAILER!!!", 0, &[]);
        let mut f = std::fs::File::create(out)?;
        f.write_all(&self.data)?;
        Ok(())
    }

    fn entry(&mut self, path: &str, mode: u32, contents: &[u8]) {
        let name = path.trim_start_matches('/');
        self.inode += 1;
        let nlink = if mode & 0o040000 != 0 { 2 } else { 1 };
        let header = format!(
            "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            self.inode,
            mode,
            0, // uid
            0, // gid
            nlink,
            0, // mtime
            contents.len(),
            0, // devmajor
            0, // devminor
            0, // rdevmajor
            0, // rdevminor
            name.len() + 1,
            0, // check
        );
        self.data.extend_from_slice(header.as_bytes());
        self.data.extend_from_slice(name.as_bytes());
        self.data.push(0);
        self.pad();
        self.data.extend_from_slice(contents);
        self.pad();
    }

    /// newc aligns headers and file data to 4 bytes.
    fn pad(&mut self) {
        while !self.data.len().is_multiple_of(4) {
            self.data.push(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_aligned_and_named() {
        let mut ramfs = Initramfs::new();
        ramfs.dir("bin").file("/bin/x", 0o755, b"abc");
        let mut n = 0;
        let data = &ramfs.data;
        let mut pos = 0;
        let mut names = Vec::new();
        while pos < data.len() {
            assert_eq!(&data[pos..pos + 6], b"070701");
            let field = |i: usize| {
                let s = std::str::from_utf8(&data[pos + 6 + 8 * i..pos + 14 + 8 * i]).unwrap();
                usize::from_str_radix(s, 16).unwrap()
            };
            let (size, namesize) = (field(6), field(11));
            let name = &data[pos + 110..pos + 110 + namesize - 1];
            names.push(String::from_utf8(name.to_vec()).unwrap());
            pos = (pos + 110 + namesize).next_multiple_of(4);
            pos = (pos + size).next_multiple_of(4);
            n += 1;
        }
        assert_eq!(n, 2);
        assert_eq!(names, ["bin", "bin/x"]);
    }
}
