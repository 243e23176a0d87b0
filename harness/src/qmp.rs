//! A minimal client of QEMU's machine protocol (QMP) over the VM's unix socket.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

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
        let greeting = qmp.read_message()?;
        if greeting.get("QMP").is_none() {
            return Err(err!("{}: not a QMP greeting: {greeting}", path.display()));
        }
        qmp.execute("qmp_capabilities", json!({}))?;
        Ok(qmp)
    }

    /// Runs `command` with `arguments` (a JSON object) and returns its `return` value.
    /// Asynchronous events that arrive meanwhile are skipped.
    pub fn execute(&mut self, command: &str, arguments: Value) -> Result<Value> {
        let request = json!({ "execute": command, "arguments": arguments });
        writeln!(self.writer, "{request}")?;
        loop {
            if let Some(value) = answer(command, self.read_message()?)? {
                return Ok(value);
            }
        }
    }

    /// `set_link`: takes the link of netdev `name` (e.g. `net0`) down or up.
    pub fn set_link(&mut self, name: &str, up: bool) -> Result<()> {
        self.execute("set_link", json!({ "name": name, "up": up }))
            .map(drop)
    }

    /// `device_del`: asks the guest to release device `id` (e.g. `nvme1`).
    pub fn device_del(&mut self, id: &str) -> Result<()> {
        self.execute("device_del", json!({ "id": id })).map(drop)
    }

    /// `block_set_io_throttle`: limits guest device `id` (e.g. `nvme0ns1`) to `bytes_per_second`
    /// of I/O, or lifts the limit with 0.
    pub fn throttle(&mut self, id: &str, bytes_per_second: u64) -> Result<()> {
        let limits = json!({
            "id": id, "bps": bytes_per_second, "bps_rd": 0, "bps_wr": 0,
            "iops": 0, "iops_rd": 0, "iops_wr": 0,
        });
        self.execute("block_set_io_throttle", limits).map(drop)
    }

    /// `human-monitor-command`: runs an HMP command line (e.g. `qemu-io`) and returns the text it
    /// answers with. HMP reports most failures in that text, not as a QMP error.
    pub fn human_monitor(&mut self, command_line: &str) -> Result<String> {
        let command = "human-monitor-command";
        match self.execute(command, json!({ "command-line": command_line }))? {
            Value::String(text) => Ok(text),
            other => Err(err!("QMP {command}: not text: {other}")),
        }
    }

    fn read_message(&mut self) -> Result<Value> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(err!("QMP connection closed"));
        }
        serde_json::from_str(&line).map_err(|e| err!("QMP sent something not JSON ({e}): {line}"))
    }
}

/// What `message` says of `command`: its return value, its error, or nothing (an event).
fn answer(command: &str, mut message: Value) -> Result<Option<Value>> {
    if let Some(value) = message.get_mut("return") {
        return Ok(Some(value.take()));
    }
    if let Some(error) = message.get("error") {
        let class = error["class"].as_str().unwrap_or("?");
        let desc = error["desc"].as_str().unwrap_or("?");
        return Err(err!("QMP {command} failed: {class}: {desc}"));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(line: &str) -> Value {
        serde_json::from_str(line).unwrap()
    }

    #[test]
    fn answers_are_returns_errors_or_events() {
        let empty = answer("set_link", parsed(r#"{"return": {}}"#)).unwrap();
        assert_eq!(empty, Some(json!({})));
        let hmp = parsed(r#"{"return": "Device 'x' not found\r\n"}"#);
        assert_eq!(
            answer("human-monitor-command", hmp).unwrap(),
            Some(json!("Device 'x' not found\r\n"))
        );
        let event = parsed(
            r#"{"timestamp": {"seconds": 1, "microseconds": 2}, "event": "NIC_RX_FILTER_CHANGED"}"#,
        );
        assert_eq!(answer("device_del", event).unwrap(), None);
        let error =
            parsed(r#"{"error": {"class": "DeviceNotFound", "desc": "Device 'nvme9' not found"}}"#);
        let message = answer("device_del", error).unwrap_err().to_string();
        assert_eq!(
            message,
            "QMP device_del failed: DeviceNotFound: Device 'nvme9' not found"
        );
    }
}
