//! Reads the KTAP that a guest writes on its result port.
//!
//! The guest's `/init` writes `KTAP version 1`, one `ok N name` / `not ok N name # reason` line a
//! check, `# key=value` diagnostics, and at the end the plan `1..N` followed by `# guest: done`. A
//! stream without that ending belongs to a guest that died or ran out of time.

/// One test result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestResult {
    /// Its number in the stream.
    pub number: usize,
    /// Its name.
    pub name: String,
    /// Whether it passed.
    pub ok: bool,
    /// The text after `#`, if any (the reason of a failure, or `SKIP`).
    pub directive: Option<String>,
}

/// A parsed KTAP stream.
#[derive(Debug, Clone, Default)]
pub struct Ktap {
    /// Every result, in order.
    pub results: Vec<TestResult>,
    /// The plan's count, once the guest has written it.
    pub plan: Option<usize>,
    /// The text of every `# ...` diagnostic line.
    pub diagnostics: Vec<String>,
    /// Whether the guest wrote its closing `# guest: done`.
    pub finished: bool,
}

impl Ktap {
    /// Parses a stream; lines that are not KTAP are ignored.
    pub fn parse(text: &str) -> Ktap {
        let mut ktap = Ktap::default();
        for line in text.lines().map(str::trim) {
            if let Some(diag) = line.strip_prefix('#') {
                let diag = diag.trim();
                if diag == "guest: done" {
                    ktap.finished = true;
                } else {
                    ktap.diagnostics.push(diag.to_string());
                }
            } else if let Some(count) = line.strip_prefix("1..") {
                ktap.plan = count.trim().parse().ok();
            } else if let Some(result) = parse_result(line) {
                ktap.results.push(result);
            }
        }
        ktap
    }

    /// The result called `name`, if the guest reported one.
    pub fn result(&self, name: &str) -> Option<&TestResult> {
        self.results.iter().find(|r| r.name == name)
    }

    /// The value of the first `# key=value` diagnostic named `key`.
    pub fn diagnostic(&self, key: &str) -> Option<&str> {
        self.diagnostics
            .iter()
            .find_map(|d| d.strip_prefix(key)?.strip_prefix('='))
            .map(str::trim)
    }

    /// The names of the requests (`# request: NAME`) in the stream, in order.
    pub fn requests(&self) -> impl Iterator<Item = &str> {
        self.diagnostics
            .iter()
            .filter_map(|d| d.strip_prefix("request: "))
    }

    /// Whether the stream is complete: finished, with a plan matching the results.
    pub fn complete(&self) -> bool {
        self.finished && self.plan == Some(self.results.len())
    }

    /// Whether the stream is complete and every check passed.
    pub fn passed(&self) -> bool {
        self.complete() && self.results.iter().all(|t| t.ok)
    }
}

fn parse_result(line: &str) -> Option<TestResult> {
    let (ok, rest) = if let Some(rest) = line.strip_prefix("not ok ") {
        (false, rest)
    } else {
        (true, line.strip_prefix("ok ")?)
    };
    let (number, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let number = number.parse().ok()?;
    let (name, directive) = match rest.split_once(" # ") {
        Some((name, d)) => (name, Some(d.trim().to_string())),
        None => (rest, None),
    };
    let name = name.trim().trim_start_matches("- ").to_string();
    Some(TestResult {
        number,
        name,
        ok,
        directive,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_results_plan_and_diagnostics() {
        let k = Ktap::parse(
            "KTAP version 1\nok 1 load\n# sum=0x1234\nnot ok 2 check # exit status 1: no\n1..2\n# guest: done\n",
        );
        assert!(k.complete());
        assert_eq!(k.results.len(), 2);
        assert!(k.results[0].ok);
        assert!(!k.results[1].ok);
        assert_eq!(k.results[1].directive.as_deref(), Some("exit status 1: no"));
        assert_eq!(k.diagnostic("sum"), Some("0x1234"));
    }

    #[test]
    fn a_stream_without_its_end_is_incomplete() {
        let k = Ktap::parse("KTAP version 1\nok 1 load\n");
        assert!(!k.complete());
        let k = Ktap::parse("KTAP version 1\nok 1 load\n1..2\n# guest: done\n");
        assert!(!k.complete(), "plan says 2, one result");
    }

    #[test]
    fn requests_are_listed() {
        let k = Ktap::parse("# request: link-down\nok 1 x\n# request: link-up\n");
        assert_eq!(k.requests().collect::<Vec<_>>(), ["link-down", "link-up"]);
    }
}
