//! The benchmarks' command line: `[--instructions | --count KIND] [FLAG...] [NUMBER...]`, the
//! options in any order.

use crate::Counted;

/// A benchmark's command line, parsed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct BenchArgs {
    /// What to count instead of timing (`--instructions`, `--count KIND`), if anything.
    pub counted: Option<Counted>,
    /// The benchmark's own flags that were given.
    pub flags: Vec<String>,
    /// The positive whole numbers given, in order (rounds, and so on).
    pub numbers: Vec<u32>,
}

impl BenchArgs {
    /// Parses `args` for a benchmark that knows `flags` and takes up to `numbers` numbers; anything
    /// else is an error.
    pub fn parse(
        args: impl IntoIterator<Item = String>,
        flags: &[&str],
        numbers: usize,
    ) -> Result<BenchArgs, String> {
        let mut args = args.into_iter().peekable();
        let mut parsed = BenchArgs::default();
        while args.peek().is_some() {
            if let Some(what) = Counted::from_args(&mut args)? {
                parsed.counted = Some(what);
            } else if let Some(flag) = args.next_if(|a| flags.contains(&a.as_str())) {
                parsed.flags.push(flag);
            } else {
                let arg = args.next().unwrap_or_default();
                match arg.parse::<u32>() {
                    Ok(n) if n > 0 && parsed.numbers.len() < numbers => parsed.numbers.push(n),
                    _ => return Err(format!("{arg:?}: not an option or a number it takes")),
                }
            }
        }
        Ok(parsed)
    }

    /// The process's arguments parsed as by [`BenchArgs::parse`]; on an error, prints it with
    /// `usage` and exits with status 2.
    pub fn from_env(usage: &str, flags: &[&str], numbers: usize) -> BenchArgs {
        BenchArgs::parse(std::env::args().skip(1), flags, numbers).unwrap_or_else(|e| {
            eprintln!("{e}\nusage: {usage}");
            std::process::exit(2);
        })
    }

    /// Whether `flag` was given.
    pub fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<BenchArgs, String> {
        BenchArgs::parse(args.iter().map(|a| a.to_string()), &["--only"], 2)
    }

    #[test]
    fn options_in_any_order() {
        let a = parse(&["3", "--only", "--count", "mmio", "4"]).unwrap();
        assert_eq!(a.counted, Some(Counted::Mmio));
        assert!(a.has("--only"));
        assert_eq!(a.numbers, [3, 4]);
        assert_eq!(parse(&[]).unwrap(), BenchArgs::default());
    }

    #[test]
    fn anything_else_is_an_error() {
        for bad in [
            &["--other"][..],
            &["x"],
            &["0"],
            &["1", "2", "3"],
            &["--count", "x"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
