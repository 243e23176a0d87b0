//! A minimal client of QEMU's machine protocol (QMP) over the VM's unix socket.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use crate::{err, Result};

/// A QMP session, past capability negotiation.
pub struct Qmp {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Qmp {
    /// Connects to the socket at `path` and enters command mode.
    pub fn connect(path: &Path) -> Result<Qmp> {
        let stream = UnixStream::connect(path)
            .map_err(|e| err!("cannot connect to QMP at {}: {e}", path.display()))?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        let mut qmp = Qmp {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
        };
        let greeting = qmp.read_line()?;
        if !greeting.contains("\"QMP\"") {
            return Err(err!("{}: not a QMP greeting: {greeting}", path.display()));
        }
        qmp.execute("qmp_capabilities", "{}")?;
        Ok(qmp)
    }

    /// Runs `command` with `arguments` (a JSON object) and returns the JSON text of its `return`
    /// value. Asynchronous events that arrive meanwhile are skipped.
    pub fn execute(&mut self, command: &str, arguments: &str) -> Result<String> {
        writeln!(
            self.writer,
            r#"{{"execute":"{command}","arguments":{arguments}}}"#
        )?;
        loop {
            let line = self.read_line()?;
            if let Some(pos) = line.find("\"return\"") {
                return Ok(line[pos + "\"return\"".len()..]
                    .trim_start_matches([' ', ':'])
                    .trim_end()
                    .trim_end_matches('}')
                    .to_string());
            }
            if line.contains("\"error\"") {
                return Err(err!("QMP {command} failed: {line}"));
            }
        }
    }

    /// `set_link`: takes the link of netdev `name` (e.g. `net0`) down or up.
    pub fn set_link(&mut self, name: &str, up: bool) -> Result<()> {
        self.execute("set_link", &format!(r#"{{"name":"{name}","up":{up}}}"#))
            .map(drop)
    }

    /// `device_del`: asks the guest to release device `id` (e.g. `nvme1`).
    pub fn device_del(&mut self, id: &str) -> Result<()> {
        self.execute("device_del", &format!(r#"{{"id":"{id}"}}"#))
            .map(drop)
    }

    /// `block_set_io_throttle`: limits guest device `id` (e.g. `nvme0ns1`) to `bytes_per_second`
    /// of I/O, or lifts the limit with 0.
    pub fn throttle(&mut self, id: &str, bytes_per_second: u64) -> Result<()> {
        self.execute(
            "block_set_io_throttle",
            &format!(
                r#"{{"id":"{id}","bps":{bytes_per_second},"bps_rd":0,"bps_wr":0,"iops":0,"iops_rd":0,"iops_wr":0}}"#
            ),
        )
        .map(drop)
    }

    /// `human-monitor-command`: runs an HMP command line (e.g. `qemu-io`) and returns the text it
    /// answers with. HMP reports most failures in that text, not as a QMP error.
    pub fn human_monitor(&mut self, command_line: &str) -> Result<String> {
        let escaped = command_line.replace('\\', "\\\\").replace('"', "\\\"");
        let answer = self.execute(
            "human-monitor-command",
            &format!(r#"{{"command-line":"{escaped}"}}"#),
        )?;
        Ok(json_string(&answer))
    }

    fn read_line(&mut self) -> Result<String> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(err!("QMP connection closed"));
        }
        Ok(line)
    }
}

/// The text of a JSON string literal (the escapes HMP's answers use; others are kept as they are).
fn json_string(literal: &str) -> String {
    let inner = literal
        .trim()
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(literal);
    let mut text = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            text.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => text.push('\n'),
            Some('r') => text.push('\r'),
            Some('t') => text.push('\t'),
            Some(other @ ('"' | '\\' | '/')) => text.push(other),
            Some(other) => {
                text.push('\\');
                text.push(other);
            }
            None => text.push('\\'),
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::json_string;

    #[test]
    fn json_string_unescapes_what_hmp_answers_with() {
        assert_eq!(json_string(r#""""#), "");
        assert_eq!(
            json_string(r#""Device 'x' not found\r\n""#),
            "Device 'x' not found\r\n"
        );
        assert_eq!(json_string(r#""a \"b\" \\ c""#), r#"a "b" \ c"#);
        assert_eq!(json_string(r#""\u00e9""#), r"\u00e9");
    }
}
